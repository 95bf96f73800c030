"""rotate, warp_affine, transpose, the random-crop draw and random_resized_crop (CPU).

References: exact slicing (rotations by multiples of 90 degrees, integer shifts,
NN scaling), an independent float64 per-pixel implementation of DALI's warp
formula, Pillow's ``rotate``, and canvas sizes measured on DALI 2.4.0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamflow as sf
from streamflow import fn, rng, types
from streamflow.fn import geometry as fng
from streamflow.ops import kernels
from streamflow.ops.geometry import (
    invert_affine,
    rotated_canvas_size,
    rotation_matrix,
    warp_affine_image,
)
from streamflow.ops.random_crop import RandomCropParams, draw_crop_window
from streamflow.types import InterpType


def run_on(images, build, batch_size=None, **pipe_kw):
    batch_size = batch_size or len(images)

    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=3, **pipe_kw)
    def pipe():
        return build(fn.external_source([list(images)]))

    with pipe() as p:
        return p.run()


def rand_image(h, w, c=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def smooth_image(h, w, seed=0):
    """A smooth photo-like image (interpolation differences stay small on it)."""
    from streamflow.ops import kernels as k

    small = rand_image(max(2, h // 8), max(2, w // 8), seed=seed)
    return k.resample(small, (h, w), antialias=False)


def reference_warp(img, matrix, out_hw, fill=None):
    """Independent float64 per-pixel bilinear warp with DALI's conventions."""
    m = np.asarray(matrix, dtype=np.float64).reshape(2, 3)
    H, W, C = img.shape
    out = np.zeros((*out_hw, C))
    src = img.astype(np.float64)
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            sx = m[0, 0] * (j + 0.5) + m[0, 1] * (i + 0.5) + m[0, 2] - 0.5
            sy = m[1, 0] * (j + 0.5) + m[1, 1] * (i + 0.5) + m[1, 2] - 0.5
            x0, y0 = math.floor(sx), math.floor(sy)
            qx, qy = sx - x0, sy - y0
            acc = np.zeros(C)
            for dy, wy in ((0, 1 - qy), (1, qy)):
                for dx, wx in ((0, 1 - qx), (1, qx)):
                    y, x = y0 + dy, x0 + dx
                    if 0 <= y < H and 0 <= x < W:
                        v = src[y, x]
                    elif fill is None:
                        v = src[min(max(y, 0), H - 1), min(max(x, 0), W - 1)]
                    else:
                        v = np.full(C, fill, dtype=np.float64)
                    acc += wy * wx * v
            out[i, j] = acc
    return out


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
    out = run_on([img], lambda x: fng.rotate(x, angle=angle, fill_value=0, dtype=types.FLOAT))[0].at(0)
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
        return (fng.rotate(img, angle=ang), fng.rotate(img, angle=ang, keep_size=True, fill_value=0),
                fng.rotate(img, angle=ang, size=(11, 12)))

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
    out = run_on([img], lambda x: fng.rotate(x, angle=90, interp_type=types.INTERP_NN, dtype=types.FLOAT))[0].at(0)
    assert out.dtype == np.float32 and np.array_equal(out, np.rot90(img).astype(np.float32))
    gray = img[:, :, 0]
    out2 = warp_affine_image(gray, rotation_matrix((15, 21), (21, 15), 90), (21, 15))
    assert out2.shape == (21, 15) and np.array_equal(out2, np.rot90(gray))


def test_rotate_argument_errors() -> None:
    src = fn.external_source([[]])
    with pytest.raises(sf.PipelineDefinitionError, match="INTERP_LINEAR or INTERP_NN"):
        fng.rotate(src, angle=3, interp_type=types.INTERP_CUBIC)
    with pytest.raises(sf.PipelineDefinitionError, match="not both"):
        fng.rotate(src, angle=3, keep_size=True, size=(3, 3))
    with pytest.raises(sf.PipelineDefinitionError, match="size"):
        fng.rotate(src, angle=3, size=(3, -1))


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
        return (fng.warp_affine(img, matrix=fwd.reshape(-1).tolist(), inverse_map=False, fill_value=0),
                fng.warp_affine(img, matrix=mat, size=(10, 11)))

    with pipe() as p:
        inv, per = p.run()
    expect = warp_affine_image(images[0], invert_affine(fwd), (20, 24), fill_value=0)
    assert np.array_equal(inv.at(0), expect)
    assert per.shape() == [(10, 11, 3), (10, 11, 3)]
    assert np.array_equal(per.at(1), images[1][:10, :11])
    with pytest.raises(sf.PipelineDefinitionError, match="6 values"):
        fng.warp_affine(fn.external_source([[]]), matrix=[1, 2, 3])
    with pytest.raises(sf.PipelineDefinitionError, match="singular"):
        fng.warp_affine(fn.external_source([[]]), matrix=[1, 1, 0, 1, 1, 0], inverse_map=False)


