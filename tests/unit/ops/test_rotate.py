"""``rotate``: DALI's canvas sizes, exact right angles, a float64 reference and Pillow.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import (
    rand_image,
    run_batch,
    smooth_image,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import reference_warp

import streamflow as sf
from streamflow import fn, types
from streamflow.ops.rotate import rotated_canvas_size, rotation_matrix
from streamflow.ops.warp_affine import warp_affine_image

# --- rotate: canvas size --------------------------------------------------
# (H, W), angle -> (out_h, out_w): measured with DALI 2.4.0 CPU fn.rotate.
DALI_CANVAS = [
    ((181, 240), 0, (181, 240)), ((181, 240), 10, (221, 268)), ((181, 240), 30, (277, 300)),
    ((181, 240), 45, (298, 299)), ((181, 240), 90, (240, 181)), ((181, 240), -37.5, (291, 302)),
    ((181, 240), 123, (300, 283)), ((181, 240), 1, (187, 244)), ((37, 52), 10, (47, 58)),
    ((37, 52), 45, (64, 63)), ((37, 52), 123, (64, 61)), ((37, 52), 1, (39, 54)),
    ((20, 31), 10, (26, 35)), ((20, 31), 30, (34, 37)), ((20, 31), 45, (37, 38)),
    ((20, 31), -37.5, (36, 37)), ((20, 31), 270, (31, 20)), ((20, 31), 20, (30, 37)),
]


@pytest.mark.parametrize("in_hw,angle,expected", DALI_CANVAS)
def test_rotated_canvas_size_matches_dali(in_hw, angle, expected) -> None:
    assert rotated_canvas_size(*in_hw, angle) == expected


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 400), st.integers(1, 400), st.floats(-720, 720, allow_nan=False))
def test_canvas_holds_the_rotated_image_with_parity(h, w, angle) -> None:
    out_h, out_w = rotated_canvas_size(h, w, angle)
    a = math.radians(angle)
    c, s = abs(math.cos(a)), abs(math.sin(a))
    assert out_w >= c * w + s * h - 0.02 and out_h >= c * h + s * w - 0.02
    assert out_w <= c * w + s * h + 2 and out_h <= c * h + s * w + 2
    dominant_w, dominant_h = (w, h) if s <= c else (h, w)
    assert out_w % 2 == dominant_w % 2 and out_h % 2 == dominant_h % 2


# --- rotate: values -------------------------------------------------------
@pytest.mark.parametrize("angle,expect", [
    (0, lambda a: a), (90, lambda a: np.rot90(a, 1)), (180, lambda a: a[::-1, ::-1]),
    (270, lambda a: np.rot90(a, -1)), (-90, lambda a: np.rot90(a, -1)), (450, lambda a: np.rot90(a, 1)),
])
def test_right_angles_are_exact_and_counter_clockwise(angle, expect) -> None:
    img = rand_image(13, 22, seed=4)
    out = warp_affine_image(img, rotation_matrix((13, 22), rotated_canvas_size(13, 22, angle), angle),
                            rotated_canvas_size(13, 22, angle))
    assert np.array_equal(out, expect(img))


@pytest.mark.parametrize("angle", [10, -37.5, 123, 45])
@pytest.mark.parametrize("fill", [None, 0, 200])
def test_rotate_matches_float64_reference(angle, fill) -> None:
    img = rand_image(17, 23, seed=int(abs(angle)))
    size = rotated_canvas_size(17, 23, angle)
    m = rotation_matrix((17, 23), size, angle)
    ref = reference_warp(img, m, size, fill)
    out_f = warp_affine_image(img, m, size, fill_value=fill, out_dtype=np.float32)
    # float32 coordinates (|x| < 40, ulp 4e-6) times pixel steps of up to 255:
    # a few 1e-3 at most.
    assert np.abs(out_f - ref).max() < 5e-3
    out_u8 = warp_affine_image(img, m, size, fill_value=fill)
    diff = np.abs(out_u8.astype(np.float64) - np.floor(ref + 0.5))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01  # only x.5 ties can flip


def test_rotate_matches_pillow_inside() -> None:
    """Same centre, direction and pixel-centre convention as Pillow's rotate.

    Pillow's BILINEAR rotate truncates its float result to uint8 (measured:
    ``our_float - pillow`` lies in [-0.006, 1.004] on this image), so the
    reference is ``floor`` of our float32 output: equal on 99.9% of the values,
    off by one only where float rounding puts a value on the other side of an
    integer. Compared where the source point is 2+ pixels inside the image
    (Pillow and DALI treat the border band differently).
    """
    from PIL import Image

    img = smooth_image(120, 160, seed=1)
    angle = 23.0
    out = run_batch([img], lambda x: fn.rotate(x, angle=angle, fill_value=0, dtype=types.FLOAT))[0].at(0)
    pil = np.asarray(Image.fromarray(img).rotate(angle, resample=Image.BILINEAR, expand=True, fillcolor=(0, 0, 0)))
    # Here both canvases agree (174x196); in general Pillow's has no parity rule.
    assert out.shape == pil.shape
    m = rotation_matrix(img.shape[:2], out.shape[:2], angle)
    jj, ii = np.meshgrid(np.arange(out.shape[1]) + 0.5, np.arange(out.shape[0]) + 0.5)
    sx = m[0, 0] * jj + m[0, 1] * ii + m[0, 2]
    sy = m[1, 0] * jj + m[1, 1] * ii + m[1, 2]
    inside = (sx > 2) & (sx < img.shape[1] - 2) & (sy > 2) & (sy < img.shape[0] - 2)
    ours, theirs = out[inside].astype(np.float64), pil[inside].astype(np.float64)
    assert -0.02 <= (ours - theirs).min() and (ours - theirs).max() <= 1.02
    diff = np.abs(np.floor(ours) - theirs)
    assert diff.max() <= 1 and diff.mean() < 0.01


def test_rotate_operator_per_sample_angle_keep_size_and_size() -> None:
    images = [rand_image(20, 30, seed=1), rand_image(25, 16, seed=2)]
    angles = [np.float32(90), np.float32(-30)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        img = fn.external_source([images])
        ang = fn.external_source([angles])
        return (fn.rotate(img, angle=ang), fn.rotate(img, angle=ang, keep_size=True, fill_value=0),
                fn.rotate(img, angle=ang, size=(11, 12)))

    with pipe() as p:
        grown, kept, sized = p.run()
    assert np.array_equal(grown.at(0), np.rot90(images[0]))
    assert grown.shape()[1] == (*rotated_canvas_size(25, 16, -30), 3)
    assert kept.shape() == [(20, 30, 3), (25, 16, 3)]
    m = rotation_matrix((25, 16), (25, 16), -30)
    assert np.array_equal(kept.at(1), warp_affine_image(images[1], m, (25, 16), fill_value=0))
    assert sized.shape() == [(11, 12, 3), (11, 12, 3)]


def test_rotate_nn_float_dtype_and_gray() -> None:
    img = rand_image(15, 21, seed=5)
    out = run_batch([img], lambda x: fn.rotate(x, angle=90, interp_type=types.INTERP_NN, dtype=types.FLOAT))[0].at(0)
    assert out.dtype == np.float32 and np.array_equal(out, np.rot90(img).astype(np.float32))
    gray = img[:, :, 0]
    out2 = warp_affine_image(gray, rotation_matrix((15, 21), (21, 15), 90), (21, 15))
    assert out2.shape == (21, 15) and np.array_equal(out2, np.rot90(gray))


def test_rotate_argument_errors() -> None:
    src = fn.external_source([[]])
    with pytest.raises(sf.PipelineDefinitionError, match="INTERP_LINEAR or INTERP_NN"):
        fn.rotate(src, angle=3, interp_type=types.INTERP_CUBIC)
    with pytest.raises(sf.PipelineDefinitionError, match="not both"):
        fn.rotate(src, angle=3, keep_size=True, size=(3, 3))
    with pytest.raises(sf.PipelineDefinitionError, match="size"):
        fn.rotate(src, angle=3, size=(3, -1))


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------
from helpers import assert_same_outputs, run_cpu_op, run_gpu_impl

from streamflow.ops.rotate import Rotate


@pytest.mark.parametrize("interp", ["INTERP_LINEAR", "INTERP_NN"])
def test_gpu_rotate_equals_cpu(kernel_ctx, grid, photo, interp) -> None:
    """Bit-identical: the CPU's matrices and canvas sizes, the warp kernel's sampling."""
    images = [photo, rand_image(17, 300, seed=4), rand_image(9, 12, seed=5)[:, :, 0].copy()]
    angles = [np.float32(a) for a in (12.5, -90.0, 33.3)]
    for op in (Rotate(interp=interp), Rotate(interp=interp, fill_value=0, keep_size=True),
               Rotate(interp=interp, size=(40, 51), fill_value=255, dtype="float")):
        gpu, gf = run_gpu_impl(kernel_ctx, op, images, {"angle": angles})
        cpu, cf = run_cpu_op(op, images, {"angle": angles})
        assert not gf and not cf
        assert_same_outputs(gpu, cpu, f"rotate {interp} keep_size={op.keep_size} size={op.size}")


def test_sequences_rotate_frame_by_frame_on_one_canvas() -> None:
    """DALI 2.4 rotates FHWC sequences frame by frame (it used to be read as a volume here): a per-sample angle
    turns every frame alike; per-frame angles (fn.per_frame) share one canvas, the largest height and width of
    the frames' canvases (DALI measured: 48x64 frames at 10 and 80 degrees -> 72x72; -30..45 -> 80x80)."""
    from helpers import run_arrays, run_sequences

    rng = np.random.default_rng(13)
    seqs = [rng.integers(0, 256, (3, 48, 64, 3), dtype=np.uint8) for _ in range(2)]
    angles = [np.float32([10, 80, 0]), np.float32([-30, 45, 15])]
    per_frame, same, kept = run_sequences(
        seqs, lambda x, a: (fn.rotate(x, angle=fn.per_frame(a), fill_value=0), fn.rotate(x, angle=30.0),
                            fn.rotate(x, angle=fn.per_frame(a), keep_size=True)), a=angles)
    assert [o.shape for o in per_frame] == [(3, 72, 72, 3), (3, 80, 80, 3)]
    assert [o.shape for o in same] == [(3, 74, 80, 3)] * 2 and kept[0].shape == (3, 48, 64, 3)
    for seq, ang, got in zip(seqs, angles, per_frame):
        size = got.shape[1:3]
        for f in range(3):
            m = rotation_matrix((48, 64), size, float(ang[f]))
            np.testing.assert_array_equal(got[f], warp_affine_image(seq[f], m, size, fill_value=np.float32([0])))
    (single,) = run_arrays([seqs[0][1]], lambda x: fn.rotate(x, angle=30.0))
    np.testing.assert_array_equal(same[0][1], single[0])
    with pytest.raises(sf.PipelineError, match="2 angles for a sequence of 3 frames"):
        run_sequences(seqs, lambda x, a: fn.rotate(x, angle=a), a=[np.float32([1, 2])] * 2)


def test_gpu_sequences_equal_cpu(kernel_ctx) -> None:
    """Sequences on the GPU: every frame in the same launch, bit-identical to the CPU's frame-by-frame rotation
    (per-frame angles on one canvas, a per-sample angle) and to its errors."""
    rng = np.random.default_rng(16)
    seqs = [rng.integers(0, 256, (3, 12, 17, 3), dtype=np.uint8), rng.integers(0, 256, (2, 9, 8), dtype=np.uint8)]
    for angles in ([np.float32([10, 80, -20]), np.float32([30, 5])], [np.float32(12.5), np.float32(-90)]):
        op = Rotate(fill_value=0)
        op.sequence = "FHWC"
        gpu, gf = run_gpu_impl(kernel_ctx, op, seqs, {"angle": angles})
        cpu, cf = run_cpu_op(op, seqs, {"angle": angles})
        assert not gf and not cf
        assert_same_outputs(gpu, cpu, "rotate sequences")
    op = Rotate(fill_value=0)
    op.sequence = "FHWC"
    _, failures = run_gpu_impl(kernel_ctx, op, seqs, {"angle": [np.float32([1, 2]), np.float32([1, 2, 3])]})
    assert set(failures) == {0, 1}
