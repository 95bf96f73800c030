"""``constant``: the same array for every sample (DALI's ``fn.constant``), and ``constant_node`` for arrays.

``fn.constant(fdata=[...])`` gives float32 (``idata``: int32) values of
``shape`` (default: 1-D, one element per value; one value fills any shape),
converted to ``dtype`` when given. ``constant_node(array)`` puts a numpy array
into a pipeline as is (what DALI's ``types.Constant(array)`` does), e.g. a
lookup table to index with per-sample data: ``constant_node(table)[index]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError
from ..graph import DataNode, add_node
from ..operator import Chunk, Operator
from ..types import DataType, Device, parse_dtype
from .arguments import fn_function

__all__ = ["Constant", "constant", "constant_node"]


class Constant(Operator):
    """Every sample is ``value`` (read-only, shared by all samples)."""

    name = "constant"
    devices = frozenset({Device.CPU})

    def __init__(self, value: np.ndarray, *, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        self.value = np.array(value, order="C")
        self.value.setflags(write=False)
        if layout and len(layout) != self.value.ndim:
            raise PipelineDefinitionError(f"constant: layout {layout!r} does not match {self.value.ndim} dimensions")
        self._layout = layout

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [[self.value] * len(chunk)]

    def layout(self, index: int) -> str:
        return self._layout


def constant_node(value: Any, *, layout: str = "", name: str | None = None) -> DataNode:
    """``value`` (a numpy array or anything numpy converts) as pipeline data, the same for every sample."""
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise PipelineDefinitionError(f"constant: expected numbers, got an array of {array.dtype}")
    return add_node(Constant(array, layout=layout, name=name), [])[0]


@fn_function(label="constant")
def constant(
    *,
    fdata: float | Sequence[float] | None = None,
    idata: int | Sequence[int] | None = None,
    shape: int | Sequence[int] | None = None,
    layout: str | None = None,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """A constant array for every sample: ``fdata`` (float32) or ``idata`` (int32) reshaped to ``shape``.

    Args:
        fdata, idata: the values (give one of them).
        shape: the array's shape (default: 1-D); a single value fills it.
        layout: the layout name of the output.
        dtype: convert the values to this type.
    """
    if (fdata is None) == (idata is None):
        raise PipelineDefinitionError("constant: give exactly one of fdata and idata")
    values = np.asarray(fdata if fdata is not None else idata,
                        dtype=np.float32 if fdata is not None else np.int32).reshape(-1)
    if shape is not None:
        dims = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        size = int(np.prod(dims, dtype=np.int64))
        if values.size == 1:
            values = np.full(size, values[0], dtype=values.dtype)
        if values.size != size:
            raise PipelineDefinitionError(f"constant: {values.size} values do not fill shape {dims}")
        values = values.reshape(dims)
    if dtype is not None:
        try:
            values = values.astype(parse_dtype(dtype).numpy)
        except ValueError as err:
            raise PipelineDefinitionError(f"constant: {err}") from None
    op = Constant(values, layout=layout or "", name=name)
    return add_node(op, [], device=device)[0]
