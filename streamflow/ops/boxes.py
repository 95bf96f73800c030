"""Bounding-box helpers shared by the box operators (no ``fn`` function here).

A box is held as two float32 corner arrays ``lo`` and ``hi`` of shape
``(N, ndim)``, in ``x, y(, z)`` order, like DALI's ``Box<ndim, float>``. The
layouts name the coordinates of a box row, as in DALI's ``bbox_layout``:
``x y z`` start corners, ``X Y Z`` end corners, ``W H D`` extents; a layout is a
permutation of ``xyXY`` / ``xyzXYZ`` (start and end) or of ``xyWH`` /
``xyzWHD`` (start and shape). Every operation is done in float32, step for
step as DALI does it, so the results agree with DALI bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..operator import Chunk

__all__ = [
    "F32",
    "BoxLayout",
    "as_box_array",
    "box_volume",
    "each_box_sample",
    "intersection_volume",
    "iou",
    "kept_labels",
    "parse_box_layout",
    "read_boxes",
    "write_boxes",
]

F32 = np.float32

_START = "xyz"
_END = "XYZ"
_SHAPE = "WHD"


@dataclass(frozen=True)
class BoxLayout:
    """A parsed box layout: where each canonical coordinate sits in a row.

    Attributes:
        name: the layout string (``"xyXY"``).
        ndim: 2 or 3.
        start_and_shape: the second half holds extents (``W H D``), not end corners.
        order: for the canonical order ``x y (z) X Y (Z)`` (or ``x y (z) W H (D)``),
            the column of each coordinate in the layout.
    """

    name: str
    ndim: int
    start_and_shape: bool
    order: tuple[int, ...]


def parse_box_layout(layout: str, ndim: int | None, op_name: str, what: str = "bbox_layout") -> BoxLayout:
    """Parse ``layout`` (for ``ndim`` dimensions, or inferred from its length when ``None``)."""
    if not isinstance(layout, str):
        raise PipelineDefinitionError(f"{op_name}: {what} must be a string such as 'xyXY', got {layout!r}")
    n = len(layout) // 2 if ndim is None else ndim
    if n not in (2, 3) or len(layout) != 2 * n:
        raise PipelineDefinitionError(
            f"{op_name}: {what} {layout!r} must have {2 * n if n in (2, 3) else '4 or 6'} characters, "
            "a permutation of 'xyXY' or 'xyWH' (or 'xyzXYZ' / 'xyzWHD' for 3D boxes)"
        )
    start_end = _START[:n] + _END[:n]
    start_shape = _START[:n] + _SHAPE[:n]
    for canonical, shape in ((start_end, False), (start_shape, True)):
        if sorted(layout) == sorted(canonical):
            return BoxLayout(layout, n, shape, tuple(layout.index(c) for c in canonical))
    raise PipelineDefinitionError(
        f"{op_name}: {what} {layout!r} should be a permutation of {start_end!r} or {start_shape!r}"
    )


def as_box_array(value: Any, ncoords: int | None, op_name: str, what: str = "boxes", xp: Any = np) -> Any:
    """A sample of boxes as a C-contiguous float32 ``(N, ncoords)`` array, or a ``SampleError``.

    A flat array whose length is a multiple of ``ncoords`` is taken as ``N`` rows.
    ``xp``: the array module (numpy, or cupy for device samples).
    """
    arr = xp.asarray(value)
    if arr.dtype.kind not in "fiu":
        raise SampleError(f"{op_name}: {what} must be numbers, got dtype {arr.dtype}")
    if ncoords is None:
        if arr.ndim != 2 or arr.shape[1] not in (4, 6):
            raise SampleError(f"{op_name}: {what} must be a 2D array of shape (N, 4) or (N, 6), got {arr.shape}")
        ncoords = arr.shape[1]
    if arr.ndim == 2 and arr.shape[1] == ncoords:
        pass
    elif arr.ndim == 1 and arr.size % ncoords == 0:
        arr = arr.reshape(-1, ncoords)
    else:
        raise SampleError(f"{op_name}: {what} must have shape (N, {ncoords}), got {arr.shape}")
    return xp.ascontiguousarray(arr, dtype=F32)


def read_boxes(rows: Any, layout: BoxLayout, xp: Any = np) -> tuple[Any, Any]:
    """``(lo, hi)`` float32 corners of ``(N, 2*ndim)`` rows written in ``layout`` (``xp``: their array module)."""
    n = layout.ndim
    canon = rows[:, list(layout.order)]
    lo = xp.ascontiguousarray(canon[:, :n])
    hi = xp.ascontiguousarray(canon[:, n:])
    if layout.start_and_shape:
        hi = (hi + lo).astype(F32)
    return lo, hi


def write_boxes(lo: Any, hi: Any, layout: BoxLayout, xp: Any = np) -> Any:
    """``(N, 2*ndim)`` float32 rows in ``layout`` from corners ``lo``, ``hi`` (``xp``: their array module)."""
    second = (hi - lo).astype(F32) if layout.start_and_shape else hi
    canon = xp.concatenate([lo, second], axis=1).astype(F32, copy=False)
    out = xp.empty_like(canon)
    out[:, list(layout.order)] = canon
    return out


def box_volume(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Product of the extents, multiplied in axis order in float32 (DALI's ``volume``)."""
    vol = hi[..., 0] - lo[..., 0]
    for d in range(1, lo.shape[-1]):
        vol = vol * (hi[..., d] - lo[..., d])
    return np.asarray(vol, dtype=F32)


def intersection_volume(a_lo: np.ndarray, a_hi: np.ndarray, b_lo: np.ndarray, b_hi: np.ndarray) -> np.ndarray:
    """Volume of the intersection (broadcasting); 0 where the boxes are disjoint or touch."""
    vol: Any = None
    empty: Any = None
    for d in range(a_lo.shape[-1]):
        extent = np.minimum(a_hi[..., d], b_hi[..., d]) - np.maximum(a_lo[..., d], b_lo[..., d])
        vol = extent if vol is None else vol * extent
        empty = extent <= 0 if empty is None else empty | (extent <= 0)
    return np.where(empty, F32(0), np.asarray(vol, dtype=F32))


def iou(a_lo: np.ndarray, a_hi: np.ndarray, b_lo: np.ndarray, b_hi: np.ndarray) -> np.ndarray:
    """Intersection over union (broadcasting), DALI's ``intersection_over_union`` in float32."""
    inter = intersection_volume(a_lo, a_hi, b_lo, b_hi)
    union = (box_volume(a_lo, a_hi) + box_volume(b_lo, b_hi)) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = inter / union
    return np.where(inter == 0, F32(0), ratio).astype(F32, copy=False)


def kept_labels(labels: np.ndarray, indices: Any) -> np.ndarray:
    """The labels of the boxes kept (``indices``, or a boolean mask), as int32 like DALI's."""
    return np.ascontiguousarray(labels[indices]).astype(np.int32, copy=False)


def each_box_sample(chunk: Chunk, has_labels: bool, num_outputs: int,
                    compute: Callable[[int, Any, Any], Sequence[Any]]) -> list[list[Any]]:
    """``compute(row, boxes, labels)`` (its ``num_outputs`` values) per row of a box operator.

    ``labels`` is the second input's sample, or ``None`` when ``has_labels`` is
    false. A ``SampleError`` fails only that row (all its outputs ``None``).
    """
    labels = chunk.inputs[1] if has_labels else [None] * len(chunk)
    return chunk.each_sample(lambda row, boxes: compute(row, boxes, labels[row]), outputs=num_outputs)
