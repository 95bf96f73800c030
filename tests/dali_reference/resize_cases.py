"""The DALI reference cases of ``resize``: real photos x fractional and integral sizes x filters x modes.

Shared by ``record_resize.py`` (which runs each case on DALI 2.4's CPU
``fn.resize`` and saves the outputs in ``tests/data/dali/resize/resize.npz``)
and ``tests/unit/ops/test_resize.py`` (which runs the same cases on streamflow
and compares). A case's ``build(m, x, **extra)`` uses only what both libraries
share (``m.fn``, ``m.types``).

Inputs are thumbnails and crops of the PNG photographs in ``tests/data/photos``
(every 4th..8th pixel, so outputs stay small): three RGB images of different
aspect ratios, small crops for the upscaling cases, a gray image, float
versions; and the MRI volume of ``tests/data/volumes`` (DHWC). Most sizes are fractional, directly (``resize_x=61.3``) or computed
(``resize_shorter=41`` of a 75x113 image gives 41 x 61.77), which is where
DALI's ``subpixel_scale`` shows.

Tolerance (``Case.atol``): uint8 outputs are bit-identical to DALI's, except
in the cases of ``TIES``: there DALI 2.4 rounds a few exact .5 values upward
(measured: it rounds ties half to even in the vectorized part of its last
pass, upward in the columns left to scalar code, the last < 16 of a row's
interior and the border columns), so those are 1 apart (0.2% of the values
or fewer). Float outputs: 1e-3 (float32 rounding of the
sums, measured <= 7e-5).

Left out, as DALI 2.4 bugs that streamflow does not reproduce
(``docs/dali-differences.md``): a nearest-neighbour roi past the right edge
of the image, and ``min_filter`` / ``mag_filter`` mixing nearest neighbour
with another filter where the other axis' window starts 0.5 pixel or more
from 0 (an roi, or a strongly scaled fractional size).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

import numpy as np

try:
    from .geometry_cases import DATA, Case, photo, volume
except ImportError:  # imported by record_resize.py, a script beside it
    from geometry_cases import DATA, Case, photo, volume  # type: ignore[no-redef]

__all__ = ["CASES", "REFERENCE"]

REFERENCE = DATA / "dali" / "resize" / "resize.npz"


@cache
def _rgb() -> tuple[np.ndarray, ...]:
    return photo("chelsea.png", 4), photo("coffee.png", 5), photo("astronaut.png", 6)


def _photos() -> list[np.ndarray]:
    """75x113, 80x120 and 86x86 RGB thumbnails."""
    return list(_rgb())


def _small() -> list[np.ndarray]:
    """24x37 and 21x30 RGB crops (for the upscaling cases)."""
    a, b, _ = _rgb()
    return [np.ascontiguousarray(a[20:44, 30:67]), np.ascontiguousarray(b[40:61, 60:90])]


def _gray() -> list[np.ndarray]:
    """A 64x64 gray thumbnail, HWC with one channel."""
    return [np.ascontiguousarray(photo("camera.png", 8)[:, :, None])]


def _volume() -> list[np.ndarray]:
    """The MRI volume of ``tests/data/volumes`` as uint8 DHWC (25 x 41 x 33 x 1)."""
    v = volume().astype(np.float32)
    return [(v / v.max() * 255).astype(np.uint8)]


def _float() -> list[np.ndarray]:
    return [im.astype(np.float32) * np.float32(1.37) - np.float32(40.25) for im in _small()]


def _f32(values: list[Any]) -> list[np.ndarray]:
    return [np.asarray(v, dtype=np.float32) for v in values]


INTERPS = ("INTERP_NN", "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_LANCZOS3", "INTERP_GAUSSIAN", "INTERP_TRIANGULAR")


def _interp_cases() -> list[Case]:
    cases = []
    for name in INTERPS:
        tag = name[len("INTERP_"):].lower()

        def it(m: Any, name: str = name) -> Any:
            return getattr(m.types, name)

        cases += [
            Case(f"{tag}_shorter_41", _photos, lambda m, x, it=it: m.fn.resize(x, resize_shorter=41, interp_type=it(m)),
                 "HWC"),
            Case(f"{tag}_up_x", _small, lambda m, x, it=it: m.fn.resize(x, resize_x=61.3, interp_type=it(m)),
                 "HWC"),
            Case(f"{tag}_mixed", _small, lambda m, x, it=it: m.fn.resize(
                x, size=(97.5, 30.25), mode="stretch", interp_type=it(m)), "HWC"),
            Case(f"{tag}_longer_no_aa", _photos, lambda m, x, it=it: m.fn.resize(
                x, resize_longer=47.5, antialias=False, interp_type=it(m)), "HWC"),
            Case(f"{tag}_integral", _photos, lambda m, x, it=it: m.fn.resize(x, size=(40, 60), interp_type=it(m)),
                 "HWC"),
        ]
    return cases


_ROI_START = [[10.5, 3.25], [0.0, 7.75], [30.0, 80.5]]
_ROI_END = [[60.2, 90.7], [33.3, 119.0], [2.5, 10.25]]

GEOMETRY: list[Case] = [
    Case("size_y_only", _photos, lambda m, x: m.fn.resize(x, size=(33.3, 0)), "HWC"),
    Case("resize_xy", _photos, lambda m, x: m.fn.resize(x, resize_x=50.7, resize_y=31.2), "HWC"),
    Case("not_larger", _photos, lambda m, x: m.fn.resize(x, size=(40, 45), mode="not_larger"), "HWC"),
    Case("not_smaller_max", _photos, lambda m, x: m.fn.resize(x, size=(40, 45), mode="not_smaller", max_size=60),
         "HWC"),
    Case("stretch_missing", _small, lambda m, x: m.fn.resize(x, resize_x=50.5, mode="stretch"), "HWC"),
    Case("default_max_per_axis", _photos, lambda m, x: m.fn.resize(x, resize_x=50, max_size=(30, 45)), "HWC"),
    Case("shorter_max", _photos, lambda m, x: m.fn.resize(x, resize_shorter=30, max_size=40), "HWC"),
    Case("longer_40", _photos, lambda m, x: m.fn.resize(x, resize_longer=40), "HWC"),
    Case("flip_x", _photos, lambda m, x: m.fn.resize(x, resize_x=-45.5), "HWC"),
    Case("flip_size", _photos, lambda m, x: m.fn.resize(x, size=(-30, 44.4)), "HWC"),
    Case("roi_abs", _photos, lambda m, x: m.fn.resize(x, resize_x=40.3, roi_start=(10.5, 3.25), roi_end=(60.2, 90.7)),
         "HWC"),
    Case("roi_rel_flip", _photos, lambda m, x: m.fn.resize(
        x, resize_shorter=33, roi_start=(0.9, 0.1), roi_end=(0.2, 0.8), roi_relative=True), "HWC"),
    Case("roi_outside", _photos, lambda m, x: m.fn.resize(
        x, size=(45.5, 61.1), roi_start=(-5, -10), roi_end=(80, 130)), "HWC"),
    Case("roi_tiny", _photos, lambda m, x: m.fn.resize(x, size=(8, 8), roi_start=(20, 30), roi_end=(20, 30.0005)),
         "HWC"),
    Case("roi_per_sample", _photos, lambda m, x, a, b: m.fn.resize(x, resize_y=27.7, roi_start=a, roi_end=b), "HWC",
         lambda: {"a": _f32(_ROI_START), "b": _f32(_ROI_END)}),
    Case("size_per_sample", _photos, lambda m, x, s: m.fn.resize(x, size=s), "HWC",
         lambda: {"s": _f32([[31.5, 40.25], [0, 57.7], [99.9, 12.5]])}),
    Case("no_subpixel", _photos, lambda m, x: m.fn.resize(x, resize_shorter=41, subpixel_scale=False), "HWC"),
    Case("no_subpixel_roi", _photos, lambda m, x: m.fn.resize(
        x, resize_x=40.3, roi_start=(10.5, 3.25), roi_end=(60.2, 90.7), subpixel_scale=False), "HWC"),
    # (an NN window past the right edge is left out: DALI 2.4 reads the next row's pixels there)
    Case("nn_roi", _photos, lambda m, x: m.fn.resize(
        x, size=(33.3, 70.6), roi_start=(60.2, 3.25), roi_end=(10.5, 80.7), interp_type=m.types.INTERP_NN), "HWC"),
    Case("float_out", _small, lambda m, x: m.fn.resize(x, resize_shorter=17.5, dtype=m.types.FLOAT), "HWC",
         atol=1e-3),
    Case("float_in", _float, lambda m, x: m.fn.resize(x, resize_shorter=23, interp_type=m.types.INTERP_CUBIC), "HWC",
         atol=1e-3),
    Case("gray", _gray, lambda m, x: m.fn.resize(x, resize_shorter=41.5), "HWC"),
    Case("min_nn_mag_linear", _small, lambda m, x: m.fn.resize(
        x, size=(97.5, 30.25), mode="stretch", min_filter=m.types.INTERP_NN, mag_filter=m.types.INTERP_LINEAR),
         "HWC"),
    Case("min_cubic_mag_nn", _small, lambda m, x: m.fn.resize(
        x, size=(97.5, 30.25), mode="stretch", min_filter=m.types.INTERP_CUBIC, mag_filter=m.types.INTERP_NN),
         "HWC"),
    Case("min_lanczos_mag_cubic", _small, lambda m, x: m.fn.resize(
        x, size=(50.5, 20), mode="stretch", min_filter=m.types.INTERP_LANCZOS3, mag_filter=m.types.INTERP_CUBIC),
         "HWC"),
    Case("interp_and_min", _small, lambda m, x: m.fn.resize(
        x, size=(50.5, 20), mode="stretch", interp_type=m.types.INTERP_CUBIC, min_filter=m.types.INTERP_GAUSSIAN),
         "HWC"),
    Case("volume_nn", _volume, lambda m, x: m.fn.resize(x, size=(17.7, 33.3, 29.1), interp_type=m.types.INTERP_NN),
         "DHWC"),
    Case("volume_shorter_40_nn", _volume, lambda m, x: m.fn.resize(x, resize_shorter=40,
                                                                     interp_type=m.types.INTERP_NN), "DHWC"),
    Case("volume_linear", _volume, lambda m, x: m.fn.resize(x, size=(17.7, 33.3, 29.1)), "DHWC"),
    Case("volume_shorter_max", _volume, lambda m, x: m.fn.resize(x, resize_shorter=30, max_size=40), "DHWC"),
    Case("volume_x_cubic", _volume, lambda m, x: m.fn.resize(x, resize_x=21.3, interp_type=m.types.INTERP_CUBIC),
         "DHWC"),
    Case("batching_knobs", _photos, lambda m, x: m.fn.resize(x, resize_shorter=41, minibatch_size=2,
                                                             temp_buffer_hint=1 << 20), "HWC"),
]

#: Cases where DALI rounds some exact .5 ties of its last pass upward (see the module docstring): 1 apart.
TIES = frozenset({
    "linear_integral", "lanczos3_integral", "gaussian_integral", "triangular_integral", "not_smaller_max",
    "longer_40", "min_nn_mag_linear",
})

#: Every case, in recording order.
CASES: list[Case] = [replace(c, atol=1) if c.name in TIES else c for c in _interp_cases() + GEOMETRY]
