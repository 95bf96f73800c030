"""``lookup_table``: map integer values through a table (``keys`` -> ``values``), as DALI.

The table has ``max(keys) + 1`` entries: ``values[i]`` at ``keys[i]`` (the last
one wins for a repeated key), ``default_value`` elsewhere; an input outside
the table (negative, or above the largest key) gives ``default_value``. Keys
are in ``[0, 65535]``; inputs must be integers. Values are converted to
``dtype`` (default float32) as DALI converts them: rounded half away from zero
and saturated for integer types.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import DataType, Device, Number
from .arguments import fn_function
from .cast import cast_array, parse_output_dtype

__all__ = ["LookupTable", "lookup_table"]

_MAX_KEY = 65535


class LookupTable(Operator):
    """``out[i] = table[in[i]]`` (``default_value`` outside the table)."""

    name = "lookup_table"
    devices = frozenset({Device.CPU, Device.GPU})
    keeps_channels = True

    def __init__(self, *, keys: Sequence[int], values: Sequence[float], default_value: float = 0.0,
                 dtype: Any = DataType.FLOAT, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        self.out_dtype = parse_output_dtype(dtype, "lookup_table: dtype")
        k = np.asarray(keys).reshape(-1)
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        if k.size != v.size:
            raise PipelineDefinitionError(f"lookup_table: {k.size} keys but {v.size} values; give one value per key")
        if k.size and (k.dtype.kind not in "iu" or k.min() < 0 or k.max() > _MAX_KEY):
            raise PipelineDefinitionError(f"lookup_table: keys must be integers in [0, {_MAX_KEY}], got {list(keys)}")
        table = np.full(int(k.max()) + 1 if k.size else 0, float(default_value), dtype=np.float64)
        table[k.astype(np.int64)] = v  # numpy assigns in order: the last of repeated keys wins
        self.table = cast_array(table, self.out_dtype)
        self.default = cast_array(np.array([float(default_value)]), self.out_dtype)[0]
        self._layout = layout

    def lookup(self, sample: Any, xp: Any = np, table: Any = None) -> Any:
        """One sample through the table; ``xp`` is its array module and ``table`` the table there
        (numpy and ``self.table`` by default; cupy and a device copy on the GPU)."""
        x = xp.asarray(sample)
        if x.dtype.kind not in "iu":
            raise SampleError(f"lookup_table: the input must be integers, got {x.dtype}")
        n = len(self.table)
        if n == 0:
            return xp.full(x.shape, self.default, dtype=self.out_dtype)
        table = self.table if table is None else table
        idx = x.astype(np.int64)
        inside = (idx >= 0) & (idx < n)
        # a gather from clipped indices, then a select: no data-dependent sizes (no device sync)
        return xp.where(inside, table[xp.clip(idx, 0, n - 1)], self.default).astype(self.out_dtype, copy=False)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, sample: self.lookup(sample))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def lookup_table(
    data: DataNode,
    *,
    keys: Sequence[int] = (),
    values: Sequence[Number] = (),
    default_value: Number = 0.0,
    dtype: DataType | str = DataType.FLOAT,
    output_dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Map integer inputs through a table: ``keys[i] -> values[i]``, ``default_value`` otherwise.

    Args:
        keys: integer keys in ``[0, 65535]``.
        values: one value per key.
        default_value: the output for inputs that are not keys.
        dtype: output type (default float32); ``output_dtype`` is its deprecated name.
    """
    if output_dtype is not None:
        dtype = output_dtype
    op = LookupTable(keys=keys, values=values, default_value=default_value, dtype=dtype,
                     layout=input_layout(data, "lookup_table"), name=name)
    return add_node(op, [data], device=device)[0]
