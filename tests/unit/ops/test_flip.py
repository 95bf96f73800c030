"""``flip``: per-sample horizontal and vertical flips.
"""

from __future__ import annotations

import numpy as np
from helpers import (
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
