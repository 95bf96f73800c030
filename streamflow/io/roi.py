"""Regions of interest of n-dimensional arrays, and the file bytes they touch.

Two halves:

* :func:`resolve_roi` turns DALI's ``readers.numpy`` ROI arguments
  (``roi_start``/``rel_roi_start``, ``roi_end``/``rel_roi_end``/``roi_shape``/
  ``rel_roi_shape``, ``roi_axes``, ``out_of_bounds_policy``) into a
  half-open box :class:`Roi`, with DALI's exact arithmetic (see below).
* :func:`byte_ranges` / :func:`plan_reads` turn a box of a ``.npy`` file into
  the few contiguous byte ranges of the file that hold it, coalesced when
  the gaps between them are small, plus the position of every contiguous
  run inside the read buffer, so the region can be gathered with one
  vectorized copy.

DALI arithmetic (``NamedSliceAttr`` + ``ApplySliceBoundsPolicy``):

* ``roi_axes`` lists the axes the ROI values refer to, in the order of the
  values (``roi_axes=(2, 0)`` means ``roi_start[0]`` is for axis 2). Axes
  not listed keep their full extent. Without ``roi_axes``, every argument
  gives one value per axis.
* Relative values are single-precision floats (as in DALI) multiplied by
  the extent in double precision; ``rel_roi_start`` with ``rel_roi_shape``
  computes the end as ``(start + shape) * extent``. Start and end are then
  rounded to the nearest integer, halves away from zero (C ``llround``,
  which is "halves up" for every non-negative coordinate).
* ``error``: every axis the ROI constrains needs ``0 <= start < extent`` and
  ``end <= extent``; ``trim_to_shape`` clamps start and end into
  ``[0, extent]``; ``pad`` keeps the box as is (negative starts and ends
  past the extent read as ``fill_value``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from streamflow.errors import PipelineDefinitionError, ReadError
from streamflow.types import OutOfBoundsPolicy

from .npy_header import NpyHeader

__all__ = [
    "DEFAULT_MAX_GAP",
    "DEFAULT_MAX_READS",
    "DEFAULT_MAX_WASTE",
    "GDS_ALIGNMENT",
    "ROI_ARGUMENTS",
    "ByteRange",
    "ReadPlan",
    "Roi",
    "RoiError",
    "byte_ranges",
    "parse_out_of_bounds_policy",
    "plan_reads",
    "resolve_roi",
    "roi_from_slices",
]

ROI_ARGUMENTS = (
    "roi_start",
    "roi_end",
    "roi_shape",
    "rel_roi_start",
    "rel_roi_end",
    "rel_roi_shape",
    "roi_axes",
)

#: Gaps between needed byte runs up to this size may be read through.
DEFAULT_MAX_GAP = 64 * 1024
#: ... as long as all gaps read through add up to at most this fraction of
#: the useful bytes (so read amplification stays <= 1 + DEFAULT_MAX_WASTE) ...
DEFAULT_MAX_WASTE = 0.10
#: ... plus this many bytes (one page: reading through gaps within a page
#: costs nothing on any storage, so tiny regions may read their few pages) ...
WASTE_SLACK = 4096
#: ... unless that leaves more reads than this, then the smallest gaps are
#: read through (whatever their size) until this many reads remain.
DEFAULT_MAX_READS = 4096
#: GPUDirect Storage reads 4 KiB-aligned blocks directly.
GDS_ALIGNMENT = 4096


class RoiError(ReadError):
    """The region of interest does not fit this file's array (names the file)."""


def parse_out_of_bounds_policy(value: str | OutOfBoundsPolicy) -> OutOfBoundsPolicy:
    """Parse ``"error" | "pad" | "trim_to_shape"`` (any case) or an enum member."""
    if isinstance(value, OutOfBoundsPolicy):
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        for member in OutOfBoundsPolicy:
            if key in (member.value, member.name.lower()):
                return member
    raise PipelineDefinitionError(
        f"unknown out_of_bounds_policy {value!r}; expected 'error', 'pad' or 'trim_to_shape'"
    )


