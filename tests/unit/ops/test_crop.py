"""``crop``: anchor rounding, fractional sizes, exact slicing and the out-of-bounds policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    rand_image,
    run_batch,
)

import streamflow as sf
from streamflow import fn
from streamflow.ops.crop import crop_window


# --- crop ----------------------------------------------------------------
@pytest.mark.parametrize(
    "extent,size,pos,rounding,anchor",
    [(100, 50, 0.5, "round", 25), (101, 50, 0.5, "round", 26), (101, 50, 0.5, "truncate", 25),
     (10, 3, 1.0, "round", 7), (10, 14, 0.5, "round", -2), (10, 13, 0.5, "round", -2)],
)
def test_crop_anchor_rounding(extent, size, pos, rounding, anchor) -> None:
    y0, x0, h, w = crop_window(extent, extent, size, size, pos, pos, rounding)
    assert (y0, x0, h, w) == (anchor, anchor, size, size)


def test_fractional_crop_sizes_truncate() -> None:
    assert crop_window(10, 10, 4.9, 3.2)[2:] == (4, 3)


def test_crop_is_exact_slicing_and_policies() -> None:
    img = rand_image(20, 30, seed=4)
    out = run_batch([img], lambda x: fn.crop(x, crop=(10, 12), crop_pos_x=0.25, crop_pos_y=1.0))
    x0 = int(np.floor(0.25 * 18 + 0.5))
    assert np.array_equal(out[0].at(0), img[10:20, x0 : x0 + 12])
    with pytest.raises(sf.PipelineError, match="does not fit the 20x30 image"):
        run_batch([img], lambda x: fn.crop(x, crop=(24, 12)))
    padded = run_batch([img], lambda x: fn.crop(x, crop=(24, 30), out_of_bounds_policy="pad", fill_values=[1, 2, 3]))[0].at(0)
    assert padded.shape == (24, 30, 3)
    assert np.array_equal(padded[2:22], img) and (padded[0] == [1, 2, 3]).all() and (padded[23] == [1, 2, 3]).all()
    trimmed = run_batch([img], lambda x: fn.crop(x, crop=(24, 12), out_of_bounds_policy="trim_to_shape"))[0].at(0)
    assert trimmed.shape == (20, 12, 3)


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------

from helpers import assert_same_outputs, odd_images, run_cpu_op, run_gpu_impl

from streamflow.ops.crop import Crop, CropSpec


@pytest.mark.parametrize("policy", ["error", "pad", "trim_to_shape"])
def test_gpu_crop_equals_cpu(kernel_ctx, grid, policy) -> None:
    rng = np.random.default_rng(3)
    images = odd_images(rng, 5, lo=40, hi=90)
    size = (61, 45) if policy == "error" else (101, 77)
    op = Crop(CropSpec.from_args("crop", crop=size, crop_pos_x=0.3, crop_pos_y=0.8,
                                 out_of_bounds_policy=policy, fill_values=(7, 8, 9)))
    gpu, gf = run_gpu_impl(kernel_ctx, op, images)
    cpu, cf = run_cpu_op(op, images)
    assert set(gf) == set(cf)
    assert_same_outputs(gpu, cpu, f"crop {policy}")


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64])
@pytest.mark.parametrize("channels", [0, 1, 3, 12])
def test_gpu_crop_any_element_size_and_channel_count(kernel_ctx, dtype, channels) -> None:
    rng = np.random.default_rng(channels)
    images = odd_images(rng, 3, channels=channels, dtype=dtype, lo=20, hi=50)
    op = Crop(CropSpec.from_args("crop", crop=(30, 41), crop_pos_x=0.9, out_of_bounds_policy="pad", fill_values=5))
    gpu, _ = run_gpu_impl(kernel_ctx, op, images)
    cpu, _ = run_cpu_op(op, images)
    assert_same_outputs(gpu, cpu, f"crop {np.dtype(dtype)} C={channels}")
