"""``segmentation.random_mask_pixel``: DALI 2.4's outputs where the draw is fixed, and uniform draws."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError


@pytest.mark.parametrize("case", ["random_mask_pixel_single", "random_mask_pixel_hwc_threshold"])
def test_matches_dali_where_the_draw_is_fixed(case: str) -> None:
    got, want = replay(case, fn, types, sf.pipeline_def)
    for g, w in zip(got[0], want[0]):
        assert g.dtype == w.dtype == np.int64 and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_foreground_pixels_drawn_uniformly() -> None:
    m = np.zeros((6, 7), np.uint8)
    m[1, 2] = m[4, 5] = m[5, 0] = 9
    out = run_arrays([m] * 600, lambda x: fn.segmentation.random_mask_pixel(x, foreground=1))[0]
    picks = [tuple(p.tolist()) for p in out]
    assert set(picks) == {(1, 2), (4, 5), (5, 0)}
    counts = np.array([picks.count(p) for p in set(picks)])
    assert np.all(np.abs(counts - 200) < 4.5 * np.sqrt(600 * (1 / 3) * (2 / 3)))


def test_any_pixel_without_foreground_or_when_empty() -> None:
    m = np.zeros((3, 4), np.int32)
    for kw in ({}, {"foreground": 1}):
        out = run_arrays([m] * 240, lambda x: fn.segmentation.random_mask_pixel(x, **kw))[0]
        assert len({tuple(p.tolist()) for p in out}) == 12


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="threshold and value are mutually exclusive"):
        fn.segmentation.random_mask_pixel(fn.external_source([[np.zeros(2, np.int32)]]), threshold=1.0, value=2)
