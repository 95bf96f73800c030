"""``erase``: fill regions of samples with a value (any number of dimensions), as DALI 2.4's operator.

Regions are given by ``anchor`` and ``shape``: flat lists of coordinates,
``len(axes)`` values per region (``anchor = (y0, x0, y1, x1, ...)`` for two
regions over ``"HW"``). The axes are ``axis_names`` (letters of the input
layout), else ``axes`` (indices), else every axis of the layout except ``C``
(every axis when the input has no layout). Unlisted axes are erased whole.

Coordinates are absolute, or fractions of the extent with
``normalized_anchor`` / ``normalized_shape`` (``normalized`` sets both);
``centered_anchor`` puts the region's centre at the anchor. A region covers
indices ``floor(a)`` to ``floor(a + s)`` (exclusive), cut to the sample.
``fill_value``: one value, or one per channel (needs a ``C`` axis); converted
to the sample's type as a C cast (truncated). Per-sample ``anchor``,
``shape`` and ``fill_value`` make time and frequency masking random
(SpecAugment: ``anchor=fn.random.uniform(...)`` with ``normalized_anchor``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import check_axis_names, fn_function, ints_argument, layout_axes, resolve_axes
from .pad import fill_as

__all__ = ["Erase", "erase", "erase_regions"]

Region = tuple[tuple[int, int], ...]  # per erased axis (begin, end); other axes whole


def _floats(value: Any) -> np.ndarray:
    return np.asarray(value if value is not None else [], dtype=np.float64).reshape(-1)


class Erase(Operator):
    """See the module docstring."""

    name = "erase"
    keeps_channels = True
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"anchor", "shape", "fill_value"})

    def __init__(self, *, anchor: Sequence[float] | float = (), shape: Sequence[float] | float = (),
                 axes: Sequence[int] | None = None, axis_names: str | None = None,
                 fill_value: float | Sequence[float] = 0.0, normalized: bool | None = None,
                 normalized_anchor: bool | None = None, normalized_shape: bool | None = None,
                 centered_anchor: bool = False, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        if normalized is not None and (normalized_anchor is not None or normalized_shape is not None):
            raise PipelineDefinitionError(
                "erase: give normalized, or normalized_anchor / normalized_shape, not both")
        self.normalized_anchor = bool(normalized if normalized is not None else normalized_anchor)
        self.normalized_shape = bool(normalized if normalized is not None else normalized_shape)
        self.centered_anchor = bool(centered_anchor)
        self.anchor, self.shape = _floats(anchor), _floats(shape)
        self.fill_value = _floats(fill_value)
        self._layout = layout
        if axis_names:
            check_axis_names(axis_names, layout, "erase: axis_names")
            self.axis_names: str | None = axis_names
            self.axes: tuple[int, ...] | None = None
        else:
            self.axis_names = None
            self.axes = ints_argument(axes, "erase: axes")

    def erased_axes(self, ndim: int) -> list[int]:
        if self.axis_names:
            return layout_axes(self.axis_names, self._layout, ndim, "erase: axis_names")
        if self.axes is not None:
            return resolve_axes(self.axes, ndim, "erase: axes")
        layout = self._layout if len(self._layout) == ndim else ""
        return [i for i in range(ndim) if not layout or layout[i] != "C"]

    def regions(self, chunk: Chunk, row: int, shape: tuple[int, ...]) -> tuple[list[int], list[Region]]:
        """The erased axes and the regions of ``row`` in index ranges."""
        axes = self.erased_axes(len(shape))
        anchor = _floats(chunk.arg("anchor", row, self.anchor))
        size = _floats(chunk.arg("shape", row, self.shape))
        k = len(axes)
        if anchor.size != size.size or (k == 0 and anchor.size) or (k and anchor.size % k):
            raise SampleError(f"erase: anchor ({anchor.size} values) and shape ({size.size} values) must both hold "
                              f"{k} values per region (one per erased axis)")
        extents = np.array([shape[a] for a in axes], dtype=np.float64)
        regions: list[Region] = []
        for r in range(anchor.size // k if k else 0):
            a, s = anchor[r * k : (r + 1) * k].copy(), size[r * k : (r + 1) * k].copy()
            if self.normalized_anchor:
                a *= extents
            if self.normalized_shape:
                s *= extents
            if np.any(s < 0):
                raise SampleError(f"erase: region shapes must not be negative, got {s.tolist()}")
            if self.centered_anchor:
                a -= s / 2
            begin, end = np.floor(a), np.floor(a + s)
            regions.append(tuple((int(np.clip(b, 0, e)), int(np.clip(f, 0, e)))
                                 for b, f, e in zip(begin, end, extents)))
        return axes, regions

    def fill(self, chunk: Chunk, row: int, x: Any) -> tuple[Any, int | None]:
        """The fill value(s) of ``row`` in the sample's type, and the channel axis they run along (or None)."""
        values = _floats(chunk.arg("fill_value", row, self.fill_value))
        if values.size <= 1:
            return fill_as(values[0] if values.size else 0.0, x.dtype), None
        layout = self._layout if len(self._layout) == x.ndim else ""
        if "C" not in layout:
            raise SampleError(f"erase: {values.size} fill values need a channel axis 'C' in the layout, got {layout!r}")
        c = layout.index("C")
        if x.shape[c] != values.size:
            raise SampleError(f"erase: {values.size} fill values for {x.shape[c]} channels")
        return fill_as(values, x.dtype), c

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, x: Any) -> np.ndarray:
            x = np.asarray(x)
            axes, regions = self.regions(chunk, row, x.shape)
            value, channel_axis = self.fill(chunk, row, x)
            return erase_regions(np, x, axes, regions, value, channel_axis)

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


