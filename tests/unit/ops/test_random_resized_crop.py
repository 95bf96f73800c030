"""``random_resized_crop``: equals resizing the drawn window.
"""

from __future__ import annotations

import numpy as np
from helpers import (
    assert_gpu_equals_cpu,
    rand_image,
    smooth_image,
)

import streamflow as sf
from streamflow import fn, rng
from streamflow._native import imgproc as K
from streamflow.ops.random_crop_window import RandomCropParams, draw_crop_window


# --- random_resized_crop -----------------------------------------------------
def test_random_resized_crop_equals_resample_of_the_drawn_window() -> None:
    images = [smooth_image(120, 90, seed=1), rand_image(64, 200, seed=2), rand_image(50, 50, seed=3)]

    @sf.pipeline_def(batch_size=3, num_threads=2, seed=0)
    def pipe():
        img = fn.external_source([images])
        return fn.random_resized_crop(img, size=(32, 40), seed=1234), fn.random_resized_crop(img, size=24)

    with pipe() as p:
        batch = p.run()
    seeded, square = batch
    params = RandomCropParams()
    key = rng.RandomKey(1234, 0x5C0F)
    for i, img in enumerate(images):
        sid = int(batch.sample_ids[i])
        d = draw_crop_window(*img.shape[:2], params, rng.sample_generator(key, batch.epoch, sid))
        expect = K.resample(img, (32, 40), roi=(d.y0, d.x0, d.y0 + d.h, d.x0 + d.w))
        assert np.array_equal(seeded.at(i), expect)
    assert square.shape() == [(24, 24, 3)] * 3

    # Deterministic: a new pipeline gives the same crops.
    with pipe() as p:
        again = p.run()
    assert all(np.array_equal(again[1].at(i), square.at(i)) for i in range(3))


def test_random_resized_crop_min_and_mag_filters() -> None:
    """min_filter shrinks, mag_filter enlarges (per axis, as fn.resize); DALI's batching knobs are accepted."""
    images = [smooth_image(120, 90, seed=1), rand_image(64, 200, seed=2)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        img = fn.external_source([images])
        return fn.random_resized_crop(img, size=(50, 30), seed=7, min_filter="INTERP_NN", mag_filter="INTERP_CUBIC",
                                      minibatch_size=4, temp_buffer_hint=1 << 20)

    with pipe() as p:
        batch = p.run()
    key = rng.RandomKey(7, 0x5C0F)
    for i, img in enumerate(images):
        d = draw_crop_window(*img.shape[:2], RandomCropParams(), rng.sample_generator(key, batch.epoch,
                                                                                       int(batch.sample_ids[i])))
        expect = K.resample(img, (50, 30), roi=(d.y0, d.x0, d.y0 + d.h, d.x0 + d.w), interp="nn", mag_interp="cubic")
        assert np.array_equal(batch[0].at(i), expect)
# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------
import pytest
from helpers import assert_same_outputs, odd_images, run_cpu_op, run_gpu_impl

from streamflow.ops.random_resized_crop import RandomResizedCrop


@pytest.mark.parametrize("interp, antialias, dtype", [
    ("INTERP_LINEAR", True, None), ("INTERP_CUBIC", False, "float"), ("INTERP_LANCZOS3", True, "uint8"),
    ("INTERP_NN", True, None), ("INTERP_TRIANGULAR", True, "float"),
])
def test_gpu_random_resized_crop_equals_cpu(kernel_ctx, grid, interp, antialias, dtype) -> None:
    """The same drawn windows (same key and sample ids) and the resize kernels: bit-identical."""
    rng = np.random.default_rng(6)
    images = (odd_images(rng, 3, hi=120) + odd_images(rng, 1, channels=0, hi=60)
              + [(odd_images(rng, 1, hi=50)[0].astype(np.uint16) * 200), odd_images(rng, 1, dtype=np.float32)[0]])
    params = RandomCropParams.from_args("random_resized_crop", (0.08, 1.0), (0.75, 1.333), 10)
    op = RandomResizedCrop((33, 47), params, interp=interp, antialias=antialias, dtype=dtype)
    assert_gpu_equals_cpu(kernel_ctx, op, images, what=f"{interp} antialias={antialias} dtype={dtype}")


def test_gpu_random_resized_crop_min_and_mag_filters_equal_cpu(kernel_ctx) -> None:
    images = odd_images(np.random.default_rng(3), 6, lo=9, hi=90)
    op = RandomResizedCrop((21, 17), RandomCropParams(), interp="INTERP_NN", mag_interp="INTERP_CUBIC", seed=5)
    got, fails = run_gpu_impl(kernel_ctx, op, images)
    want, want_fails = run_cpu_op(op, images)
    assert not fails and not want_fails
    assert_same_outputs(got, want, "min/mag filters")
