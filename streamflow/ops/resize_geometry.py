"""DALI's resize geometry: the output size and the source window of each spatial axis.

One function, ``resize_geometry``, used by ``resize`` (images and volumes),
``resize_crop_mirror`` and the fused resize + crop_mirror_normalize. It follows
DALI 2.4's resize attributes step by step, in the same float32 and float64
arithmetic, so the source window -- hence each axis' scale, which is
``(hi - lo) / size`` in float32 in the resampler -- is DALI's to the last bit:

1. **Input region.** The whole extent ``[0, n)``, or ``roi_start`` /
   ``roi_end`` (float32 arguments; ``roi_relative`` multiplies them by the
   extent in float64); a region shorter than 1e-3 pixel is widened to 1e-3
   around its centre. A region whose end is before its start flips the axis.
2. **Requested size** (float32): one value per axis, 0 where not given; a
   negative value flips the axis. ``mode``:

   * ``default``: the given extents; a missing one is scaled by the geometric
     mean of the given scales; ``max_size`` then caps each extent on its own.
   * ``stretch``: the given extents; a missing one keeps the input extent;
     ``max_size`` caps each extent.
   * ``not_larger`` / ``not_smaller`` (``resize_longer`` / ``resize_shorter``
     are these with the same size on every axis): one scale for all axes, the
     smallest / largest of the given ones, lowered to fit ``max_size``; an axis
     whose own scale differs gets ``extent * scale`` (float64 product).
3. **Rounding.** The output extent is the requested one rounded half away
   from zero (at least 1). With ``subpixel_scale`` (the default), when that
   differs from the fractional extent, the source window is scaled about its
   centre by ``rounded / fractional`` (float64, stored as float32), so the
   scale stays ``input / fractional``: resizing 151 columns to 120.8 gives
   121 columns of a window [-0.094, 151.094). Without it the rounded size
   simply covers the window.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["MODES", "ResizeGeometry", "resize_geometry"]

MODES = ("default", "stretch", "not_larger", "not_smaller")

_F32 = struct.Struct("f")


def _f32(x: float) -> float:
    """``x`` rounded to float32 (as a Python float). Exact for one +, -, *, / of two float32 values:
    float64 holds their exact result to more than twice float32's precision."""
    return _F32.unpack(_F32.pack(x))[0]


_LIMIT = float(2**31)
_MIN_ROI_F32 = _f32(1e-3)  # DALI widens shorter regions to this many pixels (a float32 constant)


def _round_int(x: float) -> int:
    """C's ``roundf``: halves away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


class ResizeGeometry(NamedTuple):
    """The outcome of the resize rules for one sample (outer axis first: (h, w) or (d, h, w)).

    Attributes:
        size: output extents.
        lo: source window start of each axis (float32 values).
        hi: source window end of each axis (before ``lo``: the axis is flipped).
    """

    size: tuple[int, ...]
    lo: tuple[float, ...]
    hi: tuple[float, ...]

    def roi(self) -> tuple[float, ...]:
        """The window as the native resampler's ``roi``: ``(*lo, *hi)``, e.g. ``(y0, x0, y1, x1)``."""
        return (*self.lo, *self.hi)

    def is_whole(self, in_shape: Sequence[int]) -> bool:
        """Whether the window is exactly the whole input, unflipped."""
        return all(a == 0.0 and b == float(n) for a, b, n in zip(self.lo, self.hi, in_shape))


def _input_roi(
    in_shape: Sequence[int], roi_start: Sequence[float] | None, roi_end: Sequence[float] | None, relative: bool
) -> tuple[list[float], list[float]]:
    lo: list[float] = []
    hi: list[float] = []
    for d, n in enumerate(in_shape):
        if roi_start is None or roi_end is None or n <= 0:
            lo.append(0.0)
            hi.append(float(n))
            continue
        a, b = _f32(roi_start[d]), _f32(roi_end[d])
        if relative:
            a, b = a * n, b * n  # float64, as DALI
        if abs(b - a) < _MIN_ROI_F32:  # too small to divide by: widen about its centre
            offset = 0.5 * _MIN_ROI_F32 if a <= b else -0.5 * _MIN_ROI_F32
            a, b = a - offset, b + offset
        lo.append(_f32(a))
        hi.append(_f32(b))
    return lo, hi


