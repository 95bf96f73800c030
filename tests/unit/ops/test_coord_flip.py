"""``coord_flip``: against DALI 2.4's CPU outputs (bit-identical float32) and hand-made points."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError, PipelineError


@pytest.mark.parametrize("case", ["coord_flip_x", "coord_flip_xy_center", "coord_flip_yx_layout", "coord_flip_3d"])
def test_matches_dali(case: str) -> None:
    got, want = replay(case, fn, types, sf.pipeline_def)
    for g, w in zip(got[0], want[0]):
        assert g.dtype == np.float32 and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_per_sample_flags() -> None:
    pts = [np.array([[0.1, 0.2]], np.float32)] * 2
    out = run_arrays(pts, lambda p, fx, fy: fn.coord_flip(p, flip_x=fx, flip_y=fy),
                     fx=[np.int32(1), np.int32(0)], fy=[np.int32(0), np.int32(1)])[0]
    np.testing.assert_allclose(out[0], [[0.9, 0.2]], atol=1e-7)
    np.testing.assert_allclose(out[1], [[0.1, 0.8]], atol=1e-7)


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="layout must be made of distinct"):
        fn.coord_flip(fn.external_source([[np.zeros((1, 2), np.float32)]]), layout="xq")
    with pytest.raises(PipelineError, match="points must be float32"):
        run_arrays([np.zeros((1, 2), np.int32)], lambda p: fn.coord_flip(p))
    with pytest.raises(PipelineError, match=r"ndim 1..3"):
        run_arrays([np.zeros((1, 4), np.float32)], lambda p: fn.coord_flip(p))


# --- the GPU implementation (the CPU code over cupy; numpy in CI) ---------------------------------
from detection_gpu import check_recorded_on_gpu


@pytest.mark.parametrize("case", ["coord_flip_x", "coord_flip_xy_center", "coord_flip_yx_layout", "coord_flip_3d"])
def test_gpu_matches_cpu_and_dali(kernel_ctx, case: str) -> None:
    check_recorded_on_gpu(kernel_ctx, case)
