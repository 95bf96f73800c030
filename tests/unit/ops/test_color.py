"""``color_twist``, ``hue``, ``saturation``, ``hsv`` and ``brightness_contrast`` against float references of DALI's formulas.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import (
    assert_gpu_equals_cpu,
    rand_image,
    run_arrays,
)

import streamflow as sf
from streamflow import fn

# --- references -------------------------------------------------------------
YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])


def ref_twist(img, brightness=1.0, contrast=1.0, saturation=1.0, hue=0.0, value=1.0, half=128.0):
    """float64: RGB -> YIQ, rotate (I, Q) by hue, scale by saturation, back, contrast, brightness."""
    x = img.astype(np.float64)
    yiq = x @ YIQ.T
    y, i, q = yiq[..., 0], yiq[..., 1], yiq[..., 2]
    h = math.radians(hue)
    i2 = (i * math.cos(h) + q * math.sin(h)) * saturation
    q2 = (-i * math.sin(h) + q * math.cos(h)) * saturation
    rgb = np.stack([y, i2, q2], axis=-1) @ np.linalg.inv(YIQ).T * value
    return ((rgb - half) * contrast + half) * brightness


def round_away(v):
    return np.trunc(v + np.copysign(0.5, v))


def assert_u8_close(out, ref_float):
    """uint8 ``out`` equals round-half-away(clip(ref)), except by 1 at near-ties."""
    expected = np.clip(round_away(ref_float), 0, 255)
    diff = np.abs(out.astype(np.int64) - expected)
    assert out.dtype == np.uint8
    assert diff.max() <= 1
    frac = np.abs(ref_float - np.floor(ref_float) - 0.5)
    assert np.all(frac[diff > 0] < 1e-3), "differences away from rounding ties"


# --- color_twist / hue / saturation / hsv -------------------------------------
@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"hue": 30.0},
        {"hue": -120.0},
        {"saturation": 0.0},
        {"saturation": 1.8},
        {"brightness": 0.6},
        {"contrast": 1.3},
        {"hue": 45.0, "saturation": 1.3, "brightness": 1.1, "contrast": 0.8},
    ],
)
def test_color_twist_matches_yiq_reference_on_a_photo(photo, kw) -> None:
    (out,) = run_arrays([photo], lambda x: fn.color_twist(x, **kw))
    assert out[0].shape == photo.shape
    assert_u8_close(out[0], ref_twist(photo, **kw))


def test_color_twist_known_values() -> None:
    img = rand_image()
    gray = run_arrays([img], lambda x: fn.color_twist(x, saturation=0.0))[0][0]
    luma = img.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    assert np.abs(gray.astype(np.int64) - round_away(luma)[..., None]).max() <= 1
    assert np.all(gray.max(-1).astype(int) - gray.min(-1) <= 1)  # R = G = B
    flat = run_arrays([img], lambda x: fn.color_twist(x, contrast=0.0))[0][0]
    assert np.all(flat == 128)
    black = run_arrays([img], lambda x: fn.color_twist(x, brightness=0.0))[0][0]
    assert np.all(black == 0)
    same = run_arrays([img], lambda x: (fn.color_twist(x), fn.hue(x, hue=360.0)))
    assert np.array_equal(same[0][0], img) and np.array_equal(same[1][0], img)


def test_color_twist_float_input_gives_float_and_uses_half_range_05() -> None:
    img = np.random.default_rng(1).random((7, 9, 3)).astype(np.float32)
    kw = {"hue": 20.0, "saturation": 0.7, "contrast": 1.4, "brightness": 1.2}
    out = run_arrays([img], lambda x: fn.color_twist(x, **kw))[0][0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref_twist(img, half=0.5, **kw), atol=2e-6)
    assert out.max() > 1.0  # float outputs are not clipped


def test_color_twist_dtype_argument() -> None:
    img = rand_image()
    out = run_arrays([img], lambda x: fn.color_twist(x, hue=10.0, dtype=sf.types.FLOAT))[0][0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref_twist(img, hue=10.0), atol=1e-3)


def test_color_twist_per_sample_arguments() -> None:
    images = [rand_image(seed=i) for i in range(3)]
    hues = [np.float32(h) for h in (-40.0, 0.0, 75.0)]
    sats = [np.float32(s) for s in (0.2, 1.0, 1.5)]
    out = run_arrays(images, lambda x, h, s: fn.color_twist(x, hue=h, saturation=s, brightness=0.9), h=hues, s=sats)[0]
    for img, o, h, s in zip(images, out, hues, sats):
        assert_u8_close(o, ref_twist(img, hue=float(h), saturation=float(s), brightness=0.9))


def test_color_twist_random_hue_is_deterministic() -> None:
    img = rand_image()

    def build(x):
        return fn.color_twist(x, hue=fn.random.uniform(range=[-30, 30]))

    a, b = run_arrays([img, img], build)[0], run_arrays([img, img], build)[0]
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not np.array_equal(a[0], a[1])  # two samples, two hues


def test_hue_saturation_hsv_are_the_same_twist(photo) -> None:
    out = run_arrays([photo], lambda x: (
        fn.hue(x, hue=33.0), fn.saturation(x, saturation=0.4), fn.hsv(x, hue=20.0, saturation=1.2, value=0.9),
    ))
    assert_u8_close(out[0][0], ref_twist(photo, hue=33.0))
    assert_u8_close(out[1][0], ref_twist(photo, saturation=0.4))
    assert_u8_close(out[2][0], ref_twist(photo, hue=20.0, saturation=1.2, value=0.9))


def test_color_twist_errors() -> None:
    src = fn.external_source([[rand_image()]])
    with pytest.raises(sf.PipelineDefinitionError, match="hue must be"):
        fn.color_twist(src, hue="red")
    with pytest.raises(sf.PipelineDefinitionError, match="dtype"):
        fn.color_twist(src, dtype="complex64")
    gray = np.zeros((4, 4, 1), np.uint8)
    with pytest.raises(sf.PipelineError, match="3 channels"):
        run_arrays([gray], lambda x: fn.color_twist(x, hue=1.0))


# --- brightness_contrast ----------------------------------------------------
def ref_bc(img, brightness=1.0, brightness_shift=0.0, contrast=1.0, contrast_center=128.0, full=255.0):
    x = img.astype(np.float64)
    return brightness_shift * full + brightness * (contrast_center + contrast * (x - contrast_center))


@pytest.mark.parametrize(
    "kw",
    [{"brightness": 1.3}, {"contrast": 1.6}, {"brightness_shift": 0.1},
     {"brightness": 0.7, "contrast": 1.2, "brightness_shift": -0.05, "contrast_center": 100.0}],
)
def test_brightness_contrast_formula(photo, kw) -> None:
    out = run_arrays([photo], lambda x: fn.brightness_contrast(x, **kw))[0][0]
    assert_u8_close(out, ref_bc(photo, **kw))


def test_brightness_contrast_rounds_half_away_from_zero() -> None:
    img = np.arange(8, dtype=np.uint8).reshape(1, 8, 1)
    out = run_arrays([img], lambda x: fn.brightness_contrast(x, brightness=0.5))[0][0]
    assert out.ravel().tolist() == [0, 1, 1, 2, 2, 3, 3, 4]  # measured on DALI 2.4


def test_brightness_contrast_float_and_dtype() -> None:
    img = np.random.default_rng(2).random((5, 4, 3)).astype(np.float32)
    out = run_arrays([img], lambda x: fn.brightness_contrast(x, contrast=2.0, brightness_shift=0.1))[0][0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref_bc(img, contrast=2.0, brightness_shift=0.1, contrast_center=0.5, full=1.0), atol=1e-6)
    u8 = rand_image()
    f = run_arrays([u8], lambda x: fn.brightness_contrast(x, brightness_shift=0.1, dtype="float"))[0][0]
    assert f.dtype == np.float32
    np.testing.assert_allclose(f, u8 + 0.1, atol=1e-4)  # shift in units of the output range (1 for floats)


def test_brightness_contrast_per_sample() -> None:
    images = [rand_image(seed=i) for i in range(2)]
    bs = [np.float32(0.5), np.float32(1.5)]
    out = run_arrays(images, lambda x, b: fn.brightness_contrast(x, brightness=b), b=bs)[0]
    for img, o, b in zip(images, out, bs):
        assert_u8_close(o, ref_bc(img, brightness=float(b)))


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------
from helpers import odd_images, run_gpu_impl

from streamflow.ops.color import ColorTwist


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.float32])
def test_gpu_color_twist_equals_cpu(kernel_ctx, grid, dtype) -> None:
    """Bit-identical: the same float32 matrix, summed in the same order, converted alike."""
    rng = np.random.default_rng(8)
    images = odd_images(rng, 3, dtype=dtype, hi=70) + [rng.integers(0, 255, (2, 1500, 3)).astype(dtype)]
    if dtype == np.float32:
        images = [i / np.float32(255) for i in images]
    args = {"hue": [np.float32(v) for v in (0.0, 30.0, -90.0, 180.0)],
            "saturation": [np.float32(v) for v in (1.0, 0.0, 0.5, 1.7)]}
    ops = [ColorTwist("color_twist", brightness=1.4, contrast=1.5), ColorTwist("hsv", value=0.8),
           ColorTwist("hue", dtype="float"), ColorTwist("saturation", dtype="uint8"),
           ColorTwist("color_twist", contrast=0.5, dtype="int16")]
    for op in ops:
        use = {k: v for k, v in args.items() if k in op.per_sample_args}
        assert_gpu_equals_cpu(kernel_ctx, op, images, use, what=f"{op.name} {np.dtype(dtype)}")


def test_gpu_color_twist_refuses_what_it_cannot_take(kernel_ctx) -> None:
    images = [np.zeros((2, 2, 3), np.int32), np.zeros((2, 2, 4), np.uint8), np.zeros((2, 2, 3), np.uint8)]
    out, failures = run_gpu_impl(kernel_ctx, ColorTwist("hue", hue=10.0), images)
    assert "got int32" in str(failures[0]) and "3 channels" in str(failures[1]) and 2 not in failures
    assert out[2].shape == (2, 2, 3)
