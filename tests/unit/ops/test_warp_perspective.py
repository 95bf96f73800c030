"""``experimental.warp_perspective`` against DALI 2.4's CPU operator on real photos.

Tolerances: nearest exact; linear 1 on uint8/uint16 (measured: at most 0.02%
of uint8 pixels, 1.6% of uint16 ones, differ by 1: DALI interpolates in
float32, this in double), 0.01 on float32 (measured 0.004 on values up to 310).
"""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.geometry_cases import WARP_PERSPECTIVE, check_case
from helpers import run_arrays

from streamflow import fn


@pytest.mark.parametrize("case", WARP_PERSPECTIVE, ids=lambda c: c.name)
def test_warp_perspective_matches_dali(case) -> None:
    check_case("warp_perspective", case)


def test_identity_and_translation() -> None:
    img = np.arange(6 * 7 * 3, dtype=np.uint8).reshape(6, 7, 3)
    same = run_arrays([img], lambda x: fn.experimental.warp_perspective(x, matrix=[1, 0, 0, 0, 1, 0, 0, 0, 1]))[0][0]
    assert np.array_equal(same, img)
    moved = run_arrays([img], lambda x: fn.experimental.warp_perspective(
        x, matrix=[1, 0, 2, 0, 1, 1, 0, 0, 1], border_mode="replicate"))[0][0]
    assert np.array_equal(moved[:5, :5], img[1:, 2:])


# --- experimental.remap (GPU-only in DALI 2.4, so no DALI reference: checked against warp_perspective) ---

from dali_reference.geometry_cases import _HOMOGRAPHY, _images


@pytest.mark.parametrize("origin", ["corner", "center"])
@pytest.mark.parametrize("interp", ["INTERP_LINEAR", "INTERP_NN"])
def test_remap_with_homography_maps_equals_warp_perspective(origin, interp) -> None:
    images = _images()
    m = np.asarray(_HOMOGRAPHY, dtype=np.float64).reshape(3, 3)
    maps_x, maps_y = [], []
    half = 0.5 if origin == "corner" else 0.0
    for im in images:
        y, x = np.meshgrid(np.arange(im.shape[0]) + half, np.arange(im.shape[1]) + half, indexing="ij")
        w = m[2, 0] * x + m[2, 1] * y + m[2, 2]
        maps_x.append((m[0, 0] * x + m[0, 1] * y + m[0, 2]) * (1.0 / w))  # float64: the warp's own arithmetic
        maps_y.append((m[1, 0] * x + m[1, 1] * y + m[1, 2]) * (1.0 / w))
    remapped = run_arrays(images, lambda x, mx, my: fn.experimental.remap(x, mx, my, interp=interp,
                                                                           pixel_origin=origin),
                          mx=maps_x, my=maps_y)[0]
    warped = run_arrays(images, lambda x: fn.experimental.warp_perspective(x, matrix=_HOMOGRAPHY, interp_type=interp,
                                                                           pixel_origin=origin))[0]
    for a, b in zip(remapped, warped):
        assert np.array_equal(a, b)


def test_remap_shift_and_zero_border() -> None:
    img = np.arange(5 * 6, dtype=np.float32).reshape(5, 6, 1)
    y, x = np.meshgrid(np.arange(5, dtype=np.float32), np.arange(6, dtype=np.float32), indexing="ij")
    out = run_arrays([img], lambda a, mx, my: fn.experimental.remap(a, mx, my, pixel_origin="center"),
                     mx=[x + 1], my=[y])[0][0]
    assert np.array_equal(out[:, :5, 0], img[:, 1:, 0]) and np.all(out[:, 5] == 0)