def _adjust_output_size(out: list[float], in_size: list[float], mode: str, max_size: Sequence[float] | None) -> None:
    """DALI's AdjustOutputSize, in place on the float32 requested extents ``out``."""
    ndim = len(out)
    mask = [o != 0 and n != 0 for o, n in zip(out, in_size)]
    scale = [_f32(o / n) if n else 1.0 for o, n in zip(out, in_size)]
    provided = sum(mask)
    if provided == 0:
        out[:] = in_size
        return
    if mode in ("default", "stretch"):
        if provided < ndim:
            if mode == "default":
                avg = 1.0
                for d in range(ndim):
                    if mask[d]:
                        avg *= abs(scale[d])
                if provided > 1:
                    avg = avg ** (1.0 / provided)
                for d in range(ndim):
                    if not mask[d]:
                        out[d] = _f32(in_size[d] * avg)
            else:
                for d in range(ndim):
                    if not mask[d]:
                        out[d] = in_size[d]
        if max_size is not None:
            for d in range(ndim):
                if max_size[d] > 0 and abs(out[d]) > max_size[d]:
                    out[d] = math.copysign(max_size[d], out[d])
        return
    smaller = mode == "not_smaller"
    final = 0.0
    first = True
    for d in range(ndim):
        if mask[d]:
            s = abs(scale[d])
            if first or (smaller and s > final) or (not smaller and s < final):
                final = s
            first = False
    if max_size is not None:
        for d in range(ndim):
            if max_size[d] > 0:
                cap = max_size[d] / in_size[d]  # float64
                if cap < final:
                    final = cap
    for d in range(ndim):
        if not mask[d] or abs(scale[d]) != final:
            scale[d] = math.copysign(final, scale[d])
            out[d] = _f32(in_size[d] * scale[d])


def resize_geometry(
    in_shape: Sequence[int],
    requested: Sequence[float],
    *,
    mode: str = "default",
    max_size: Sequence[float] | None = None,
    roi_start: Sequence[float] | None = None,
    roi_end: Sequence[float] | None = None,
    roi_relative: bool = False,
    subpixel_scale: bool = True,
) -> ResizeGeometry:
    """DALI's output size and source window of a resize (see the module docstring).

    Args:
        in_shape: spatial extents, outer first ((h, w) or (d, h, w)).
        requested: the requested extent of each axis; 0: not given; negative: flip.
        mode: ``default``, ``stretch``, ``not_larger`` or ``not_smaller``.
        max_size: cap of each axis' extent (0: none).
        roi_start, roi_end: the input region (both or neither), same axis order.
        roi_relative: the region is given as fractions of the extents.
        subpixel_scale: keep the exact scale of a fractional size (DALI's default).

    Raises:
        ValueError: an empty input region with a non-zero requested size, or a
            wrong number of values.
    """
    def tup(values: Sequence[float] | None) -> tuple[float, ...] | None:
        return None if values is None else tuple(float(v) for v in values)

    return _geometry(tuple(int(n) for n in in_shape), tuple(float(v) for v in requested), mode, tup(max_size),
                     tup(roi_start), tup(roi_end), bool(roi_relative), bool(subpixel_scale))


@functools.lru_cache(maxsize=4096)  # a batch's samples often share their shape and arguments
def _geometry(
    in_shape: tuple[int, ...], requested: tuple[float, ...], mode: str, max_size: tuple[float, ...] | None,
    roi_start: tuple[float, ...] | None, roi_end: tuple[float, ...] | None, roi_relative: bool, subpixel_scale: bool,
) -> ResizeGeometry:
    ndim = len(in_shape)
    if len(requested) != ndim:
        raise ValueError(f"expected {ndim} requested extents, got {len(requested)}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    for what, values in (("the requested size", requested), ("roi_start", roi_start), ("roi_end", roi_end),
                         ("max_size", max_size)):
        if values is None:
            continue
        if len(values) != ndim:
            raise ValueError(f"{what} must have {ndim} values, got {len(values)}")
        for v in values:
            if not -_LIMIT < v < _LIMIT:  # also NaN
                raise ValueError(f"{what} must be finite numbers below 2^31, got {list(values)}")
    lo, hi = _input_roi(in_shape, roi_start, roi_end, roi_relative)
    out = [_f32(r) for r in requested]
    in_size = []
    for d in range(ndim):
        size = _f32(hi[d] - lo[d])
        if size < 0:
            lo[d], hi[d] = hi[d], lo[d]
            out[d] = -out[d]
            size = -size
        in_size.append(size)
    cap = None if max_size is None else [_f32(v) for v in max_size]
    _adjust_output_size(out, in_size, mode, cap)
    for d in range(ndim):
        if lo[d] == hi[d] and out[d] != 0:
            raise ValueError(f"cannot produce a non-empty output from an empty input (axis {d} has extent 0)")
    sizes = []
    for d in range(ndim):
        extent = abs(out[d])
        n = max(1, _round_int(extent))
        sizes.append(n)
        if out[d] < 0:
            lo[d], hi[d] = hi[d], lo[d]
        if subpixel_scale and n != extent:
            adjust = min(max(n / extent, -10.0), 10.0) if extent else 10.0
            centre = _f32(lo[d] + hi[d]) * 0.5
            lo[d] = _f32(min(max(centre + (lo[d] - centre) * adjust, -1e9), 1e9))
            hi[d] = _f32(min(max(centre + (hi[d] - centre) * adjust, -1e9), 1e9))
    return ResizeGeometry(tuple(sizes), tuple(lo), tuple(hi))
