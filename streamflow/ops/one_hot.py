"""``one_hot``: one-hot encoding along a new axis, as DALI.

``out[..., i, ...] = on_value if i == class else off_value`` for ``i`` in
``[0, num_classes)``, the new axis at ``axis`` (default last). A class is the
input value truncated to an integer; a class outside ``[0, num_classes)``
gives ``off_value`` everywhere. A scalar input gives a vector of
``num_classes``; so does, without ``axis``, a sample of one element when every
sample of the batch has one element (DALI's rule for old pipelines, decided on
the whole batch: the operator sees whole batches when ``axis`` is not given). ``on_value`` and
``off_value`` are converted to ``dtype`` (default float32); unlike DALI, which
wraps them (300 becomes 44 in uint8), a value that does not fit is refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import DataType, Device, Number
from .arguments import fn_function
from .cast import parse_output_dtype

__all__ = ["OneHot", "one_hot"]


def _fit(value: float, dtype: np.dtype, what: str) -> Any:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not (info.min <= value <= info.max) or value != int(value):
            raise PipelineDefinitionError(f"one_hot: {what}={value} does not fit the output type {dtype}")
    return np.asarray(value).astype(dtype)


class OneHot(Operator):
    """Adds an axis of ``num_classes`` holding ``on_value`` at each input's class."""

    name = "one_hot"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, *, num_classes: int, axis: int | None = None, dtype: Any = DataType.FLOAT,
                 on_value: float = 1.0, off_value: float = 0.0, layout: str = "", axis_name: str | None = None,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        if int(num_classes) < 1:
            raise PipelineDefinitionError(f"one_hot: num_classes must be at least 1, got {num_classes}")
        self.num_classes = int(num_classes)
        self.axis = axis
        self.out_dtype = parse_output_dtype(dtype, "one_hot: dtype")
        self.on = _fit(float(on_value), self.out_dtype, "on_value")
        self.off = _fit(float(off_value), self.out_dtype, "off_value")
        if axis_name is not None and len(axis_name) != 1:
            raise PipelineDefinitionError(f"one_hot: axis_name must be one character, got {axis_name!r}")
        self.axis_name = axis_name
        self.in_layout = layout
        self.whole_batch = axis is None  # the legacy scalar rule looks at every sample of the batch

    def _axis(self, ndim: int) -> int:
        axis = -1 if self.axis is None else self.axis
        if not -ndim - 1 <= axis <= ndim:
            raise SampleError(f"one_hot: axis {axis} is out of range for a {ndim}D input")
        return axis + ndim + 1 if axis < 0 else axis

    def encode(self, sample: Any, scalars: bool, xp: Any = np) -> Any:
        """One sample, one-hot encoded; ``scalars``: the batch's legacy scalar rule holds
        (``scalar_batch``); ``xp`` is the sample's array module (numpy, or cupy on the GPU)."""
        x = xp.asarray(sample)
        if x.dtype.kind not in "biuf":
            raise SampleError(f"one_hot: the input must be numbers, got {x.dtype}")
        if x.ndim == 0 or scalars:
            x = x.reshape(())
        classes = xp.trunc(x.astype(np.float64)) if x.dtype.kind == "f" else x.astype(np.int64)
        axis = self._axis(x.ndim)
        ids = xp.arange(self.num_classes).reshape((1,) * axis + (-1,) + (1,) * (x.ndim - axis))
        hot = xp.expand_dims(classes, axis) == ids
        return xp.where(hot, xp.asarray(self.on), xp.asarray(self.off)).astype(self.out_dtype)

    def scalar_batch(self, samples: Any) -> bool:
        """DALI's legacy rule: without ``axis``, a batch of one-element samples is a batch of scalars."""
        return self.axis is None and all(int(getattr(s, "size", np.size(s))) == 1 for s in samples)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        scalars = self.scalar_batch(chunk.inputs[0])
        return [chunk.each_sample(lambda row, sample: self.encode(sample, scalars))]

    def layout(self, index: int) -> str:
        if not self.axis_name or not self.in_layout:
            return ""
        n = len(self.in_layout)
        axis = self._axis(n)
        return self.in_layout[:axis] + self.axis_name + self.in_layout[axis:]


@fn_function()
def one_hot(
    data: DataNode,
    *,
    num_classes: int = 0,
    axis: int | None = None,
    axis_name: str | None = None,
    dtype: DataType | str = DataType.FLOAT,
    on_value: Number = 1.0,
    off_value: Number = 0.0,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """One-hot encode class ids along a new axis (default: the last; scalars give a vector).

    Args:
        num_classes: the length of the new axis.
        axis: where the new axis goes (default -1).
        axis_name: the new axis's layout name (one character).
        dtype: output type (default float32).
        on_value, off_value: the values for "is this class" and "is not".
    """
    op = OneHot(num_classes=num_classes, axis=axis, dtype=dtype, on_value=on_value, off_value=off_value,
                layout=input_layout(data, "one_hot"), axis_name=axis_name, name=name)
    return add_node(op, [data], device=device)[0]