def erase_regions(xp: Any, x: Any, axes: Sequence[int], regions: Sequence[Region], value: Any,
                  channel_axis: int | None) -> Any:
    """A copy of ``x`` with ``regions`` (ranges along ``axes``) set to ``value``, for any array module ``xp``."""
    out = xp.array(x, copy=True)
    if channel_axis is not None:
        shape = [1] * x.ndim
        shape[channel_axis] = -1
        value = xp.asarray(value).reshape(shape)
    for region in regions:
        index: list[Any] = [slice(None)] * x.ndim
        for axis, (begin, end) in zip(axes, region):
            index[axis] = slice(begin, end)
        target = out[tuple(index)]
        if target.size:
            out[tuple(index)] = xp.broadcast_to(value, target.shape) if channel_axis is not None else value
    return out


@fn_function()
def erase(
    data: DataNode,
    *,
    anchor: float | Sequence[float] | DataNode = (),
    shape: float | Sequence[float] | DataNode = (),
    axes: Sequence[int] | int | None = None,
    axis_names: str | None = None,
    fill_value: float | Sequence[float] | DataNode = 0.0,
    normalized: bool | None = None,
    normalized_anchor: bool | None = None,
    normalized_shape: bool | None = None,
    centered_anchor: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Erase (fill) regions given by ``anchor`` and ``shape`` along ``axes`` / ``axis_names``.

    Args:
        anchor: region starts (or centres), ``len(axes)`` values per region.
        shape: region sizes, same order.
        axes: the axes the coordinates refer to, in order.
        axis_names: the same by layout letters; takes priority over ``axes``.
        fill_value: one value, or one per channel.
        normalized: both anchor and shape are fractions of the extents.
        normalized_anchor, normalized_shape: each separately.
        centered_anchor: the anchor is the region's centre.
    """
    constants, per_sample = split_arguments(dict(anchor=anchor, shape=shape, fill_value=fill_value))
    if isinstance(axes, int):
        axes = [axes]
    op = Erase(anchor=constants.get("anchor", ()), shape=constants.get("shape", ()), axes=axes, axis_names=axis_names,
               fill_value=constants.get("fill_value", 0.0), normalized=normalized,
               normalized_anchor=normalized_anchor, normalized_shape=normalized_shape,
               centered_anchor=centered_anchor, layout=input_layout(data, "erase"), name=name)
    return add_node(op, [data], per_sample, device=device)[0]
