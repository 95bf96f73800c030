"""``random_resized_crop``: equals resizing the drawn window.
"""

from __future__ import annotations

import numpy as np
from helpers import (
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