@dataclass(frozen=True)
class Roi:
    """A half-open box ``[start[d], end[d])`` per axis of an array.

    After ``pad`` resolution ``start`` may be negative and ``end`` may pass
    the array's extent; the part outside the array reads as the fill value.
    """

    start: tuple[int, ...]
    end: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.start) != len(self.end):
            raise ValueError("Roi start and end need the same number of axes")
        if any(e < s for s, e in zip(self.start, self.end)):
            raise ValueError(f"Roi end {self.end} before start {self.start}")

    @classmethod
    def full(cls, shape: Sequence[int]) -> Roi:
        return cls(tuple(0 for _ in shape), tuple(int(d) for d in shape))

    @property
    def ndim(self) -> int:
        return len(self.start)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(e - s for s, e in zip(self.start, self.end))

    def inside(self, shape: Sequence[int]) -> tuple[tuple[int, int], ...]:
        """The part of the box within ``[0, shape)``: ``(start, end)`` per axis (may be empty)."""
        out = []
        for s, e, d in zip(self.start, self.end, shape):
            lo = min(max(s, 0), d)
            hi = min(max(e, lo), d)
            out.append((lo, hi))
        return tuple(out)

    def is_full(self, shape: Sequence[int]) -> bool:
        return all(s == 0 and e == d for s, e, d in zip(self.start, self.end, shape))

    def needs_padding(self, shape: Sequence[int]) -> bool:
        return any(s < 0 or e > d for s, e, d in zip(self.start, self.end, shape))

    def placement(self, shape: Sequence[int]) -> tuple[slice, ...]:
        """Where :meth:`inside` goes in an output array of this box's shape."""
        return tuple(slice(lo - s, hi - s) for (lo, hi), s in zip(self.inside(shape), self.start))


# --------------------------------------------------------------------------
# ROI arguments -> box


def _round_half_away(x: float) -> int:
    """C ``llround``: nearest integer, halves away from zero (exact for doubles)."""
    if x < 0:
        return -_round_half_away(-x)
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def _as_list(name: str, value: Any, *, integral: bool) -> list[float]:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise PipelineDefinitionError(
            f"{name} must be a number or a sequence of numbers, got {value!r}"
        )
    out: list[float] = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise PipelineDefinitionError(f"{name} must hold numbers, got {v!r} in {value!r}")
        fv = float(v)
        if not math.isfinite(fv):
            raise PipelineDefinitionError(f"{name} must hold finite numbers, got {value!r}")
        if integral:
            if isinstance(v, (float, np.floating)) and not fv.is_integer():
                raise PipelineDefinitionError(
                    f"{name} holds absolute coordinates and must be integers, got {value!r} "
                    f"(use rel_{name} for relative coordinates)"
                )
            out.append(float(int(v)))
        else:
            # DALI keeps relative coordinates as float32.
            out.append(float(np.float32(fv)))
    return out


