"""``warp_affine``: pixel-centre conventions, fill and clamp, a float64 reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    rand_image,
)
from reference import reference_warp

import streamflow as sf
from streamflow import fn
from streamflow.ops.warp_affine import invert_affine, warp_affine_image
from streamflow.types import InterpType


# --- warp_affine ------------------------------------------------------------
def test_warp_affine_integer_shift_with_fill_and_clamp() -> None:
    img = rand_image(10, 12, seed=7)
    out = warp_affine_image(img, [1, 0, 3, 0, 1, -2], (10, 12), fill_value=9)
    expect = np.full_like(img, 9)
    expect[2:, :9] = img[:8, 3:]
    assert np.array_equal(out, expect)
    clamped = warp_affine_image(img, [1, 0, 3, 0, 1, -2], (10, 12))
    ys = np.clip(np.arange(10) - 2, 0, 9)
    xs = np.clip(np.arange(12) + 3, 0, 11)
    assert np.array_equal(clamped, img[ys][:, xs])


def test_warp_affine_nn_scaling_uses_pixel_centres() -> None:
    img = rand_image(16, 20, seed=8)
    # dst(x, y) = src(2x, 2y): centre j + 0.5 -> 2j + 1 -> pixel 2j + 1.
    out = warp_affine_image(img, [2, 0, 0, 0, 2, 0], (8, 10), interp=InterpType.INTERP_NN)
    assert np.array_equal(out, img[1::2, 1::2])
    # Bilinear 2x downscale: centre 2j + 1 lies between pixels 2j and 2j+1.
    lin = warp_affine_image(img.astype(np.float32), [2, 0, 0, 0, 2, 0], (8, 10))
    f = img.astype(np.float32)
    expect = (f[0::2, 0::2] + f[0::2, 1::2] + f[1::2, 0::2] + f[1::2, 1::2]) / 4
    assert np.allclose(lin, expect, atol=1e-4)


def test_warp_affine_matches_float64_reference() -> None:
    img = rand_image(19, 14, seed=9)
    m = [0.9, 0.2, -3.0, -0.1, 1.1, 2.5]
    ref = reference_warp(img, m, (21, 17), 0)
    out = warp_affine_image(img, m, (21, 17), fill_value=0, out_dtype=np.float32)
    assert np.abs(out - ref).max() < 5e-3


def test_warp_affine_operator_inverse_map_per_sample_and_size() -> None:
    images = [rand_image(20, 24, seed=1), rand_image(18, 22, seed=2)]
    fwd = np.array([[1.1, 0.1, 2.0], [-0.2, 0.9, 1.0]], dtype=np.float32)
    mats = [fwd, np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        img = fn.external_source([images])
        mat = fn.external_source([mats])
        return (fn.warp_affine(img, matrix=fwd.reshape(-1).tolist(), inverse_map=False, fill_value=0),
                fn.warp_affine(img, matrix=mat, size=(10, 11)))

    with pipe() as p:
        inv, per = p.run()
    expect = warp_affine_image(images[0], invert_affine(fwd), (20, 24), fill_value=0)
    assert np.array_equal(inv.at(0), expect)
    assert per.shape() == [(10, 11, 3), (10, 11, 3)]
    assert np.array_equal(per.at(1), images[1][:10, :11])
    with pytest.raises(sf.PipelineDefinitionError, match="6 values"):
        fn.warp_affine(fn.external_source([[]]), matrix=[1, 2, 3])
    with pytest.raises(sf.PipelineDefinitionError, match="singular"):
        fn.warp_affine(fn.external_source([[]]), matrix=[1, 1, 0, 1, 1, 0], inverse_map=False)


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------
from helpers import assert_same_outputs, odd_images, run_cpu_op, run_gpu_impl

from streamflow.ops.warp_affine import WarpAffine

_MATRICES = [
    np.array([0.9, 0.2, -3.0, -0.1, 1.1, 2.5], np.float32),     # shear, shift: parts outside
    np.array([0.37, 0.0, 1.3, 0.0, 0.41, -0.7], np.float32),    # upscale: many taps per pixel
    np.array([2.3, -0.6, 5.0, 0.5, 1.7, -9.0], np.float32),     # downscale and rotate
    np.array([-1.0, 0.0, 40.0, 0.0, 1.0, 0.0], np.float32),     # mirror
]


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.float32])
def test_gpu_warp_affine_equals_cpu(kernel_ctx, grid, dtype) -> None:
    """Bit-identical for both filters, fill and clamp, other output types, outputs wider than a
    256-column tile, HW images and per-sample matrices and sizes."""
    rng = np.random.default_rng(11)
    images = odd_images(rng, 3, dtype=dtype, lo=5, hi=60) + odd_images(rng, 1, channels=0, dtype=dtype, hi=40)
    if dtype == np.int16:
        images = [(i.astype(np.int32) * 97 - 12000).astype(np.int16) for i in images]
    args = {"matrix": _MATRICES, "size": [np.array(s, np.float32) for s in ((31, 29), (9, 600), (40, 17), (23, 35))]}
    for interp in ("INTERP_LINEAR", "INTERP_NN"):
        for fill, out_dtype in ((None, None), (300.0, "float"), ((7.0, -2.5, 1e6), "uint8"), (-1.5, "int16")):
            op = WarpAffine(interp=interp, fill_value=fill, dtype=out_dtype)
            # the 3-value fill fits only 3 channels: the HW sample fails alike on both sides
            gpu, gf = run_gpu_impl(kernel_ctx, op, images, args)
            cpu, cf = run_cpu_op(op, images, args)
            assert sorted(gf) == sorted(cf)
            assert_same_outputs(gpu, cpu, f"{interp} fill={fill} {np.dtype(dtype)} -> {out_dtype}")


def test_gpu_warp_affine_inverse_map_and_constant_matrix(kernel_ctx) -> None:
    images = [rand_image(20, 300, seed=3)]
    op = WarpAffine([1.1, 0.1, 2.0, -0.2, 0.9, 1.0], inverse_map=False, size=(25, 333), fill_value=0)
    gpu, _ = run_gpu_impl(kernel_ctx, op, images)
    cpu, _ = run_cpu_op(op, images)
    assert_same_outputs(gpu, cpu, "inverse_map=False")


def test_gpu_warp_affine_errors(kernel_ctx) -> None:
    images = [np.zeros((2, 3, 4, 1), np.uint8), np.zeros((4, 4, 3), np.int32), np.zeros((4, 4, 3), np.uint8),
              np.zeros((0, 4, 3), np.uint8)]
    _, failures = run_gpu_impl(kernel_ctx, WarpAffine([1, 0, 0, 0, 1, 0]), images)
    assert "CPU only" in str(failures[0]) and "got int32" in str(failures[1]) and "non-empty" in str(failures[3])
    assert 2 not in failures
    _, failures = run_gpu_impl(kernel_ctx, WarpAffine([1, 0, 0, 0, 1, 0], fill_value=(1, 2)), images[2:3])
    assert "1 or 3 values" in str(failures[0])


def test_per_frame_matrices_make_a_sequence_of_an_image() -> None:
    """DALI: warp_affine of an image with per-frame matrices gives one frame per matrix (FHWC)."""
    from streamflow import types

    image = np.arange(12 * 16 * 3, dtype=np.uint8).reshape(12, 16, 3)
    mats = np.float32([[[1, 0, 2], [0, 1, 3]], [[1, 0, 5], [0, 1, 0]]])

    @sf.pipeline_def(batch_size=1, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        img = fn.external_source([[image]], layout="HWC")
        m = fn.external_source([[mats]])
        return (fn.warp_affine(img, fn.per_frame(m), size=[4, 6], interp_type=types.INTERP_NN),
                fn.warp_affine(img, matrix=mats[1].ravel().tolist(), size=[4, 6], interp_type=types.INTERP_NN))

    with pipe() as p:
        seq, single = p.run()
    assert seq.layout == "FHWC" and np.asarray(seq.at(0)).shape == (2, 4, 6, 3)
    np.testing.assert_array_equal(np.asarray(seq.at(0))[1], np.asarray(single.at(0)))
    np.testing.assert_array_equal(np.asarray(seq.at(0))[0], image[3:7, 2:8])


def test_sequences_warp_frame_by_frame() -> None:
    """DALI 2.4 warps FHWC sequences frame by frame: one matrix for every frame, or one per frame (fn.per_frame,
    per-frame transforms), with inverse_map=False too."""
    from helpers import run_arrays, run_sequences

    rng = np.random.default_rng(14)
    seqs = [rng.integers(0, 256, (3, 20, 24, 3), dtype=np.uint8) for _ in range(2)]
    mats = [np.float32([[[1, 0.1, 2], [0, 1, -1]], [[0.9, 0, 0], [0.2, 1.1, 3]], [[1, 0, 0], [0, 1, 0]]])] * 2
    per_frame, single = run_sequences(
        seqs, lambda x, m: (fn.warp_affine(x, matrix=fn.per_frame(m), fill_value=0, inverse_map=False),
                            fn.warp_affine(x, matrix=[1, 0, 1.5, 0, 1, 0.5], fill_value=0)), m=mats)
    for seq, got, same in zip(seqs, per_frame, single):
        assert got.shape == seq.shape
        for f in range(3):
            (want,) = run_arrays([seq[f]], lambda x, m=mats[0][f]: fn.warp_affine(x, matrix=m.reshape(-1).tolist(),
                                                                                   fill_value=0, inverse_map=False))
            np.testing.assert_array_equal(got[f], want[0])
            (want,) = run_arrays([seq[f]], lambda x: fn.warp_affine(x, matrix=[1, 0, 1.5, 0, 1, 0.5], fill_value=0))
            np.testing.assert_array_equal(same[f], want[0])
    with pytest.raises(sf.PipelineError, match="needs one 2x3 matrix or one per frame"):
        run_sequences(seqs, lambda x, m: fn.warp_affine(x, matrix=fn.per_frame(m)), m=[m[:2] for m in mats])
