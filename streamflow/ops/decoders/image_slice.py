"""``decoders.image_slice``: decode the window given by an anchor and a shape.

``image_slice``: ``anchor`` and ``shape`` in the order of ``axes`` (default
``(1, 0)``, i.e. ``(x, y)``, as DALI), normalized to the image size by
default; start ``= llround(anchor * extent)``, end ``= llround((anchor +
shape) * extent)`` (DALI's ``PositionalSliceAttr``, halves away from zero);
integer anchors and shapes are always absolute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import PipelineDefinitionError
from ...graph import DataNode, add_node, split_arguments
from ...operator import Chunk
from ...types import (
    DataType,
    Device,
    ImageType,
    Number,
)
from ..arguments import DECODER, fn_function
from .image import DecoderCrop, Window, decoder_arguments

__all__ = ["ImageSlice", "image_slice", "slice_window"]


def _axes(axes: Sequence[int] | None, axis_names: str | None, op_name: str) -> tuple[int, ...]:
    if axis_names is not None:
        index = {"H": 0, "W": 1}
        try:
            return tuple(index[c] for c in axis_names.upper())
        except KeyError:
            raise PipelineDefinitionError(f"{op_name}: axis_names must use H and W, got {axis_names!r}") from None
    result = []
    for a in (1, 0) if axes is None else axes:
        a = int(a)
        if a < -3 or a > 2:
            raise PipelineDefinitionError(f"{op_name}: axes must be in [-3, 2], got {list(axes or [])}")
        a = a + 3 if a < 0 else a
        if a == 2:
            raise PipelineDefinitionError(f"{op_name}: slicing the channel axis is not supported")
        result.append(a)
    if len(set(result)) != len(result) or not result:
        raise PipelineDefinitionError(f"{op_name}: axes must be distinct, got {list(axes or [])}")
    return tuple(result)


def _llround(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def slice_window(
    height: int, width: int, anchor: Any, shape: Any, axes: Sequence[int] = (1, 0),
    normalized_anchor: bool = True, normalized_shape: bool = True,
) -> Window:
    """The ``(y0, x0, h, w)`` of a slice, with DALI's rounding (see the module doc)."""
    a_arr, s_arr = np.asarray(anchor).reshape(-1), np.asarray(shape).reshape(-1)
    if a_arr.size != len(axes) or s_arr.size != len(axes):
        raise ValueError(
            f"anchor and shape must have {len(axes)} values (one per axis of {tuple(axes)}), "
            f"got {a_arr.size} and {s_arr.size}"
        )
    norm_a = normalized_anchor and np.issubdtype(a_arr.dtype, np.floating)
    norm_s = normalized_shape and np.issubdtype(s_arr.dtype, np.floating)
    extents = (height, width)
    start, size = [0, 0], [height, width]
    for i, dim in enumerate(axes):
        # DALI reads float arguments as float32, then computes in double.
        a = float(np.float32(a_arr[i])) if np.issubdtype(a_arr.dtype, np.floating) else float(a_arr[i])
        s = float(np.float32(s_arr[i])) if np.issubdtype(s_arr.dtype, np.floating) else float(s_arr[i])
        n = extents[dim]
        if norm_a and norm_s:
            end = (a + s) * n
            a *= n
        else:
            if norm_a:
                a *= n
            if norm_s:
                s *= n
            end = a + s
        if not (math.isfinite(a) and math.isfinite(end)) or end < a:
            raise ValueError(f"slice end before its start on axis {dim}: start={a}, end={end}")
        start[dim] = _llround(a)
        size[dim] = _llround(end) - start[dim]
    return start[0], start[1], size[0], size[1]


class ImageSlice(DecoderCrop):
    """Decodes the window given by an anchor and a shape (per sample allowed)."""

    name = "decoders.image_slice"
    per_sample_args = frozenset({"anchor", "shape"})

    def __init__(self, anchor: Any = None, shape: Any = None, *, axes: Sequence[int] | None = None,
                 axis_names: str | None = None, normalized_anchor: bool = True, normalized_shape: bool = True,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.axes = _axes(axes, axis_names, self.name)
        self.anchor = None if anchor is None else np.asarray(anchor)
        self.shape = None if shape is None else np.asarray(shape)
        for label, value in (("anchor", self.anchor), ("shape", self.shape)):
            if value is not None and value.size != len(self.axes):
                raise PipelineDefinitionError(
                    f"{self.name}: {label} must have {len(self.axes)} values (axes {self.axes}), got {value.size}"
                )
        self.normalized_anchor = bool(normalized_anchor)
        self.normalized_shape = bool(normalized_shape)

    def window(self, chunk: Chunk, row: int, height: int, width: int) -> Window:
        anchor = chunk.arg("anchor", row, self.anchor)
        shape = chunk.arg("shape", row, self.shape)
        if anchor is None or shape is None:
            raise ValueError("image_slice needs both an anchor and a shape")
        return slice_window(height, width, anchor, shape, self.axes, self.normalized_anchor, self.normalized_shape)

@fn_function(DECODER)
def image_slice(
    data: DataNode,
    anchor: Sequence[Number] | DataNode,
    shape: Sequence[Number] | DataNode,
    *,
    axes: Sequence[int] | None = None,
    axis_names: str | None = None,
    normalized_anchor: bool = True,
    normalized_shape: bool = True,
    device: str | Device | None = None,
    output_type: str | ImageType = ImageType.RGB,
    dtype: str | DataType = DataType.UINT8,
    adjust_orientation: bool = True,
    max_pixels: int | None = 128_000_000,
    name: str | None = None,
) -> DataNode:
    """Decode the window ``anchor`` .. ``anchor + shape`` (only the window is decoded).

    Args:
        anchor: start of the window, in the order of ``axes`` (default
            ``(x, y)``); constant or per sample (a ``DataNode``).
        shape: size of the window, same order.
        axes: dimension indices the values refer to; default ``(1, 0)``,
            i.e. ``(x, y)`` as DALI (``(0, 1)`` for ``(y, x)``).
        axis_names: the same as letters, e.g. ``"WH"`` (default) or ``"HW"``;
            takes priority over ``axes``.
        normalized_anchor: float anchors are fractions of the image size (default).
        normalized_shape: float shapes are fractions of the image size (default).
            Integer values are always pixels.

    Start and end are rounded half away from zero: start ``= round(anchor *
    extent)``, end ``= round((anchor + shape) * extent)``. A window outside the
    image fails with an error naming the file. Other arguments as ``image``.
    """
    constants, per_sample = split_arguments(dict(anchor=anchor, shape=shape))
    op = ImageSlice(
        constants.get("anchor"), constants.get("shape"), axes=axes, axis_names=axis_names,
        normalized_anchor=normalized_anchor, normalized_shape=normalized_shape,
        **decoder_arguments(output_type, adjust_orientation, max_pixels, name, dtype),
    )
    return add_node(op, [data], per_sample, device=device)[0]
