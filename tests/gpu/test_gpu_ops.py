"""Every GPU operator against its CPU reference on random odd-sized inputs.

Exact for crop, flip and crop_mirror_normalize (same float operations, no
FMA); within 1 LSB for resize (uint8) and the fused resize + normalize.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu_helpers import odd_images, run_both

from streamflow.ops.crop import Crop, CropSpec
from streamflow.ops.crop_mirror_normalize import CropMirrorNormalize
from streamflow.ops.flip import Flip
from streamflow.ops.resize import Resize, ResizeSpec
from streamflow.ops.resize_crop_mirror_normalize import ResizeCropMirrorNormalize
from streamflow.types import DataType

pytestmark = pytest.mark.gpu

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def _assert_lsb(gpu, cpu, what, max_fraction=0.01):
    for i, (g, c) in enumerate(zip(gpu, cpu)):
        assert g.shape == c.shape and g.dtype == c.dtype, (what, i, g.shape, c.shape, g.dtype, c.dtype)
        d = np.abs(g.astype(np.float64) - c.astype(np.float64))
        if np.dtype(c.dtype) == np.uint8:
            assert d.max() <= 1, f"{what} sample {i}: max |gpu - cpu| = {d.max()}"
            assert (d > 0).mean() <= max_fraction, f"{what} sample {i}: {(d > 0).mean():.4%} differ"
        else:
            tol = 1e-3 * max(1.0, float(np.abs(c).max()))
            assert d.max() <= tol, f"{what} sample {i}: max |gpu - cpu| = {d.max()} > {tol}"


@pytest.mark.parametrize("interp", ["INTERP_LINEAR", "INTERP_NN", "INTERP_CUBIC", "INTERP_LANCZOS3",
                                    "INTERP_GAUSSIAN", "INTERP_TRIANGULAR"])
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_down_and_up(interp, antialias):
    rng = np.random.default_rng(hash((interp, antialias)) % 2**32)
    images = odd_images(rng, 7)
    for size in [(37, 53), (224, 224), (411, 333)]:
        op = Resize(ResizeSpec.from_args(size=size, interp_type=interp, antialias=antialias))
        gpu, cpu, gf, cf = run_both(op, images)
        assert not gf and not cf
        _assert_lsb(gpu, cpu, f"resize {interp} aa={antialias} {size}")


@pytest.mark.parametrize("dtype", ["UINT8", "FLOAT"])
def test_resize_shorter_roi_and_float(dtype):
    rng = np.random.default_rng(5)
    images = odd_images(rng, 6)
    op = Resize(ResizeSpec.from_args(resize_shorter=97, dtype=dtype))
    gpu, cpu, _, _ = run_both(op, images)
    _assert_lsb(gpu, cpu, f"resize_shorter dtype={dtype}")
    # per-sample roi (flipped on one axis) and one channel
    gray = odd_images(rng, 5, channels=1)
    starts = [np.array([1.5, 2.25]) for _ in gray]
    ends = [np.array([g.shape[0] - 2.0, 0.5]) for g in gray]
    op = Resize(ResizeSpec.from_args(size=(41, 59), dtype=dtype))
    gpu, cpu, _, _ = run_both(op, gray, {"roi_start": starts, "roi_end": ends})
    _assert_lsb(gpu, cpu, "resize roi")


def test_resize_float_input():
    rng = np.random.default_rng(6)
    images = odd_images(rng, 5, dtype=np.float32)
    op = Resize(ResizeSpec.from_args(size=(63, 45)))
    gpu, cpu, _, _ = run_both(op, images)
    _assert_lsb(gpu, cpu, "resize float input")


@pytest.mark.parametrize("policy", ["error", "pad", "trim_to_shape"])
def test_crop_exact(policy):
    rng = np.random.default_rng(11)
    images = odd_images(rng, 9, lo=41)
    args = {"crop_pos_x": list(rng.random(9)), "crop_pos_y": list(rng.random(9))}
    size = (39, 33) if policy == "error" else (80, 71)
    op = Crop(CropSpec.from_args("crop", crop=size, out_of_bounds_policy=policy, fill_values=[7, 8, 9]))
    gpu, cpu, gf, cf = run_both(op, images, args)
    assert sorted(gf) == sorted(cf)
    for i, (g, c) in enumerate(zip(gpu, cpu)):
        if c is None:
            continue
        np.testing.assert_array_equal(g, c, err_msg=f"crop {policy} sample {i}")


def test_crop_gray_and_float():
    rng = np.random.default_rng(12)
    op = Crop(CropSpec.from_args("crop", crop=(17, 23)))
    for images in (odd_images(rng, 4, channels=0, lo=31), odd_images(rng, 4, dtype=np.float32, lo=31)):
        gpu, cpu, _, _ = run_both(op, images)
        for g, c in zip(gpu, cpu):
            np.testing.assert_array_equal(g, c)


@pytest.mark.parametrize("layout", ["HWC", "CHW"])
def test_flip_exact(layout):
    rng = np.random.default_rng(13)
    images = odd_images(rng, 8)
    if layout == "CHW":
        images = [np.ascontiguousarray(i.transpose(2, 0, 1)) for i in images]
    args = {"horizontal": [int(v) for v in rng.integers(0, 2, 8)], "vertical": [int(v) for v in rng.integers(0, 2, 8)]}
    gpu, cpu, _, _ = run_both(Flip(layout=layout), images, args)
    for g, c in zip(gpu, cpu):
        np.testing.assert_array_equal(g, c)
    gray = odd_images(rng, 3, channels=0)
    gpu, cpu, _, _ = run_both(Flip(1, 1), gray)
    for g, c in zip(gpu, cpu):
        np.testing.assert_array_equal(g, c)


@pytest.mark.parametrize("dtype", [DataType.FLOAT, DataType.FLOAT16, DataType.UINT8])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_crop_mirror_normalize(dtype, layout):
    rng = np.random.default_rng(17)
    images = odd_images(rng, 8, lo=31)
    mirror = [int(v) for v in rng.integers(0, 2, 8)]
    kw = dict(mean=MEAN, std=STD, dtype=dtype, output_layout=layout)
    if dtype is DataType.UINT8:
        kw.update(mean=[10.0, 20.0, 30.0], std=[2.0, 1.5, 1.0], shift=3.0)
    for spec, pad_output in ((CropSpec.from_args("cmn", crop=(29, 27)), False),
                             (CropSpec.from_args("cmn", crop=(64, 47), out_of_bounds_policy="pad", fill_values=[1, 2, 3]), True),
                             (CropSpec(), False)):
        op = CropMirrorNormalize(spec, pad_output=pad_output, **kw)
        gpu, cpu, gf, cf = run_both(op, images, {"mirror": mirror})
        assert not gf and not cf
        for i, (g, c) in enumerate(zip(gpu, cpu)):
            assert g.shape == c.shape and g.dtype == c.dtype
            np.testing.assert_allclose(g.astype(np.float64), c.astype(np.float64), rtol=0, atol=1e-5,
                                       err_msg=f"cmn {dtype} {layout} pad={pad_output} sample {i}")


@pytest.mark.parametrize("out", [DataType.FLOAT, DataType.FLOAT16])
def test_fused_resize_crop_mirror_normalize(out):
    rng = np.random.default_rng(19)
    images = odd_images(rng, 10, lo=61, hi=501)
    mirror = [int(v) for v in rng.integers(0, 2, 10)]
    for crop, policy in (((224, 224), "error"), ((250, 240), "pad")):
        resize = Resize(ResizeSpec.from_args(resize_x=237, resize_y=245))
        cmn = CropMirrorNormalize(CropSpec.from_args("cmn", crop=crop, out_of_bounds_policy=policy),
                                  mean=MEAN, std=STD, dtype=out, mirror=0)
        op = ResizeCropMirrorNormalize(resize, cmn)
        gpu, cpu, gf, cf = run_both(op, images, {"mirror": mirror})
        assert not gf and not cf
        lsb = max(1.0 / s for s in STD)
        for i, (g, c) in enumerate(zip(gpu, cpu)):
            assert g.shape == c.shape and g.dtype == c.dtype
            d = np.abs(g.astype(np.float64) - c.astype(np.float64))
            assert d.max() <= lsb + 2e-3, f"fused {crop} sample {i}: max diff {d.max()}"
            assert (d > 1e-3).mean() <= 0.01
