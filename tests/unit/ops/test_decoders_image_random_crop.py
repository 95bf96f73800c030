"""``decoders.image_random_crop``: decodes exactly the drawn window, deterministically.
"""

from __future__ import annotations

import numpy as np
from helpers import run_decoders

from streamflow import fn, rng
from streamflow.ops.random_crop_window import RandomCropParams, draw_crop_window


def test_image_random_crop_equals_the_drawn_window(encoded, full) -> None:
    out = run_decoders(encoded * 2, lambda x: fn.decoders.image_random_crop(x, seed=99, random_area=[0.1, 0.5]))
    params = RandomCropParams.from_args("t", [0.1, 0.5])
    key = rng.RandomKey(99, 0x5C0F)
    windows = set()
    for i, img in enumerate(full * 2):
        d = draw_crop_window(*img.shape[:2], params, rng.sample_generator(key, out.epoch, int(out.sample_ids[i])))
        assert np.array_equal(out[0].at(i), img[d.y0 : d.y0 + d.h, d.x0 : d.x0 + d.w])
        windows.add(d.window)
    assert len(windows) == 8  # every sample draws its own window


def test_image_random_crop_defaults_are_deterministic(encoded) -> None:
    a = run_decoders(encoded, lambda x: fn.decoders.image_random_crop(x))
    b = run_decoders(encoded, lambda x: fn.decoders.image_random_crop(x))
    assert all(np.array_equal(a[0].at(i), b[0].at(i)) for i in range(len(encoded)))
