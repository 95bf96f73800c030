"""``decoders.image_slice``: DALI's slice rounding and axes; equals decoding then slicing.
"""

from __future__ import annotations

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn
from streamflow.ops.decoders.image_slice import slice_window


def test_slice_window_rounding_and_axes() -> None:
    # (x, y) order by default: anchor (0.25, 0.5), shape (0.5, 0.25) of 100x200 (HxW).
    assert slice_window(100, 200, [0.25, 0.5], [0.5, 0.25]) == (50, 50, 25, 100)
    assert slice_window(100, 200, [0.25, 0.5], [0.5, 0.25], axes=(0, 1)) == (25, 100, 50, 50)
    # Halves away from zero; end rounded on its own: 0.5 * 5 = 2.5 -> 3, 1.0 * 5 -> 5.
    assert slice_window(5, 5, [0.5, 0.5], [0.5, 0.5]) == (3, 3, 2, 2)
    # Integer values are pixels whatever the flags; float with normalized_*=False too.
    assert slice_window(100, 200, np.array([10, 20]), np.array([30, 40])) == (20, 10, 40, 30)
    assert slice_window(100, 200, [10.0, 20.0], [0.5, 0.5], normalized_anchor=False) == (20, 10, 50, 100)
    with pytest.raises(ValueError, match="2 values"):
        slice_window(10, 10, [0.1], [0.5, 0.5])


def test_image_slice_equals_decode_then_slice(encoded, full) -> None:
    anchors = [np.array(v, dtype=np.float32) for v in ([0.1, 0.2], [0.0, 0.0], [0.5, 0.25], [0.33, 0.41])]
    shapes = [np.array(v, dtype=np.float32) for v in ([0.5, 0.5], [1.0, 1.0], [0.5, 0.75], [0.2, 0.3])]

    @sf.pipeline_def(batch_size=4, num_threads=2, seed=0)
    def pipe():
        x = fn.external_source([list(encoded)])
        a = fn.external_source([anchors])
        s = fn.external_source([shapes])
        return (fn.decoders.image_slice(x, a, s), fn.decoders.image_slice(x, [0.1, 0.2], [0.3, 0.4], axis_names="HW"),
                fn.decoders.image_slice(x, [5, 7], [20, 11]))

    with pipe() as p:
        xy, hw, px = p.run()
    for i, img in enumerate(full):
        H, W = img.shape[:2]
        y0, x0, h, w = slice_window(H, W, anchors[i], shapes[i])
        assert (h, w) == xy.at(i).shape[:2]
        assert np.array_equal(xy.at(i), img[y0 : y0 + h, x0 : x0 + w])
        y0, x0, h, w = slice_window(H, W, [0.1, 0.2], [0.3, 0.4], axes=(0, 1))
        assert np.array_equal(hw.at(i), img[y0 : y0 + h, x0 : x0 + w])
        assert np.array_equal(px.at(i), img[7:18, 5:25])  # x=5, y=7, w=20, h=11
