"""``gaussian_blur`` against DALI 2.4's recorded CPU outputs, and its windows against a float64 reference.

Tolerance: bit-identical (uint8, int16 and float32 inputs; uint8 and float32
outputs; per-sample sigmas; HW images).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from augment_refs import batch, inputs, max_diff
from dali_reference.augment_cases import GAUSSIAN_BLURS
from helpers import assert_gpu_equals_cpu, make_chunk, run_arrays

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.gaussian_blur import GaussianBlur, blur_windows, gaussian_window

CASES = GAUSSIAN_BLURS


@pytest.mark.parametrize("case", sorted(CASES))
def test_uint8_matches_dali(case: str) -> None:
    (out,) = run_arrays(inputs("filters", "u8"), lambda x: fn.gaussian_blur(x, **CASES[case]))
    assert max_diff(out, batch("filters", f"gaussian_blur/u8/{case}")) == 0


@pytest.mark.parametrize("case", ["sigma_0.7", "sigma_1_3", "window_7_sigma_4"])
def test_float_output_matches_dali(case: str) -> None:
    (out,) = run_arrays(inputs("filters", "u8"), lambda x: fn.gaussian_blur(x, dtype=sf.types.FLOAT, **CASES[case]))
    assert max_diff(out, batch("filters", f"gaussian_blur/float/{case}")) == 0


def test_other_types_layouts_and_per_sample_sigma_match_dali() -> None:
    for kind in ("f32", "i16"):
        (out,) = run_arrays(inputs("filters", kind), lambda x: fn.gaussian_blur(x, sigma=1.5))
        assert max_diff(out, batch("filters", f"gaussian_blur/{kind}/sigma_1.5")) == 0
    gray = [np.ascontiguousarray(im[..., 1]) for im in inputs("filters", "u8")]
    (out,) = run_arrays(gray, lambda x: fn.gaussian_blur(x, sigma=1.5))
    assert max_diff(out, batch("filters", "gaussian_blur/gray/sigma_1.5")) == 0
    sig = [np.array(v, np.float32) for v in ((0.5,), (1.0, 2.5), (3.0,))]
    (out,) = run_arrays(inputs("filters", "u8"), lambda x, s: fn.gaussian_blur(x, sigma=s), s=sig)
    assert max_diff(out, batch("filters", "gaussian_blur/u8/per_sample_sigma")) == 0


def test_window_against_float64_formula() -> None:
    for sigma, size in ((0.7, 5), (2.0, 13), (6.0, 37)):
        x = np.arange(size) - size // 2
        ref = np.exp(-x * x / (2 * sigma * sigma))
        np.testing.assert_allclose(gaussian_window(sigma, size), ref / ref.sum(), rtol=2e-6, atol=1e-8)
    ky, kx = blur_windows(None, 7)  # sigma from the window: (3 - 1) * 0.3 + 0.8 = 1.4
    np.testing.assert_array_equal(ky, gaussian_window(1.4, 7))
    assert len(blur_windows(2.5, None)[0]) == 2 * math.ceil(7.5) + 1


def test_sequences_and_channel_first_blur_each_plane() -> None:
    rng = np.random.default_rng(0)
    seq = rng.integers(0, 256, (3, 9, 11, 2), dtype=np.uint8)
    (out,) = run_arrays([seq], lambda x: fn.gaussian_blur(x, sigma=1.0))
    (planes,) = run_arrays(list(seq), lambda x: fn.gaussian_blur(x, sigma=1.0))
    assert np.array_equal(out[0], np.stack(planes))
    op = GaussianBlur(1.0, layout="CHW")
    chw = np.ascontiguousarray(seq[0].transpose(2, 0, 1))
    got = op.run(make_chunk([chw]))[0][0]
    assert np.array_equal(got, planes[0].transpose(2, 0, 1))


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="give sigma or window_size"):
        run_arrays([np.zeros((4, 4), np.uint8)], lambda x: fn.gaussian_blur(x))
    with pytest.raises(PipelineDefinitionError, match="window_size must be odd"):
        GaussianBlur(window_size=4)
    with pytest.raises(PipelineDefinitionError, match="sigma must be >= 0"):
        GaussianBlur(sigma=-1.0)
    with pytest.raises(PipelineDefinitionError, match="dtype must be FLOAT"):
        GaussianBlur(1.0, dtype="uint16")
    chunk = make_chunk([np.zeros((2, 3, 4, 5, 6), np.uint8), np.zeros((5, 5, 3), np.bool_)],
                       {"sigma": [np.float32(1), np.array([1, 2, 3], np.float32)]})
    GaussianBlur(1.0).run(chunk)
    assert "got 5 dimensions" in str(chunk.failures[0])
    assert "sigma must have 1 value or 2" in str(chunk.failures[1])


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------
from helpers import assert_same_outputs, odd_images, run_cpu_op, run_gpu_impl


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.float32])
def test_gpu_equals_cpu(kernel_ctx, grid, dtype) -> None:
    rng = np.random.default_rng(11)
    images = odd_images(rng, 3, dtype=dtype, lo=1, hi=40) + odd_images(rng, 2, channels=0, dtype=dtype, hi=30)
    images[0] = images[0][:1]  # a single row: reflect_101 on a one-pixel axis
    args = {"sigma": [np.float32(s) for s in (0.8, 2.0, 5.0, 1.3, 0.5)]}
    for op in (GaussianBlur(1.0), GaussianBlur(1.0, dtype=sf.types.FLOAT)):
        assert_gpu_equals_cpu(kernel_ctx, op, images, args, what=f"gaussian_blur {np.dtype(dtype)}")


def test_gpu_layouts_and_photo(kernel_ctx, photo) -> None:
    seq = np.stack([photo[:40, :50], photo[10:50, 20:70]])
    cases = [(GaussianBlur((1.0, 2.0)), [photo]), (GaussianBlur(window_size=(3, 9), layout="FHWC"), [seq]),
             (GaussianBlur(1.5, layout="CHW"), [np.ascontiguousarray(photo.transpose(2, 0, 1))])]
    for op, images in cases:
        gpu, gf = run_gpu_impl(kernel_ctx, op, images)
        cpu, _ = run_cpu_op(op, images)
        assert not gf
        assert_same_outputs(gpu, cpu, f"gaussian_blur {op.layout(0)}")
    gpu, gf = run_gpu_impl(kernel_ctx, GaussianBlur(1.0), [np.zeros((4, 4), np.int32)])
    assert "supports uint8, uint16, int16, float32; got int32" in str(gf[0])


def test_per_frame_sigma_blurs_each_frame_with_its_own() -> None:
    """DALI takes ``sigma`` per frame (``fn.per_frame``) on sequences (its video per-frame arguments tutorial):
    frame f is blurred with sigma[f]; a per-sample sigma still blurs every frame alike."""
    from helpers import run_sequences

    rng = np.random.default_rng(11)
    seqs = [rng.integers(0, 256, (3, 12, 10, 3), dtype=np.uint8) for _ in range(2)]
    sigmas = [np.float32([0.5, 1.5, 3.0]), np.float32([2.0, 1.0, 0.7])]
    (out,) = run_sequences(seqs, lambda x, s: fn.gaussian_blur(x, sigma=fn.per_frame(s)), s=sigmas)
    for seq, sig, got in zip(seqs, sigmas, out):
        assert got.shape == seq.shape
        for f in range(3):
            (want,) = run_arrays([seq[f]], lambda x, v=float(sig[f]): fn.gaussian_blur(x, sigma=v))
            np.testing.assert_array_equal(got[f], want[0])
    with pytest.raises(sf.PipelineError, match="per-frame argument sigma has 2 values for a sequence of 3"):
        run_sequences(seqs, lambda x, s: fn.gaussian_blur(x, sigma=fn.per_frame(s)), s=[np.float32([1, 2])] * 2)


def test_dynamic_mode_per_frame_batches_are_per_frame_arguments() -> None:
    """DALI's rule: an argument whose layout starts with F is per frame; in dynamic mode ``ndd.per_frame(batch)``
    marks it so (its per-frame tutorial in dynamic mode)."""
    from helpers import run_sequences

    import streamflow.experimental.dynamic as ndd

    rng = np.random.default_rng(15)
    seqs = [rng.integers(0, 256, (3, 9, 8, 3), dtype=np.uint8) for _ in range(2)]
    sigmas = [np.float32([0.5, 1.5, 3.0])] * 2
    (want,) = run_sequences(seqs, lambda x, s: fn.gaussian_blur(x, sigma=fn.per_frame(s)), s=sigmas)
    got = ndd.gaussian_blur(ndd.as_batch(seqs, layout="FHWC"), sigma=ndd.per_frame(ndd.as_batch(sigmas)))
    for w, g in zip(want, np.asarray(ndd.as_tensor(got))):
        np.testing.assert_array_equal(g, w)
