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
