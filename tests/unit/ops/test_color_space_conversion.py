"""``color_space_conversion``: exact channel orders, BT.601 YCbCr, gray against Pillow.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    assert_gpu_equals_cpu,
    rand_image,
    run_arrays,
)

import streamflow as sf
from streamflow import fn


def round_away(v):
    return np.trunc(v + np.copysign(0.5, v))


# --- color_space_conversion -------------------------------------------------
def csc(img, src, dst):
    return run_arrays([img], lambda x: fn.color_space_conversion(x, image_type=src, output_type=dst))[0][0]


def test_csc_channel_orders_are_exact() -> None:
    img = rand_image()
    assert np.array_equal(csc(img, "rgb", "bgr"), img[..., ::-1])
    assert np.array_equal(csc(img, sf.types.BGR, sf.types.RGB), img[..., ::-1])
    g = img[..., :1]
    assert np.array_equal(csc(g, "gray", "rgb"), np.repeat(g, 3, axis=-1))


def test_csc_rgb_to_gray_matches_pillow(photo) -> None:
    from PIL import Image

    out = csc(photo, "rgb", "gray")
    assert out.shape == photo.shape[:2] + (1,)
    pil = np.asarray(Image.fromarray(photo).convert("L"))
    assert np.abs(out[..., 0].astype(int) - pil).max() <= 1
    bgr = csc(np.ascontiguousarray(photo[..., ::-1]), "bgr", "gray")
    assert np.array_equal(bgr, out)


def test_csc_ycbcr_bt601(photo) -> None:
    x = photo.astype(np.float64)
    ref = np.stack([
        16 + x @ [0.257, 0.504, 0.098],
        128 + x @ [-0.148, -0.291, 0.439],
        128 + x @ [0.439, -0.368, -0.071],
    ], axis=-1)
    ycc = csc(photo, "rgb", "ycbcr")
    assert np.abs(ycc.astype(int) - np.clip(round_away(ref), 0, 255)).max() <= 1
    back = csc(ycc, "ycbcr", "rgb")
    assert np.abs(back.astype(int) - photo).max() <= 3  # rounding in both directions
    assert np.array_equal(csc(ycc, "ycbcr", "bgr"), back[..., ::-1])
    gray = csc(ycc, "ycbcr", "gray")
    assert np.abs(gray[..., 0].astype(int) - csc(photo, "rgb", "gray")[..., 0]).max() <= 2
    g = photo[..., :1]
    y = csc(g, "gray", "ycbcr")
    assert np.all(y[..., 1:] == 128)
    assert np.abs(y[..., 0].astype(float) - (16 + 0.859 * g[..., 0])).max() <= 0.51


def test_csc_errors() -> None:
    src = fn.external_source([[rand_image()]])
    with pytest.raises(sf.PipelineDefinitionError, match="image type"):
        fn.color_space_conversion(src, image_type="hsl", output_type="rgb")
    with pytest.raises(sf.PipelineDefinitionError, match="RGB, BGR, GRAY or YCbCr"):
        fn.color_space_conversion(src, image_type="any_data", output_type="rgb")
    with pytest.raises(sf.PipelineError, match="only uint8"):
        run_arrays([np.zeros((2, 2, 3), np.float32)], lambda x: fn.color_space_conversion(x, image_type="rgb", output_type="gray"))
    with pytest.raises(sf.PipelineError, match="1 channels"):
        run_arrays([rand_image()], lambda x: fn.color_space_conversion(x, image_type="gray", output_type="rgb"))


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------
from helpers import run_gpu_impl

from streamflow.ops.color_space_conversion import ColorSpaceConversion

_TYPES = ["RGB", "BGR", "GRAY", "YCbCr"]


def test_gpu_color_space_conversion_equals_cpu(kernel_ctx, grid, photo) -> None:
    """Every pair of RGB, BGR, GRAY and YCbCr, bit-identical; gray pixels included (Cb = Cr = 128)."""
    rng = np.random.default_rng(4)
    rgb = [photo, rng.integers(0, 256, (7, 1100, 3), dtype=np.uint8),
           np.repeat(rng.integers(0, 256, (5, 9, 1), dtype=np.uint8), 3, axis=2)]
    for src in _TYPES:
        images = [np.ascontiguousarray(i[..., :1]) if src == "GRAY" else i for i in rgb]
        for dst in _TYPES:
            op = ColorSpaceConversion(src, dst)
            assert_gpu_equals_cpu(kernel_ctx, op, images, what=f"{src} -> {dst}")


def test_gpu_color_space_conversion_errors(kernel_ctx) -> None:
    images = [np.zeros((2, 2, 3), np.float32), np.zeros((2, 2, 1), np.uint8), np.zeros((2, 2, 3), np.uint8)]
    _, failures = run_gpu_impl(kernel_ctx, ColorSpaceConversion("RGB", "GRAY"), images)
    assert "only uint8" in str(failures[0]) and "3 channels" in str(failures[1]) and 2 not in failures
