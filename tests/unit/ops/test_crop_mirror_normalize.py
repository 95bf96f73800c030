"""``crop_mirror_normalize``: the operator against numpy, and its native kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
import reference as ref
from helpers import (
    assert_gpu_equals_cpu,
    rand_image,
    run_batch,
)

from streamflow import fn, types
from streamflow._native import imgproc as K
from streamflow.types import DataType


# --- crop_mirror_normalize ---------------------------------------------------
def test_cmn_against_numpy_float32() -> None:
    img = rand_image(31, 45, seed=5)
    mean, std = [120.0, 110.0, 100.0], [50.0, 60.0, 70.0]
    out = run_batch([img, img], lambda x: fn.crop_mirror_normalize(
        x, crop=(16, 20), mean=mean, std=std, scale=2.0, shift=0.5, mirror=fn.external_source([[np.int32(0), np.int32(1)]])))
    y0, x0 = int(np.floor(0.5 * 15 + 0.5)), int(np.floor(0.5 * 25 + 0.5))
    crop = img[y0 : y0 + 16, x0 : x0 + 20].astype(np.float32)
    ref = (2.0 * (crop - np.float32(mean)) / np.float32(std) + 0.5).transpose(2, 0, 1)
    np.testing.assert_allclose(out[0].at(0), ref, atol=1e-5)
    np.testing.assert_allclose(out[0].at(1), ref[:, :, ::-1], atol=1e-5)
    assert out[0].layout == "CHW" and out[0].dtype is types.FLOAT


def test_cmn_defaults_return_image_as_chw_float() -> None:
    img = rand_image(9, 11, seed=6)
    out = run_batch([img], lambda x: fn.crop_mirror_normalize(x))[0].at(0)
    assert out.dtype == np.float32 and np.array_equal(out, img.transpose(2, 0, 1).astype(np.float32))


def test_cmn_pad_output_layout_and_dtypes() -> None:
    img = rand_image(6, 6, seed=7)
    out = run_batch([img], lambda x: fn.crop_mirror_normalize(x, pad_output=True, output_layout="HWC", dtype=types.FLOAT16))[0].at(0)
    assert out.shape == (6, 6, 4) and out.dtype == np.float16 and (out[..., 3] == 0).all()
    u8 = run_batch([img], lambda x: fn.crop_mirror_normalize(x, mean=0.5, dtype=types.UINT8))[0].at(0)
    assert np.array_equal(u8, np.floor(img.astype(np.float32) - 0.5 + 0.5).clip(0, 255).astype(np.uint8).transpose(2, 0, 1))


def _img(rng: np.random.Generator, h: int, w: int, c: int | None, dtype=np.uint8) -> np.ndarray:
    shape = (h, w) if c is None else (h, w, c)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.random(shape, dtype=np.float32)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"src": np.zeros((4, 4, 3, 1), np.uint8)}, "HWC"),
        ({"src": np.zeros((4, 4, 3), np.int32)}, "dtype"),
        ({"mean": [1, 2]}, "mean"),
        ({"std": [1, 0, 1]}, "non-zero"),
        ({"layout": "NHWC"}, "layout"),
        ({"window": (0, 0, 0, 3)}, "positive size"),
        ({"out_dtype": np.int16}, "out_dtype"),
        ({"fill_values": [1, 2]}, "fill_values"),
        ({"out": np.zeros((3, 10, 9), np.float32)}, "shape"),
        ({"out": np.zeros((10, 10, 3), np.float32).transpose(2, 0, 1)}, "contiguous"),
    ],
)
def test_cmn_errors(kwargs: dict, match: str) -> None:
    args = {"src": np.zeros((10, 10, 3), np.uint8)}
    args.update(kwargs)
    src = args.pop("src")
    with pytest.raises(ValueError, match=match):
        K.crop_mirror_normalize(src, **args)


MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]


STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_cmn_matches_numpy(mirror: bool, layout: str, dtype) -> None:
    rng = np.random.default_rng(12)
    src = _img(rng, 37, 45, 3, dtype)
    if dtype == np.float32:
        src = src * 255
    for win in [(0, 0, 37, 45), (5, 7, 20, 31), (3, 0, 1, 45)]:
        want = ref.cmn_ref(
            src, win, mirror=mirror, mean=MEAN, std=STD, scale=1.5, shift=0.25, layout=layout
        )
        got = K.crop_mirror_normalize(
            src, window=win, mirror=mirror, mean=MEAN, std=STD, scale=1.5, shift=0.25, layout=layout
        )
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_cmn_defaults_whole_image_chw() -> None:
    rng = np.random.default_rng(13)
    src = _img(rng, 11, 13, 3)
    got = K.crop_mirror_normalize(src)
    np.testing.assert_array_equal(got, src.transpose(2, 0, 1).astype(np.float32))


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_cmn_pad_output_and_fill_outside(layout: str) -> None:
    rng = np.random.default_rng(14)
    src = _img(rng, 20, 30, 3)
    win = (-3, 25, 10, 12)  # leaves the image at the top and the right
    for mirror in (False, True):
        for fill in ([7.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]):
            want = ref.cmn_ref(
                src,
                win,
                mirror=mirror,
                mean=MEAN,
                std=STD,
                layout=layout,
                pad_channels=1,
                fill=fill,
            )
            got = K.crop_mirror_normalize(
                src,
                window=win,
                mirror=mirror,
                mean=MEAN,
                std=STD,
                layout=layout,
                pad_output=True,
                fill_values=fill,
            )
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got = K.crop_mirror_normalize(src, pad_output=True)
    assert got.shape == (4, 20, 30) and not got[3].any()


def test_cmn_window_fully_outside_is_fill() -> None:
    src = np.full((5, 5, 3), 200, np.uint8)
    got = K.crop_mirror_normalize(src, window=(10, 10, 2, 3), fill_values=[9.0])
    assert (got == 9.0).all()


def test_cmn_out_dtypes_and_out_param() -> None:
    rng = np.random.default_rng(15)
    src = _img(rng, 16, 18, 3)
    want = ref.cmn_ref(src, (0, 0, 16, 18), mirror=True, mean=MEAN, std=STD)
    f16 = K.crop_mirror_normalize(src, mirror=True, mean=MEAN, std=STD, out_dtype=np.float16)
    np.testing.assert_array_equal(f16, want.astype(np.float16))
    u8 = K.crop_mirror_normalize(
        src, mirror=True, mean=[10, 20, 30], std=[0.5, 1, 2], out_dtype=np.uint8
    )
    w8 = ref.cmn_ref(src, (0, 0, 16, 18), mirror=True, mean=[10, 20, 30], std=[0.5, 1, 2])
    np.testing.assert_array_equal(u8, np.floor(np.clip(w8, 0, 255) + 0.5).astype(np.uint8))
    batch = np.zeros((2, 3, 16, 18), np.float32)
    res = K.crop_mirror_normalize(src, mirror=True, mean=MEAN, std=STD, out=batch[1])
    assert res is batch[1] or np.shares_memory(res, batch)
    np.testing.assert_allclose(batch[1], want, rtol=1e-5, atol=1e-5)
    assert not batch[0].any()


def test_cmn_other_channel_counts() -> None:
    rng = np.random.default_rng(16)
    for c in (None, 2, 4, 5):
        src = _img(rng, 9, 11, c)
        n = 1 if c is None else c
        mean = list(range(n))
        std = [1.0 + i for i in range(n)]
        want = ref.cmn_ref(src, (1, -2, 6, 12), mirror=True, mean=mean, std=std)
        got = K.crop_mirror_normalize(src, window=(1, -2, 6, 12), mirror=True, mean=mean, std=std)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------

from helpers import assert_same_outputs, odd_images, run_cpu_op, run_gpu_impl

from streamflow.ops.crop import CropSpec
from streamflow.ops.crop_mirror_normalize import CropMirrorNormalize


@pytest.mark.parametrize("dtype", [DataType.FLOAT, DataType.FLOAT16, DataType.UINT8])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_gpu_cmn_equals_cpu(kernel_ctx, grid, dtype, layout) -> None:
    rng = np.random.default_rng(11)
    images = odd_images(rng, 4, lo=30, hi=80) + odd_images(rng, 2, dtype=np.float32, lo=30, hi=60)
    op = CropMirrorNormalize(
        CropSpec.from_args("crop_mirror_normalize", crop=(28, 33), out_of_bounds_policy="pad", fill_values=(1, 2, 3)),
        mean=MEAN, std=STD, scale=1.5, shift=0.25, dtype=dtype, output_layout=layout, pad_output=True,
    )
    args = {"mirror": [1, 0, 1, 0, 0, 1], "crop_pos_x": [0.0, 0.5, 1.0, 0.2, 1.7, -0.4]}
    assert_gpu_equals_cpu(kernel_ctx, op, images, args, what=f"cmn {dtype} {layout}")


@pytest.mark.parametrize("channels", [0, 1, 4, 9])
def test_gpu_cmn_any_channel_count(kernel_ctx, channels) -> None:
    rng = np.random.default_rng(channels)
    images = odd_images(rng, 3, channels=channels, lo=10, hi=40)
    c = max(channels, 1)
    op = CropMirrorNormalize(CropSpec.from_args("crop_mirror_normalize"), mean=list(range(c)), std=[2.0 + i for i in range(c)],
                             pad_output=True)
    gpu, _ = run_gpu_impl(kernel_ctx, op, images)
    cpu, _ = run_cpu_op(op, images)
    assert_same_outputs(gpu, cpu, f"cmn C={channels}")