# --- transpose --------------------------------------------------------------
def test_transpose_perm_layout_and_default_reverse() -> None:
    images = [rand_image(4, 5, seed=1), rand_image(6, 3, seed=2)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        x = fn.external_source([images], layout="HWC")
        return fng.transpose(x, perm=[2, 0, 1]), fng.transpose(x), fng.transpose(x, perm=[1, 0, 2], output_layout="WHC")

    with pipe() as p:
        chw, rev, named = p.run()
    assert np.array_equal(chw.at(0), images[0].transpose(2, 0, 1)) and chw.layout == "CHW"
    assert np.array_equal(rev.at(1), images[1].transpose(2, 1, 0)) and rev.layout == "CWH"
    assert np.array_equal(named.at(1), images[1].transpose(1, 0, 2)) and named.layout == "WHC"
    with pytest.raises(sf.PipelineDefinitionError, match="permutation"):
        fng.transpose(fn.external_source([[]]), perm=[0, 0, 1])


# --- the random-crop draw -----------------------------------------------------
areas = st.tuples(st.floats(0.01, 1.0), st.floats(0.01, 1.0)).map(sorted)
ratios = st.tuples(st.floats(0.2, 5.0), st.floats(0.2, 5.0)).map(sorted)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 2000), st.integers(1, 2000), areas, ratios, st.integers(1, 20), st.integers(0, 2**32))
def test_draw_window_inside_and_in_range(h, w, area, ratio, attempts, seed) -> None:
    params = RandomCropParams.from_args("t", area, ratio, attempts)
    d = draw_crop_window(h, w, params, np.random.default_rng(seed))
    assert 0 <= d.y0 and 0 <= d.x0 and d.h >= 1 and d.w >= 1
    assert d.y0 + d.h <= h and d.x0 + d.w <= w
    if d.accepted:
        f32 = np.float32
        assert f32(area[0]) * (1 - 1e-6) <= d.area <= f32(area[1]) * (1 + 1e-6)
        assert f32(ratio[0]) * (1 - 1e-6) <= d.ratio <= f32(ratio[1]) * (1 + 1e-6)
        assert f32(ratio[0]) <= f32(d.w) / f32(d.h) <= f32(ratio[1])  # the rounded window's ratio
        # w and h are the rounded sides of the drawn area and ratio (at least 1).
        side_w = math.sqrt(d.area * h * w * d.ratio)
        side_h = math.sqrt(d.area * h * w / d.ratio)
        assert abs(d.w - max(1.0, side_w)) <= 0.5 + 1e-3
        assert abs(d.h - max(1.0, side_h)) <= 0.5 + 1e-3
        # so the window's area is within the requested range, up to that rounding.
        lo = max(1.0, math.sqrt(area[0] * h * w * d.ratio) - 0.5) * max(1.0, math.sqrt(area[0] * h * w / d.ratio) - 0.5)
        hi = max(1.0, math.sqrt(area[1] * h * w * d.ratio) + 0.5) * max(1.0, math.sqrt(area[1] * h * w / d.ratio) + 0.5)
        assert lo - 1e-3 <= d.w * d.h <= hi + 1e-3


