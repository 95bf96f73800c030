"""The fused resize + crop_mirror_normalize: bit-identical to the pair.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import reference as ref
from helpers import (
    assert_gpu_equals_cpu,
    rand_image,
    run_batch,
)

from streamflow import fn
from streamflow._native import imgproc as K
from streamflow.types import DataType


def test_resize_then_cmn_fusion_equals_unfused() -> None:
    imgs = [rand_image(61 + i, 83 - i, seed=i) for i in range(4)]

    def fused(x):
        return fn.crop_mirror_normalize(fn.resize(x, resize_x=40, resize_y=36), crop=(24, 30), mirror=fn.random.coin_flip(), mean=[1, 2, 3])

    def unfused(x):
        r = fn.resize(x, resize_x=40, resize_y=36)
        return r, fn.crop_mirror_normalize(r, crop=(24, 30), mirror=fn.random.coin_flip(), mean=[1, 2, 3])

    a = run_batch(imgs, fused)[0].as_tensor()
    b = run_batch(imgs, unfused)[1].as_tensor()
    assert np.array_equal(a, b)


@pytest.mark.parametrize("resize", [
    dict(resize_shorter=41.3),  # fractional sizes: DALI's subpixel_scale windows
    dict(resize_x=57.5, min_filter="INTERP_LANCZOS3", mag_filter="INTERP_NN", antialias=False),
    dict(size=(-50, 33.3), roi_start=(5.5, 70), roi_end=(60, 2.25), dtype="FLOAT", interp_type="INTERP_CUBIC"),
])
def test_fusion_equals_unfused_with_fractional_sizes_filters_and_rois(resize) -> None:
    imgs = [rand_image(61 + i, 83 - 7 * i, seed=i) for i in range(4)]
    cmn = dict(crop=(24, 30), mean=[1, 2, 3], std=[3, 2, 1], crop_pos_x=0.8)

    def fused(x):
        return fn.crop_mirror_normalize(fn.resize(x, **resize), mirror=fn.random.coin_flip(), **cmn)

    def unfused(x):
        r = fn.resize(x, **resize)
        return r, fn.crop_mirror_normalize(r, mirror=fn.random.coin_flip(), **cmn)

    a = run_batch(imgs, fused)[0].as_tensor()
    b = run_batch(imgs, unfused)[1].as_tensor()
    assert np.array_equal(a, b)


PHOTOS = Path(__file__).resolve().parents[2] / "data" / "photos"


def _photo(name: str) -> np.ndarray:
    from PIL import Image

    with Image.open(PHOTOS / name) as im:
        return np.asarray(im.convert("RGB"))


def _img(rng: np.random.Generator, h: int, w: int, c: int | None, dtype=np.uint8) -> np.ndarray:
    shape = (h, w) if c is None else (h, w, c)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.random(shape, dtype=np.float32)


MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]


STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def test_fused_resize_crop_cmn_pipeline() -> None:
    """Resize 256 + centre crop 224 via window, then CMN: equals crop of the full resize."""
    img = _photo("chelsea.png")
    win = K.resampled_size_window((256, 256), (224, 224))
    assert win == (16, 16, 224, 224)
    crop = K.resample(img, (256, 256), window=win)
    full = K.resample(img, (256, 256))
    np.testing.assert_array_equal(crop, full[16:240, 16:240])
    got = K.crop_mirror_normalize(crop, mirror=True, mean=MEAN, std=STD)
    want = ref.cmn_ref(full, win, mirror=True, mean=MEAN, std=STD)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


@pytest.mark.parametrize("interp", ["nn", "linear", "cubic", "lanczos3", "gaussian"])
@pytest.mark.parametrize("resize_dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_resample_normalize_bit_identical_to_the_pair(interp: str, resize_dtype, layout: str, channels: int) -> None:
    """One pass gives exactly resample() then crop_mirror_normalize(), bit for bit."""
    rng = np.random.default_rng(channels)
    sources = [
        _img(rng, 53, 71, channels),
        # float input past [0, 255], with NaN and inf: exercises the uint8 clipping
        (rng.standard_normal((29, 22, channels)) * 200).astype(np.float32),
    ]
    sources[1][3, 4] = np.nan
    sources[1][5, 6] = np.inf
    mean, std = [10.0, 120.5, 3.0, 250.0][:channels], [58.4, 1.0, 0.3, 7.0][:channels]
    for src in sources:
        for size, window in (((224, 224), None), ((17, 90), None), ((40, 60), (5, 7, 30, 41))):
            for mirror in (False, True):
                want = K.crop_mirror_normalize(
                    K.resample(src, size, window=window, interp=interp, out_dtype=resize_dtype),
                    mirror=mirror, mean=mean, std=std, scale=1.5, shift=-0.25, layout=layout,
                )  # fmt: skip
                got = K.resample_normalize(
                    src, size, window=window, interp=interp, resize_dtype=resize_dtype,
                    mirror=mirror, mean=mean, std=std, scale=1.5, shift=-0.25, layout=layout,
                )  # fmt: skip
                assert got.shape == want.shape and got.dtype == np.float32
                assert np.array_equal(_bits(got), _bits(want)), (src.dtype, size, window, mirror)


def test_resample_normalize_writes_into_out_and_matches_roi() -> None:
    img = _photo("chelsea.png")
    batch = np.full((2, 3, 24, 30), -1.0, np.float32)
    got = K.resample_normalize(img, (24, 30), roi=(40.5, 300.0, 10.0, 20.0), mean=MEAN, std=STD, out=batch[1])
    assert got is batch[1] or np.shares_memory(got, batch)
    want = K.crop_mirror_normalize(K.resample(img, (24, 30), roi=(40.5, 300.0, 10.0, 20.0)), mean=MEAN, std=STD)
    assert np.array_equal(batch[1], want)
    assert (batch[0] == -1.0).all()  # the other row is untouched


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"resize_dtype": np.int16}, "resize_dtype"),
        ({"layout": "NCHW"}, "layout"),
        ({"mean": [1, 2]}, "mean"),
        ({"std": [1, 0, 1]}, "non-zero"),
        ({"window": (0, 0, 9, 9)}, "outside"),
        ({"out": np.zeros((3, 8, 8), np.float64)}, "float32"),
        ({"out": np.zeros((8, 8, 3), np.float32)}, "shape"),
        ({"out": np.zeros((3, 8, 16), np.float32)[:, :, ::2]}, "C-contiguous"),
    ],
)
def test_resample_normalize_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        K.resample_normalize(np.zeros((10, 10, 3), np.uint8), (8, 8), **kwargs)


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------

from helpers import odd_images

from streamflow.ops.crop import CropSpec
from streamflow.ops.crop_mirror_normalize import CropMirrorNormalize
from streamflow.ops.resize import Resize, ResizeSpec
from streamflow.ops.resize_crop_mirror_normalize import ResizeCropMirrorNormalize


@pytest.mark.parametrize("out", [DataType.FLOAT, DataType.FLOAT16, DataType.UINT8])
@pytest.mark.parametrize("resize_dtype", [None, "FLOAT"])
@pytest.mark.parametrize("interp", ["INTERP_LINEAR", "INTERP_CUBIC", "INTERP_NN"])
def test_gpu_fused_equals_cpu_fused(kernel_ctx, out, resize_dtype, interp) -> None:
    rng = np.random.default_rng(2)
    images = odd_images(rng, 5, lo=40, hi=150)
    fused = ResizeCropMirrorNormalize(
        Resize(ResizeSpec.from_args(resize_shorter=64, dtype=resize_dtype, interp_type=interp)),
        CropMirrorNormalize(CropSpec.from_args("crop_mirror_normalize", crop=(56, 70), out_of_bounds_policy="pad"),
                            mean=MEAN, std=STD, dtype=out, output_layout="CHW"),
    )
    args = {"mirror": [0, 1, 1, 0, 1], "crop_pos_y": [0.5, 0.0, 1.0, 0.3, 2.0]}  # the last is partly outside
    assert_gpu_equals_cpu(kernel_ctx, fused, images, args, what=f"fused {out} resize dtype {resize_dtype} {interp}")


@pytest.mark.parametrize("filters", [("INTERP_NN", "INTERP_CUBIC"), ("INTERP_LANCZOS3", "INTERP_NN")])
def test_gpu_fused_equals_cpu_with_min_mag_filters_and_rois(kernel_ctx, filters) -> None:
    rng = np.random.default_rng(3)
    images = odd_images(rng, 4, lo=40, hi=150)
    fused = ResizeCropMirrorNormalize(
        Resize(ResizeSpec.from_args(resize_x=77.7, min_filter=filters[0], mag_filter=filters[1])),
        CropMirrorNormalize(CropSpec.from_args("crop_mirror_normalize", crop=(30, 40)), mean=MEAN, std=STD),
    )
    args = {"resize.roi_start": [np.array([2.5, 30.0]), np.array([0.0, 0.0]), np.array([30.0, 1.0]),
                                 np.array([1.0, 1.0])],
            "resize.roi_end": [np.array([38.0, 3.0]), np.array([40.0, 40.0]), np.array([1.0, 39.5]),
                               np.array([39.0, 39.0])]}
    assert_gpu_equals_cpu(kernel_ctx, fused, images, args, what=f"fused min/mag {filters} with rois")
