"""``bb_flip``: against DALI 2.4's CPU outputs (bit-identical float32) and hand-made boxes."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineError


@pytest.mark.parametrize("case", ["bb_flip_xywh", "bb_flip_ltrb_hv", "bb_flip_per_sample"])
def test_matches_dali(case: str) -> None:
    got, want = replay(case, fn, types, sf.pipeline_def)
    for g, w in zip(got[0], want[0]):
        assert g.dtype == np.float32 and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_hand_made_boxes() -> None:
    ltrb = np.array([[0.1, 0.2, 0.4, 0.7]], np.float32)
    xywh = np.array([[0.1, 0.2, 0.3, 0.5]], np.float32)
    out = run_arrays([ltrb, xywh], lambda b: fn.bb_flip(b, ltrb=True, vertical=1))[0]
    np.testing.assert_allclose(out[0], [[0.6, 0.3, 0.9, 0.8]], atol=1e-6)
    out = run_arrays([xywh], lambda b: fn.bb_flip(b))[0]
    np.testing.assert_allclose(out[0], [[0.6, 0.2, 0.3, 0.5]], atol=1e-6)
    # flipping twice is the identity (up to float32 rounding)
    out = run_arrays([ltrb], lambda b: fn.bb_flip(fn.bb_flip(b, ltrb=True), ltrb=True))[0]
    np.testing.assert_allclose(out[0], ltrb, atol=1e-7)


def test_keeps_flat_shape_and_empty() -> None:
    flat = np.array([0.1, 0.2, 0.4, 0.7, 0.0, 0.0, 1.0, 1.0], np.float32)
    out = run_arrays([flat, np.zeros((0, 4), np.float32)], lambda b: fn.bb_flip(b, ltrb=True))[0]
    assert out[0].shape == (8,)
    np.testing.assert_allclose(out[0], [0.6, 0.2, 0.9, 0.7, 0.0, 0.0, 1.0, 1.0], atol=1e-6)
    assert out[1].shape == (0, 4)


def test_bad_box_count_names_the_operator() -> None:
    with pytest.raises(PipelineError, match="bb_flip: boxes must have 4 coordinates"):
        run_arrays([np.zeros(5, np.float32)], lambda b: fn.bb_flip(b))


# --- the GPU implementation (the CPU code over cupy; numpy in CI) ---------------------------------
from detection_gpu import check_recorded_on_gpu


@pytest.mark.parametrize("case", ["bb_flip_xywh", "bb_flip_ltrb_hv", "bb_flip_per_sample"])
def test_gpu_matches_cpu_and_dali(kernel_ctx, case: str) -> None:
    check_recorded_on_gpu(kernel_ctx, case)