def test_draw_fallbacks() -> None:
    params = RandomCropParams()
    g = np.random.default_rng(0)
    # Too wide for any window of ratio <= 4/3 and area >= 8%: full height, maxW = int(H * 4/3).
    d = draw_crop_window(10, 1000, params, g)
    assert (d.h, d.w, d.accepted) == (10, 13, False)
    d = draw_crop_window(1000, 10, params, g)
    assert (d.h, d.w, d.accepted) == (13, 10, False)
    # The early exits also cover requests that are impossible for other reasons:
    # 3x7 with ratio exactly 1 and area >= 50%: at most 3 columns of full height.
    p = RandomCropParams.from_args("t", (0.5, 0.5), (1.0, 1.0), 3)
    d = draw_crop_window(3, 7, p, np.random.default_rng(1))
    assert (d.h, d.w, d.accepted) == (3, 3, False) and d.y0 == 0 and 0 <= d.x0 <= 4
    # Too tall for ratio 2 at >= 90%: maxH = int(W / 2) rows of full width.
    d = draw_crop_window(100, 100, RandomCropParams.from_args("t", (0.9, 1.0), (2.0, 2.0), 5), np.random.default_rng(2))
    assert (d.h, d.w, d.accepted) == (50, 100, False)
    # Attempts exhausted (size granularity): 2x2, area 30%, ratio in [1.2, 1.3]
    # always rounds to 1x1 (ratio 1). Fallback: own ratio 1 clamped to 1.2 ->
    # 1x2 (maxH x W), shrunk to area <= 1.2 pixels: sides * sqrt(0.6) -> 1x1.
    p = RandomCropParams.from_args("t", (0.3, 0.3), (1.2, 1.3), 10)
    d = draw_crop_window(2, 2, p, np.random.default_rng(3))
    assert (d.h, d.w, d.accepted) == (1, 1, False)


def test_draw_is_deterministic_per_seed_epoch_sample() -> None:
    params = RandomCropParams()
    key = rng.RandomKey(7, 2)

    def window(epoch, sid, k=key):
        return draw_crop_window(300, 400, params, rng.sample_generator(k, epoch, sid)).window

    assert window(0, 5) == window(0, 5)
    draws = {window(e, s) for e in range(3) for s in range(20)}
    assert len(draws) > 50  # different samples and epochs draw differently
    assert window(0, 5, rng.RandomKey(8, 2)) != window(0, 5)


def test_draw_distribution() -> None:
    """Area uniform, ratio log-uniform (checked on the accepted draws' parameters)."""
    params = RandomCropParams()
    draws = [draw_crop_window(1000, 1000, params, np.random.default_rng(i)) for i in range(3000)]
    acc = [d for d in draws if d.accepted]
    assert len(acc) > 0.9 * len(draws)
    areas_ = np.array([d.area for d in acc])
    logs = np.log([d.ratio for d in acc])
    # A square image accepts every draw with area <= 0.75 or so; compare quantiles below.
    assert abs(np.mean(areas_ < 0.3) - (0.3 - 0.08) / 0.92) < 0.04
    assert abs(np.mean(logs < 0) - 0.5) < 0.04


def test_params_validation() -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="random_area"):
        RandomCropParams.from_args("t", (0.5, 0.1))
    with pytest.raises(sf.PipelineDefinitionError, match="random_aspect_ratio"):
        RandomCropParams.from_args("t", (0.1, 1), (0, 1))
    with pytest.raises(sf.PipelineDefinitionError, match="num_attempts"):
        RandomCropParams.from_args("t", (0.1, 1), (1, 1), 0)


# --- random_resized_crop -----------------------------------------------------
def test_random_resized_crop_equals_resample_of_the_drawn_window() -> None:
    images = [smooth_image(120, 90, seed=1), rand_image(64, 200, seed=2), rand_image(50, 50, seed=3)]

    @sf.pipeline_def(batch_size=3, num_threads=2, seed=0)
    def pipe():
        img = fn.external_source([images])
        return fng.random_resized_crop(img, size=(32, 40), seed=1234), fng.random_resized_crop(img, size=24)

    with pipe() as p:
        batch = p.run()
    seeded, square = batch
    params = RandomCropParams()
    key = rng.RandomKey(1234, 0x5C0F)
    for i, img in enumerate(images):
        sid = int(batch.sample_ids[i])
        d = draw_crop_window(*img.shape[:2], params, rng.sample_generator(key, batch.epoch, sid))
        expect = kernels.resample(img, (32, 40), roi=(d.y0, d.x0, d.y0 + d.h, d.x0 + d.w))
        assert np.array_equal(seeded.at(i), expect)
    assert square.shape() == [(24, 24, 3)] * 3

    # Deterministic: a new pipeline gives the same crops.
    with pipe() as p:
        again = p.run()
    assert all(np.array_equal(again[1].at(i), square.at(i)) for i in range(3))