def resolve_roi(
    shape: Sequence[int],
    *,
    roi_start: Any = None,
    roi_end: Any = None,
    roi_shape: Any = None,
    rel_roi_start: Any = None,
    rel_roi_end: Any = None,
    rel_roi_shape: Any = None,
    roi_axes: Any = None,
    out_of_bounds_policy: str | OutOfBoundsPolicy = OutOfBoundsPolicy.ERROR,
    source: str | None = None,
) -> Roi:
    """Resolve DALI ``readers.numpy`` ROI arguments for an array of ``shape``.

    Returns the box after the out-of-bounds policy; with no ROI argument at
    all, the whole array.

    Raises:
        PipelineDefinitionError: the arguments contradict each other
            (``roi_start`` with ``rel_roi_start``; more than one of
            ``roi_end``, ``rel_roi_end``, ``roi_shape``, ``rel_roi_shape``;
            repeated ``roi_axes``; value lists of different lengths;
            non-numbers; a negative ``roi_shape``).
        RoiError: the arguments do not fit this array (number of values vs.
            dimensions, an axis it does not have, an end before its start,
            or, under ``error``, a box that leaves the array). Names ``source``.
    """
    policy = parse_out_of_bounds_policy(out_of_bounds_policy)
    shape = tuple(int(d) for d in shape)
    ndim = len(shape)
    if roi_start is not None and rel_roi_start is not None:
        raise PipelineDefinitionError("roi_start and rel_roi_start are mutually exclusive")
    ends = {
        k: v
        for k, v in (
            ("roi_end", roi_end),
            ("rel_roi_end", rel_roi_end),
            ("roi_shape", roi_shape),
            ("rel_roi_shape", rel_roi_shape),
        )
        if v is not None
    }
    if len(ends) > 1:
        raise PipelineDefinitionError(
            f"{', '.join(ends)} are mutually exclusive; give at most one of roi_end, "
            "rel_roi_end, roi_shape, rel_roi_shape"
        )
    start_vals = (
        _as_list("roi_start", roi_start, integral=True)
        if roi_start is not None
        else _as_list("rel_roi_start", rel_roi_start, integral=False)
        if rel_roi_start is not None
        else None
    )
    end_name, end_arg = next(iter(ends.items())) if ends else (None, None)
    end_vals = (
        _as_list(end_name, end_arg, integral=not end_name.startswith("rel_"))
        if end_name is not None
        else None
    )
    if start_vals is None and end_vals is None:
        return Roi.full(shape)

    lengths = {len(v) for v in (start_vals, end_vals) if v is not None}
    if len(lengths) > 1:
        raise PipelineDefinitionError(
            "ROI arguments must give the same number of values; got "
            f"start={roi_start if roi_start is not None else rel_roi_start}, "
            f"{end_name}={end_arg}"
        )
    nvals = lengths.pop()

    if roi_axes is None or (isinstance(roi_axes, Sequence) and len(roi_axes) == 0):
        if nvals != ndim:
            raise RoiError(
                f"the ROI gives {nvals} values per argument but the array has {ndim} "
                f"dimensions (shape {shape}); expected one value per axis, or roi_axes "
                "naming the axes the values are for",
                source,
            )
        axes = list(range(ndim))
    else:
        raw_axes = [roi_axes] if isinstance(roi_axes, (int, np.integer)) else list(roi_axes)
        try:
            axes_in = [operator.index(a) for a in raw_axes]
        except TypeError:
            raise PipelineDefinitionError(f"roi_axes must hold ints, got {roi_axes!r}") from None
        if nvals != len(axes_in):
            raise PipelineDefinitionError(
                f"roi_axes={tuple(axes_in)} names {len(axes_in)} axes but the ROI arguments "
                f"give {nvals} values; expected one value per listed axis"
            )
        axes = []
        for a in axes_in:
            if not -ndim <= a < ndim:
                raise RoiError(
                    f"roi_axes names axis {a} but the array has {ndim} dimensions (shape {shape})",
                    source,
                )
            axes.append(a % ndim)
        if len(set(axes)) != len(axes):
            raise PipelineDefinitionError(f"roi_axes={tuple(axes_in)} repeats an axis")

    sv: list[float] = start_vals if start_vals is not None else []
    ev: list[float] = end_vals if end_vals is not None else []
    start = [0] * ndim
    end = list(shape)
    for i, d in enumerate(axes):
        extent = shape[d]
        if roi_start is not None:
            anchor = sv[i]
        elif rel_roi_start is not None:
            anchor = sv[i] * extent
        else:
            anchor = 0.0
        if end_name is None:
            end_val = float(extent)
        elif end_name == "roi_end":
            end_val = ev[i]
        elif end_name == "rel_roi_end":
            end_val = ev[i] * extent
        elif end_name == "roi_shape":
            if ev[i] < 0:
                raise PipelineDefinitionError(f"roi_shape must not be negative, got {end_arg!r}")
            end_val = anchor + ev[i]
        else:  # rel_roi_shape
            if ev[i] < 0:
                raise PipelineDefinitionError(
                    f"rel_roi_shape must not be negative, got {end_arg!r}"
                )
            if rel_roi_start is not None:
                # as DALI: multiply once after the sum, to limit rounding error
                end_val = (sv[i] + ev[i]) * extent
            else:
                end_val = anchor + ev[i] * extent
        if end_val < anchor:
            raise RoiError(
                f"the ROI ends before it starts on axis {d}: start {anchor:g}, end {end_val:g}",
                source,
            )
        start[d] = _round_half_away(anchor)
        end[d] = _round_half_away(end_val)

    constrained = set(axes)
    if policy is OutOfBoundsPolicy.TRIM_TO_SHAPE:
        for d in range(ndim):
            lo = min(max(start[d], 0), shape[d])
            hi = min(max(end[d], 0), shape[d])
            start[d], end[d] = lo, hi
    elif policy is OutOfBoundsPolicy.ERROR:
        for d in sorted(constrained):
            if not (0 <= start[d] < shape[d]) or not (0 <= end[d] <= shape[d]):
                raise RoiError(
                    f"region of interest [{start[d]}, {end[d]}) on axis {d} is out of bounds "
                    f"of the array of shape {shape} (expected 0 <= start < {shape[d]} and "
                    f"end <= {shape[d]}); use out_of_bounds_policy='pad' or 'trim_to_shape' "
                    "to read past the edges",
                    source,
                )
    return Roi(tuple(start), tuple(end))


