"""``cat`` and ``stack``: join the samples of several inputs, sample by sample.

``cat`` joins along an existing axis (``axis`` or ``axis_name``); ``stack``
along a new one (named ``axis_name``; without a name the layout is dropped,
as in DALI 2.4).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, require_node
from ..operator import Chunk, Operator
from .arguments import fn_function
from .constant import constant_node

__all__ = ["Cat", "Join", "Stack", "cat", "stack"]


class Join(Operator):
    """``np.concatenate`` (``Cat``) or ``np.stack`` (``Stack``) of the inputs' samples."""

    kind: ClassVar[str] = "cat"

    def __init__(self, axis: int, layout: str, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.axis = axis
        self._layout = layout

    def run(self, chunk: Chunk) -> list[list[Any]]:
        join = np.concatenate if self.kind == "cat" else np.stack

        def one(row: int, _: Any) -> Any:
            parts = [np.asarray(col[row]) for col in chunk.inputs]
            try:
                return join(parts, axis=self.axis)
            except ValueError as err:
                raise SampleError(f"{self.kind}: samples of shapes {[p.shape for p in parts]}: {err}") from None

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


class Cat(Join):
    name: ClassVar[str] = "cat"
    kind: ClassVar[str] = "cat"


class Stack(Join):
    name: ClassVar[str] = "stack"
    kind: ClassVar[str] = "stack"


def _as_node(value: Any) -> Any:
    """A constant input as pipeline data, as DALI turns it into ``types.Constant`` (``fn.stack(0, w - x)``):
    Python ints are int32 and floats float32; numpy arrays keep their type."""
    if isinstance(value, DataNode) or isinstance(value, str) or not (
            isinstance(value, (int, float, list, tuple)) or hasattr(value, "__array__")):
        return value
    array = np.asarray(value)
    if not isinstance(value, np.ndarray) and not isinstance(value, np.generic):
        array = array.astype(np.float32 if array.dtype.kind == "f" else np.int32 if array.dtype.kind in "iu"
                             else array.dtype)
    return constant_node(array)


def _build(kind: str, inputs: tuple[Any, ...], axis: int | None, axis_name: str | None, device: str | None,
           name: str | None) -> DataNode:
    nodes = [require_node(_as_node(x), kind, i) for i, x in enumerate(inputs)]
    if len(nodes) < 1:
        raise PipelineDefinitionError(f"{kind}: give at least one input")
    layouts = {input_layout(n, kind) for n in nodes}
    layout = layouts.pop() if len(layouts) == 1 else ""
    if kind == "cat":
        if axis_name is not None:
            if axis_name not in layout:
                raise PipelineDefinitionError(f"cat: axis_name {axis_name!r} is not in the layout {layout!r}")
            axis = layout.index(axis_name)
        out_layout = layout
    else:
        axis = 0 if axis is None else axis
        out_layout = layout[:axis] + axis_name + layout[axis:] if (axis_name and layout) else ""
    op = (Cat if kind == "cat" else Stack)(0 if axis is None else int(axis), out_layout, name=name)
    return add_node(op, nodes, device=device)[0]


@fn_function()
def cat(*inputs: DataNode, axis: int | None = None, axis_name: str | None = None, device: str | None = None,
        name: str | None = None) -> DataNode:
    """Join each sample of the inputs along an existing axis (default 0)."""
    return _build("cat", inputs, axis, axis_name, device, name)


@fn_function()
def stack(*inputs: DataNode, axis: int | None = None, axis_name: str | None = None, device: str | None = None,
          name: str | None = None) -> DataNode:
    """Stack each sample of the inputs along a new axis (default 0), named ``axis_name``."""
    return _build("stack", inputs, axis, axis_name, device, name)
