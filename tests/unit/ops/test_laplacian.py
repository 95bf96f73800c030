"""``laplacian`` against DALI 2.4's recorded CPU outputs, and its windows against OpenCV's definition.

Tolerance: bit-identical for every recorded argument set (uint8, int16 and
float32 inputs; uint8 and float32 outputs).
"""

from __future__ import annotations

import numpy as np
import pytest
from augment_refs import batch, inputs, max_diff
from dali_reference.augment_cases import LAPLACIANS
from helpers import make_chunk, run_arrays

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.laplacian import Laplacian, derivative_window, laplacian_terms, smoothing_window

CASES = LAPLACIANS


@pytest.mark.parametrize("case", sorted(CASES))
def test_float_output_matches_dali(case: str) -> None:
    (out,) = run_arrays(inputs("filters", "u8"), lambda x: fn.laplacian(x, dtype=sf.types.FLOAT, **CASES[case]))
    assert max_diff(out, batch("filters", f"laplacian/float/{case}")) == 0


def test_input_types_match_dali() -> None:
    builds = {
        "u8/default": ("u8", lambda x: fn.laplacian(x)),
        "u8/normalized_5": ("u8", lambda x: fn.laplacian(x, window_size=5, normalized_kernel=True)),
        "i16/window_5": ("i16", lambda x: fn.laplacian(x, window_size=5)),
        "f32/window_3": ("f32", lambda x: fn.laplacian(x)),
    }
    for key, (kind, build) in builds.items():
        (out,) = run_arrays(inputs("filters", kind), build)
        assert max_diff(out, batch("filters", f"laplacian/{key}")) == 0, key


def test_windows_are_opencv_deriv_kernels() -> None:
    assert smoothing_window(1).tolist() == [1]
    assert smoothing_window(5).tolist() == [1, 4, 6, 4, 1]
    assert derivative_window(3).tolist() == [1, -2, 1]
    assert derivative_window(5).tolist() == [1, 0, -2, 0, 1]
    (dy, sx, s0), (sy, dx, s1) = laplacian_terms(5, None, None, True)
    assert s0 == s1 == 2.0 ** -6 and len(sx) == len(sy) == 5


def test_constant_image_and_quadratic() -> None:
    yy, xx = np.mgrid[0:12, 0:15].astype(np.float32)
    quad = (3 * yy * yy + 2 * xx * xx)  # d2/dy2 + d2/dx2 = 10 away from the borders
    (out,) = run_arrays([quad], lambda x: fn.laplacian(x, smoothing_size=1))
    assert np.allclose(out[0][2:-2, 2:-2], 10.0)
    (flat,) = run_arrays([np.full((6, 7, 3), 9, np.uint8)], lambda x: fn.laplacian(x, window_size=7))
    assert not flat[0].any()


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="window_size must be odd integers >= 3"):
        Laplacian(window_size=4)
    with pytest.raises(PipelineDefinitionError, match="smoothing_size must be odd"):
        Laplacian(smoothing_size=2)
    with pytest.raises(PipelineDefinitionError, match="scale cannot be given with normalized_kernel"):
        Laplacian(scale=2.0, normalized_kernel=True)
    chunk = make_chunk([np.zeros((5, 5), np.uint8)], {"window_size": [np.array([3, 5, 7], np.int32)]})
    Laplacian().run(chunk)
    assert "window_size must have 1 value or 2" in str(chunk.failures[0])


def test_per_frame_scale_filters_each_frame_with_its_own() -> None:
    """DALI takes ``scale`` per frame (``fn.per_frame``) on sequences: frame f is filtered with scale[f]."""
    from helpers import run_sequences

    rng = np.random.default_rng(12)
    seqs = [rng.integers(0, 256, (3, 11, 9, 3), dtype=np.uint8) for _ in range(2)]
    scales = [np.float32([0.2, 1.0, 2.5]), np.float32([1.5, 0.5, 0.1])]
    (out,) = run_sequences(seqs, lambda x, s: fn.laplacian(x, window_size=5, scale=fn.per_frame(s),
                                                           dtype=sf.types.FLOAT), s=scales)
    for seq, sc, got in zip(seqs, scales, out):
        for f in range(3):
            (want,) = run_arrays([seq[f]], lambda x, v=float(sc[f]): fn.laplacian(x, window_size=5, scale=v,
                                                                                   dtype=sf.types.FLOAT))
            np.testing.assert_array_equal(got[f], want[0])