def roi_from_slices(
    slices: Any,
    shape: Sequence[int],
    *,
    out_of_bounds_policy: str | OutOfBoundsPolicy = OutOfBoundsPolicy.ERROR,
    source: str | None = None,
) -> Roi:
    """A box from a tuple of slices (one per leading axis; missing axes are full).

    Slices are taken literally as half-open coordinates, exactly like
    ``roi_start``/``roi_end``: ``None`` means 0 or the extent, negative
    values are NOT wrapped around (they are out of bounds, which the policy
    handles; under ``pad`` they read as fill). Steps other than 1 are refused.
    """
    if isinstance(slices, slice):
        slices = (slices,)
    shape = tuple(int(d) for d in shape)
    if not isinstance(slices, tuple) or not all(isinstance(s, slice) for s in slices):
        raise PipelineDefinitionError(
            f"roi must be a dict of ROI arguments or a tuple of slices, got {slices!r}"
        )
    if len(slices) > len(shape):
        raise RoiError(
            f"the ROI has {len(slices)} slices but the array has {len(shape)} dimensions "
            f"(shape {shape})",
            source,
        )
    start: list[int] = []
    end: list[int] = []
    axes: list[int] = []
    for d, s in enumerate(slices):
        if s.step not in (None, 1):
            raise PipelineDefinitionError(f"ROI slices need step 1, got {s!r}")
        try:
            lo = 0 if s.start is None else operator.index(s.start)
            hi = shape[d] if s.stop is None else operator.index(s.stop)
        except TypeError:
            raise PipelineDefinitionError(f"ROI slices need int bounds, got {s!r}") from None
        start.append(lo)
        end.append(hi)
        axes.append(d)
    if not axes:
        return Roi.full(shape)
    return resolve_roi(
        shape,
        roi_start=start,
        roi_end=end,
        roi_axes=axes,
        out_of_bounds_policy=out_of_bounds_policy,
        source=source,
    )


def roi_from_argument(
    roi: Any,
    shape: Sequence[int],
    *,
    out_of_bounds_policy: str | OutOfBoundsPolicy = OutOfBoundsPolicy.ERROR,
    source: str | None = None,
) -> Roi:
    """Resolve ``read_npy``'s ``roi=``: ``None``, a dict of ROI arguments, slices or a Roi."""
    if roi is None:
        return Roi.full(shape)
    if isinstance(roi, Roi):
        if roi.ndim != len(shape):
            raise RoiError(
                f"the Roi has {roi.ndim} axes but the array has {len(shape)} (shape "
                f"{tuple(shape)})",
                source,
            )
        return roi_from_slices(
            tuple(slice(s, e) for s, e in zip(roi.start, roi.end)),
            shape,
            out_of_bounds_policy=out_of_bounds_policy,
            source=source,
        )
    if isinstance(roi, Mapping):
        unknown = set(roi) - set(ROI_ARGUMENTS)
        if unknown:
            raise PipelineDefinitionError(
                f"unknown ROI argument(s) {sorted(unknown)}; expected some of {ROI_ARGUMENTS}"
            )
        return resolve_roi(shape, **roi, out_of_bounds_policy=out_of_bounds_policy, source=source)
    return roi_from_slices(roi, shape, out_of_bounds_policy=out_of_bounds_policy, source=source)


# --------------------------------------------------------------------------
# box -> byte ranges


