"""``decoders.image_crop``: equals decoding then cropping, per-sample positions.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_decoders

import streamflow as sf
from streamflow import fn
from streamflow.codecs import ImageDecoder
from streamflow.ops.crop import crop_window


@pytest.mark.parametrize("crop,pos", [((64, 80), (0.5, 0.5)), ((100, 33), (0.0, 1.0)), ((17, 120), (0.3, 0.77))])
def test_image_crop_equals_decode_then_crop(encoded, full, crop, pos) -> None:
    out = run_decoders(encoded, lambda x: (
        fn.decoders.image_crop(x, crop=crop, crop_pos_y=pos[0], crop_pos_x=pos[1]),
        fn.crop(fn.decoders.image(x), crop=crop, crop_pos_y=pos[0], crop_pos_x=pos[1]),
    ))
    for i, img in enumerate(full):
        y0, x0, h, w = crop_window(*img.shape[:2], *crop, pos[0], pos[1])
        assert np.array_equal(out[0].at(i), img[y0 : y0 + h, x0 : x0 + w])
        assert np.array_equal(out[0].at(i), out[1].at(i))


def test_image_crop_per_sample_position_and_gray(encoded, full) -> None:
    pos = [np.float32(v) for v in (0.0, 0.25, 1.0, 0.6)]

    @sf.pipeline_def(batch_size=4, num_threads=1, seed=0)
    def pipe():
        x = fn.external_source([list(encoded)])
        px = fn.external_source([pos])
        return fn.decoders.image_crop(x, crop_h=40, crop_w=50, crop_pos_x=px), \
            fn.decoders.image_crop(x, crop=(30, 30), output_type="gray")

    with pipe() as p:
        rgb, gray = p.run()
    dec_gray = ImageDecoder(output_type="gray")
    for i, img in enumerate(full):
        y0, x0, h, w = crop_window(*img.shape[:2], 40, 50, 0.5, float(pos[i]))
        assert np.array_equal(rgb.at(i), img[y0 : y0 + h, x0 : x0 + w])
        g = dec_gray.decode(encoded[i])
        y0, x0, h, w = crop_window(*g.shape[:2], 30, 30)
        assert np.array_equal(gray.at(i), g[y0 : y0 + h, x0 : x0 + w])
