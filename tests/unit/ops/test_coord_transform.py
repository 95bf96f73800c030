"""``coord_transform``: against DALI 2.4's CPU outputs (bit-identical) and numpy's matrix product."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import assert_equal_outputs, replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError, PipelineError


@pytest.mark.parametrize("case", [
    "coord_transform_m_t", "coord_transform_mt", "coord_transform_scalar", "coord_transform_3d_to_2d",
    "coord_transform_uint8", "coord_transform_per_sample_mt",
])
def test_matches_dali(case: str) -> None:
    assert_equal_outputs(*replay(case, fn, types, sf.pipeline_def))


def test_against_numpy() -> None:
    rng = np.random.default_rng(0)
    pts = (rng.random((50, 4)) * 10).astype(np.float32)
    m = rng.random((3, 4)).astype(np.float32)
    t = rng.random(3).astype(np.float32)
    out = run_arrays([pts], lambda p: fn.coord_transform(p, M=m.ravel().tolist(), T=t.tolist()))[0][0]
    np.testing.assert_allclose(out, pts.astype(np.float64) @ m.T.astype(np.float64) + t, rtol=1e-5)


def test_errors() -> None:
    node = fn.external_source([[np.zeros((1, 2), np.float32)]])
    with pytest.raises(PipelineDefinitionError, match="MT is exclusive with M and T"):
        fn.coord_transform(node, M=[1.0], MT=[1.0])
    with pytest.raises(PipelineError, match="cannot form a matrix with 5 elements and 2 columns"):
        run_arrays([np.zeros((1, 2), np.float32)], lambda p: fn.coord_transform(p, M=[1.0, 2.0, 3.0, 4.0, 5.0]))
    with pytest.raises(PipelineError, match="T has 3 components but M has 2 rows"):
        run_arrays([np.zeros((1, 2), np.float32)], lambda p: fn.coord_transform(p, T=[1.0, 2.0, 3.0]))
    with pytest.raises(PipelineError, match="at least 2 dimensions"):
        run_arrays([np.zeros(2, np.float32)], lambda p: fn.coord_transform(p))


# --- the GPU implementation (the CPU code over cupy; numpy in CI) ---------------------------------
from detection_gpu import check_recorded_on_gpu


@pytest.mark.parametrize("case", ["coord_transform_m_t", "coord_transform_mt", "coord_transform_scalar",
                                  "coord_transform_3d_to_2d", "coord_transform_uint8", "coord_transform_per_sample_mt"])
def test_gpu_matches_cpu_and_dali(kernel_ctx, case: str) -> None:
    check_recorded_on_gpu(kernel_ctx, case)


def test_per_frame_points_take_per_frame_matrices() -> None:
    """DALI 2.4: points given per frame (fn.per_frame) are transformed frame by frame, by per-frame matrices
    (transforms with per-frame arguments, combined) or the sample's."""
    from helpers import run_sequences

    points = [np.tile(np.float32([[10, 10], [54, 10], [32, 40]]), (3, 1, 1))] * 2
    angles = [np.float32([0, 30, 90]), np.float32([-45, 10, 20])]

    def build(x, a):  # type: ignore[no-untyped-def]
        mt = fn.transforms.combine(fn.transforms.rotation(angle=fn.per_frame(a), center=[32, 24]),
                                   fn.transforms.translation(offset=[2, -3]))
        return fn.coord_transform(x, MT=mt), fn.coord_transform(x, MT=fn.transforms.translation(offset=[1, 1]))

    moved, shifted = run_sequences(points, build, layout="FNC", a=angles)
    for pts, ang, got in zip(points, angles, moved):
        for f in range(3):
            (want,) = run_arrays([pts[f]], lambda x, v=float(ang[f]): fn.coord_transform(x, MT=fn.transforms.combine(
                fn.transforms.rotation(angle=v, center=[32, 24]), fn.transforms.translation(offset=[2, -3]))))
            np.testing.assert_array_equal(got[f], want[0])
    np.testing.assert_array_equal(shifted[0], points[0] + 1)
