"""``resize_crop_mirror`` against DALI 2.4 (real photos and the MRI volume), and against the unfused chain.

Tolerance against DALI: 1 on uint8 for linear resampling (float rounding of
the filter); nearest-neighbour float output at an exact scale: exact. Like
DALI's default ``subpixel_scale=True`` (and ``fn.resize``), a fractional
output size keeps its exact scale (a centred source range).
"""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.geometry_cases import RESIZE_CROP_MIRROR, _images, check_case
from helpers import run_arrays

from streamflow import fn


@pytest.mark.parametrize("case", RESIZE_CROP_MIRROR, ids=lambda c: c.name)
def test_resize_crop_mirror_matches_dali(case) -> None:
    check_case("resize_crop_mirror", case)


@pytest.mark.parametrize("resize", [
    dict(size=(90, 120)),
    dict(resize_shorter=77.5),  # fractional: both apply DALI's subpixel_scale
    dict(resize_x=130.3, min_filter="INTERP_CUBIC", mag_filter="INTERP_NN", roi_start=(3.5, 10), roi_end=(80, 140)),
])
def test_resize_crop_mirror_equals_the_chain(resize) -> None:
    images = _images()
    fused = run_arrays(images, lambda x: fn.resize_crop_mirror(x, crop=(70, 80), crop_pos_x=0.3, mirror=3, **resize))[0]
    chain = run_arrays(images, lambda x: fn.flip(fn.crop(fn.resize(x, **resize), crop=(70, 80), crop_pos_x=0.3),
                                                 horizontal=1, vertical=1))[0]
    for a, b in zip(fused, chain):
        assert np.array_equal(a, b)
