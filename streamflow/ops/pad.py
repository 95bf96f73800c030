"""``pad``: pad samples at the end of some axes, to the batch's largest extent, a shape or an alignment.

As DALI 2.4's operator: for each padded axis (``axes``, or the letters of
``axis_names`` in the input layout; default all axes) the output extent is

* ``shape[i]`` when given and not -1, but never less than the sample's own
  extent (a small ``shape`` with ``align`` pads only for alignment), or else
  the largest extent of that axis in the batch;
* then rounded up to a multiple of ``align[i]`` (one ``align`` for all axes
  when a single number).

The new elements hold ``fill_value`` (converted to the sample's type as a C
cast does: truncated, saturated for integers). Other axes are unchanged.

The operator reads the whole batch (``whole_batch``): a sample replaced under
``on_error="skip"`` is padded on its own, to its own extent.
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

__all__ = ["Pad", "fill_as", "pad", "padded_shapes"]


def fill_as(value: Any, dtype: np.dtype) -> Any:
    """``value`` converted as a C cast to ``dtype``: truncated and saturated for integers."""
    dtype = np.dtype(dtype)
    v = np.asarray(value, dtype=np.float64)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.trunc(np.nan_to_num(v)), info.min, info.max).astype(dtype)
    if dtype == np.bool_:
        return v != 0
    return v.astype(dtype)


def padded_shapes(shapes: Sequence[tuple[int, ...]], axes: Sequence[int], target: Sequence[Sequence[int] | None],
                  align: Sequence[Sequence[int] | None]) -> list[tuple[int, ...]]:
    """Each sample's output shape (``target[i]``/``align[i]``: the sample's ``shape``/``align`` values or None)."""
    largest = {a: max(s[a] for s in shapes) for a in axes}
    out = []
    for shape, want, step in zip(shapes, target, align):
        new = list(shape)
        for i, a in enumerate(axes):
            explicit = want[i] if want is not None and i < len(want) else -1
            extent = max(explicit, shape[a]) if explicit >= 0 else largest[a]
            k = (step[i] if len(step) > 1 else step[0]) if step else 1
            if k > 1:
                extent = -(-extent // k) * k
            new[a] = extent
        out.append(tuple(new))
    return out


class Pad(Operator):
    """See the module docstring."""

    name = "pad"
    keeps_channels = True
    whole_batch = True
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"fill_value", "shape", "align"})

    def __init__(self, *, axes: int | Sequence[int] | None = None, axis_names: str | None = None,
                 fill_value: float = 0.0, shape: int | Sequence[int] | None = None,
                 align: int | Sequence[int] | None = None, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        if axes is not None and axis_names:
            raise PipelineDefinitionError("pad: axes and axis_names are mutually exclusive")
        self.axes = ints_argument(axes, "pad: axes")
        self.axis_names = axis_names or None
        self._layout = layout
        if self.axis_names:
            check_axis_names(self.axis_names, self._layout, "pad: axis_names")
        self.fill_value = float(fill_value)
        self.shape = ints_argument(shape, "pad: shape")
        self.align = ints_argument(align, "pad: align")
        if self.align is not None and any(a < 0 for a in self.align):
            raise PipelineDefinitionError(f"pad: align must not be negative, got {align!r}")

    def padded_axes(self, ndim: int) -> list[int]:
        if self.axis_names:
            return layout_axes(self.axis_names, self._layout, ndim, "pad: axis_names")
        if not self.axes:
            return list(range(ndim))
        return resolve_axes(self.axes, ndim, "pad: axes")

    def plan(self, chunk: Chunk, shapes: list[tuple[int, ...]]) -> tuple[list[tuple[int, ...]], list[Any]]:
        """Output shapes and fill values of the chunk's samples (the whole batch)."""
        ndims = {len(s) for s in shapes}
        if len(ndims) > 1:
            raise SampleError(f"pad: the samples of a batch must have the same number of dimensions, got {sorted(ndims)}")
        axes = self.padded_axes(len(shapes[0])) if shapes else []
        targets = [ints_argument(chunk.arg("shape", r, self.shape), "pad: shape") for r in range(len(shapes))]
        aligns = [ints_argument(chunk.arg("align", r, self.align), "pad: align") for r in range(len(shapes))]
        for want in targets:
            if want is not None and len(want) not in (0, len(axes)):
                raise SampleError(f"pad: shape has {len(want)} values for {len(axes)} padded axes")
        for step in aligns:
            if step is not None and len(step) not in (0, 1, len(axes)):
                raise SampleError(f"pad: align has {len(step)} values for {len(axes)} padded axes")
        fills = [chunk.arg("fill_value", r, self.fill_value) for r in range(len(shapes))]
        return padded_shapes(shapes, axes, targets, aligns), fills

    def pad_batch(self, chunk: Chunk, samples: Sequence[Any], xp: Any = np) -> list[Any]:
        """Each sample padded to its planned shape (arrays of ``xp``: numpy, or cupy on the GPU).

        The plan is one for the batch, so a bad plan fails every row.
        """
        try:
            out_shapes, fills = self.plan(chunk, [tuple(s.shape) for s in samples])
        except SampleError as err:
            for row in range(len(samples)):
                chunk.fail(row, SampleError(err.reason))
            return [None] * len(samples)
        out: list[Any] = []
        for x, shape, fill in zip(samples, out_shapes, fills):
            y = xp.full(shape, fill_as(fill, x.dtype), dtype=x.dtype)
            y[tuple(slice(0, e) for e in x.shape)] = x
            out.append(y)
        return out

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [self.pad_batch(chunk, [np.asarray(x) for x in chunk.inputs[0]])]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def pad(
    data: DataNode,
    *,
    axes: int | Sequence[int] | None = None,
    axis_names: str | None = None,
    fill_value: float | DataNode = 0.0,
    shape: int | Sequence[int] | DataNode | None = None,
    align: int | Sequence[int] | DataNode | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Pad the end of ``axes`` to the batch's largest extent (or ``shape``), rounded up to ``align``.

    Args:
        axes: the padded axes (negative from the back); default all.
        axis_names: the same by layout letters (``"t"``); exclusive with ``axes``.
        fill_value: the value of the new elements.
        shape: per padded axis, the minimum output extent (-1: the batch's largest).
        align: per padded axis (or one for all), the extent is rounded up to a multiple of it.
    """
    constants, per_sample = split_arguments(dict(fill_value=fill_value, shape=shape, align=align))
    op = Pad(axes=axes, axis_names=axis_names, fill_value=constants.get("fill_value", 0.0),
             shape=constants.get("shape"), align=constants.get("align"), layout=input_layout(data, "pad"), name=name)
    return add_node(op, [data], per_sample, device=device)[0]
