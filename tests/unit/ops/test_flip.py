"""``flip``: per-sample horizontal and vertical flips.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    assert_gpu_equals_cpu,
    rand_image,
)

import streamflow as sf
from streamflow import fn


# --- flip ----------------------------------------------------------------
def test_flip_per_sample() -> None:
    imgs = [rand_image(5, 7, seed=i) for i in range(2)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        x = fn.external_source([imgs])
        h = fn.external_source([[np.int32(1), np.int32(0)]])
        return fn.flip(x, horizontal=h, vertical=1)

    with pipe() as p:
        out = p.run()[0]
    assert np.array_equal(out.at(0), imgs[0][::-1, ::-1])
    assert np.array_equal(out.at(1), imgs[1][::-1])


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------

from helpers import odd_images

from streamflow.ops.flip import Flip


@pytest.mark.parametrize("layout", ["HWC", "CHW"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_gpu_flip_equals_cpu(kernel_ctx, grid, layout, dtype) -> None:
    rng = np.random.default_rng(7)
    images = odd_images(rng, 4, dtype=dtype, hi=40) + odd_images(rng, 2, channels=0, dtype=dtype, hi=30)
    args = {"horizontal": [1, 0, 1, 0, 1, 1], "vertical": [0, 1, 1, 0, 1, 0]}
    op = Flip(layout=layout)
    assert_gpu_equals_cpu(kernel_ctx, op, images, args, what=f"flip {layout} {np.dtype(dtype)}")


def test_gpu_flip_of_a_batch_of_mixed_dtypes_equals_cpu(kernel_ctx) -> None:
    # one launch per element type: each output must come back to its own row
    rng = np.random.default_rng(11)
    images = [im.astype(dt) for im, dt in zip(odd_images(rng, 5, hi=30),
                                              (np.uint8, np.float32, np.uint8, np.int16, np.float32))]
    args = {"horizontal": [1, 0, 1, 1, 0], "vertical": [0, 1, 1, 0, 1]}
    gpu = assert_gpu_equals_cpu(kernel_ctx, Flip(), images, args, what="flip of mixed dtypes")
    assert [g.dtype for g in gpu] == [im.dtype for im in images]