class ByteRange(NamedTuple):
    """A contiguous range of file bytes and its 4 KiB-aligned variant (for GDS)."""

    offset: int
    length: int
    aligned_offset: int
    aligned_length: int

    @property
    def end(self) -> int:
        return self.offset + self.length


def _normalize_box(box: Any, shape: Sequence[int]) -> tuple[tuple[int, int], ...]:
    if isinstance(box, Roi):
        box = box.inside(shape)
    out = []
    items = list(box)
    if len(items) != len(shape):
        raise ValueError(f"box has {len(items)} axes but the array has {len(shape)}")
    for b, d in zip(items, shape):
        if isinstance(b, slice):
            lo = 0 if b.start is None else b.start
            hi = d if b.stop is None else b.stop
        else:
            lo, hi = b
        lo, hi = int(lo), int(hi)
        if not 0 <= lo <= hi <= d:
            raise ValueError(f"box {tuple(items)} is not inside the shape {tuple(shape)}")
        out.append((lo, hi))
    return tuple(out)


def _physical(header: NpyHeader, box: tuple[tuple[int, int], ...]):
    """Shape and box in storage order (C order of the reversed shape for Fortran files)."""
    if header.fortran_order:
        return tuple(reversed(header.shape)), tuple(reversed(box))
    return tuple(header.shape), box


def _runs(header: NpyHeader, box: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, int]:
    """File offsets (ascending int64) of the contiguous runs of the box, and the run length."""
    pshape, pbox = _physical(header, box)
    itemsize = header.itemsize
    if any(hi == lo for lo, hi in pbox):
        return np.zeros(0, dtype=np.int64), 0
    ndim = len(pshape)
    strides = [itemsize] * ndim
    for d in range(ndim - 2, -1, -1):
        strides[d] = strides[d + 1] * pshape[d + 1]
    # k: the last axis the box does not cover fully; axes after it are whole
    k = -1
    for d in range(ndim - 1, -1, -1):
        if pbox[d] != (0, pshape[d]):
            k = d
            break
    base = header.data_offset + sum(lo * st for (lo, _), st in zip(pbox, strides))
    if k < 0:
        return np.array([header.data_offset], dtype=np.int64), header.nbytes
    run_len = (pbox[k][1] - pbox[k][0]) * strides[k]
    offsets = np.array([base], dtype=np.int64)
    for d in range(k):
        count = pbox[d][1] - pbox[d][0]
        if count > 1:
            steps = np.arange(count, dtype=np.int64) * strides[d]
            offsets = (offsets[:, None] + steps[None, :]).ravel()
    return offsets, run_len


def _coalesce(
    offsets: np.ndarray, run_len: int, max_gap: int, max_waste: float, max_reads: int
) -> np.ndarray:
    """Indices of the runs that start a new read (the first run always does)."""
    n = offsets.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    gaps = offsets[1:] - (offsets[:-1] + run_len)  # >= 0, one per boundary
    merge = gaps == 0  # adjacent: always merged, costs nothing
    budget = max_waste * run_len * n + WASTE_SLACK
    cand = np.flatnonzero((gaps > 0) & (gaps <= max_gap))
    if cand.size:
        order = cand[np.argsort(gaps[cand], kind="stable")]
        spent = np.cumsum(gaps[order])
        merge[order[spent <= budget]] = True
    nreads = n - int(merge.sum())
    if nreads > max_reads:
        rest = np.flatnonzero(~merge)
        order = rest[np.argsort(gaps[rest], kind="stable")]
        merge[order[: nreads - max_reads]] = True
    return np.concatenate(([0], np.flatnonzero(~merge) + 1)).astype(np.int64)


