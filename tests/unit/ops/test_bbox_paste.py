"""``bbox_paste``: against DALI 2.4's CPU outputs (bit-identical float32) and the paste geometry."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError, PipelineError


@pytest.mark.parametrize("case", ["bbox_paste_xywh", "bbox_paste_ltrb", "bbox_paste_corner", "bbox_paste_per_sample"])
def test_matches_dali(case: str) -> None:
    got, want = replay(case, fn, types, sf.pipeline_def)
    for g, w in zip(got[0], want[0]):
        assert g.dtype == np.float32 and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_boxes_follow_the_pasted_image() -> None:
    # A 100x100 image pasted on a 200x200 canvas at (0.5, 0.5): its top-left pixel lands at (50, 50).
    box = np.array([[0.0, 0.0, 1.0, 1.0], [0.25, 0.5, 0.75, 1.0]], np.float32)
    out = run_arrays([box], lambda b: fn.bbox_paste(b, ratio=2.0, ltrb=True))[0][0]
    np.testing.assert_allclose(out, [[0.25, 0.25, 0.75, 0.75], [0.375, 0.5, 0.625, 0.75]], atol=1e-7)
    # paste at the bottom-right corner: boxes stay inside [0, 1]
    out = run_arrays([box], lambda b: fn.bbox_paste(b, ratio=3.0, paste_x=1.0, paste_y=1.0, ltrb=True))[0][0]
    assert out.max() <= 1.0 and out[0, 0] == pytest.approx(2 / 3)


def test_ratio_below_one_is_refused() -> None:
    with pytest.raises(PipelineDefinitionError, match="ratio must be a finite number >= 1"):
        fn.bbox_paste(fn.external_source([[np.zeros((1, 4), np.float32)]]), ratio=0.5)
    ratios = [np.float32(0.5)]
    with pytest.raises(PipelineError, match="ratio must be a finite number >= 1"):
        run_arrays([np.zeros((1, 4), np.float32)], lambda b, r: fn.bbox_paste(b, ratio=r), r=ratios)