def byte_ranges(
    header: NpyHeader,
    box: Any,
    *,
    max_gap: int = DEFAULT_MAX_GAP,
    max_waste: float = DEFAULT_MAX_WASTE,
    max_reads: int = DEFAULT_MAX_READS,
    alignment: int = GDS_ALIGNMENT,
    file_size: int | None = None,
) -> list[ByteRange]:
    """The contiguous byte ranges of the file that hold ``box`` of the array.

    ``box`` is per logical axis ``(start, end)``, a slice, or a :class:`Roi`
    (only its part inside the array counts). Runs that are contiguous in the
    file (along the last axes in C order, the first axes in Fortran order)
    form one range; ranges separated by a gap of at most ``max_gap`` bytes
    are merged, smallest gaps first, while the gaps read through stay within
    ``max_waste`` times the useful bytes plus ``WASTE_SLACK`` (4 KiB); if more than ``max_reads`` ranges
    remain, the smallest remaining gaps are read through as well. Each range
    also carries its variant aligned to ``alignment`` (start rounded down,
    end rounded up, capped at ``file_size`` when given).
    """
    box_t = _normalize_box(box, header.shape)
    offsets, run_len = _runs(header, box_t)
    starts = _coalesce(offsets, run_len, max_gap, max_waste, max_reads)
    out: list[ByteRange] = []
    for i, s in enumerate(starts):
        last = (starts[i + 1] if i + 1 < len(starts) else offsets.size) - 1
        off = int(offsets[s])
        end = int(offsets[last]) + run_len
        a_off = off // alignment * alignment
        a_end = -(-end // alignment) * alignment
        if file_size is not None:
            a_end = min(a_end, file_size)
        out.append(ByteRange(off, end - off, a_off, a_end - a_off))
    return out


@dataclass(frozen=True)
class ReadPlan:
    """How to read a box of a ``.npy`` file into one buffer and gather it.

    Attributes:
        reads: ``(file_offset, length, buffer_offset)`` of each read, in file
            order; the buffer holds the reads back to back.
        buffer_size: bytes of the read buffer (sum of the read lengths).
        run_positions: buffer offset (int64) of each contiguous run of the box.
        run_length: bytes per run.
        storage_shape: shape of the gathered box in storage order (the box
            shape, reversed for Fortran-order files).
        useful_bytes: bytes of the box (``prod(box shape) * itemsize``).
    """

    reads: tuple[tuple[int, int, int], ...]
    buffer_size: int
    run_positions: np.ndarray
    run_length: int
    storage_shape: tuple[int, ...]
    useful_bytes: int


def plan_reads(
    header: NpyHeader,
    box: Any,
    *,
    alignment: int = 1,
    file_size: int | None = None,
    max_gap: int = DEFAULT_MAX_GAP,
    max_waste: float = DEFAULT_MAX_WASTE,
    max_reads: int = DEFAULT_MAX_READS,
) -> ReadPlan:
    """Plan the reads of ``box`` (see :func:`byte_ranges`); ``alignment > 1`` reads the
    aligned variants, merging those that touch or overlap."""
    box_t = _normalize_box(box, header.shape)
    offsets, run_len = _runs(header, box_t)
    _, pbox = _physical(header, box_t)
    storage_shape = tuple(hi - lo for lo, hi in pbox)
    useful = int(offsets.size) * run_len
    if offsets.size == 0:
        return ReadPlan((), 0, offsets, 0, storage_shape, 0)
    starts = _coalesce(offsets, run_len, max_gap, max_waste, max_reads)
    lasts = np.concatenate((starts[1:], [offsets.size])) - 1
    r_off = offsets[starts]
    r_end = offsets[lasts] + run_len
    if alignment > 1:
        r_off = r_off // alignment * alignment
        r_end = -(-r_end // alignment) * alignment
        if file_size is not None:
            r_end = np.minimum(r_end, file_size)
        new = np.concatenate(([True], r_off[1:] > r_end[:-1]))
        first = np.flatnonzero(new)
        last = np.concatenate((first[1:], [r_off.size])) - 1
        r_off, r_end = r_off[first], r_end[last]
    r_len = r_end - r_off
    r_buf = np.concatenate(([0], np.cumsum(r_len)[:-1])).astype(np.int64)
    rid = np.searchsorted(r_off, offsets, side="right") - 1
    positions = offsets - r_off[rid] + r_buf[rid]
    reads = tuple(
        (int(o), int(n), int(b)) for o, n, b in zip(r_off.tolist(), r_len.tolist(), r_buf.tolist())
    )
    return ReadPlan(
        reads=reads,
        buffer_size=int(r_len.sum()),
        run_positions=positions.astype(np.int64),
        run_length=run_len,
        storage_shape=storage_shape,
        useful_bytes=useful,
    )
