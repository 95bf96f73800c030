"""``cast``: element-type conversion, as DALI 2.4's CPU operator.

Float to integer rounds half away from zero and saturates to the type's
range (``-1.5 -> -2``, ``2.5 -> 3``, ``300 -> 255`` for uint8); NaN becomes 0;
other conversions are numpy casts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import filters as native_filters
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node
from ..operator import Chunk, Operator
from ..types import (
    DataType,
    Device,
    parse_dtype,
)
from .arguments import fn_function

__all__ = ["Cast", "cast", "cast_array", "parse_output_dtype"]


def cast_array(values: Any, dtype: np.dtype, xp: Any = np) -> Any:
    """DALI's ``Cast``: saturating, rounding half away from zero, NaN -> 0 for integer targets.

    ``xp`` is the array module of ``values`` (numpy, or cupy on the GPU: the same operations).
    """
    dtype = np.dtype(dtype)
    if xp is np:
        values = np.asarray(values)
        if dtype.kind in "ui" and values.dtype == np.float32 and dtype in native_filters.KERNEL_DTYPES:
            # one C pass with the same rounding, saturation and NaN -> 0 (x * 1 + 0 is x exactly)
            return native_filters.linear(values, 1.0, 0.0, dtype)
    if dtype.kind in "ui" and values.dtype.kind == "f":
        v = xp.nan_to_num(values.astype(np.float64), nan=0.0, posinf=np.inf, neginf=-np.inf)
        info = np.iinfo(dtype)
        high = v >= float(info.max) if dtype.itemsize == 8 else None
        if high is not None:  # 2**63 and 2**64 do not fit the target: saturate those explicitly
            v = xp.where(high, 0.0, v)
        out = xp.clip(xp.trunc(v + xp.copysign(0.5, v)), info.min, info.max).astype(dtype)
        return out if high is None else xp.where(high, dtype.type(info.max), out)
    if dtype.kind in "ui" and values.dtype.kind in "ui":
        info = np.iinfo(dtype)
        return xp.clip(values, max(info.min, np.iinfo(values.dtype).min), min(info.max, np.iinfo(values.dtype).max)).astype(dtype)
    if dtype == np.bool_:
        return values != 0
    with np.errstate(over="ignore", invalid="ignore"):  # e.g. 70000 -> float16 inf, as DALI
        return values.astype(dtype)


def parse_output_dtype(value: Any, what: str, allowed: Sequence[Any] | None = None) -> np.dtype:
    """``value`` (a ``DataType``, name or numpy type) as a numpy dtype, one of ``allowed`` when given.

    Raises:
        PipelineDefinitionError: naming ``what``, when the type is unknown or not allowed.
    """
    try:
        out = parse_dtype(value).numpy
    except ValueError as e:
        raise PipelineDefinitionError(f"{what}: {e}") from None
    if allowed is not None and out not in [np.dtype(a) for a in allowed]:
        names = ", ".join(np.dtype(a).name for a in allowed)
        raise PipelineDefinitionError(f"{what}: dtype must be one of {names}, got {out.name}")
    return out


class Cast(Operator):
    """Convert samples to ``dtype`` (any shape)."""

    keeps_channels = True
    name = "cast"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, dtype: Any, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.out_dtype = parse_output_dtype(dtype, "cast: dtype")

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, value in enumerate(chunk.inputs[0]):
            arr = np.asarray(value)
            if arr.dtype.kind not in "uifb":
                chunk.fail(row, SampleError(f"cast: input must be numeric, got dtype {arr.dtype}"))
                out.append(None)
                continue
            out.append(cast_array(arr, self.out_dtype))
        return [out]

@fn_function()
def cast(data: DataNode, *, dtype: DataType | str, device: str | Device | None = None, name: str | None = None) -> DataNode:
    """Convert to ``dtype``; float to integer rounds half away from zero and saturates (NaN -> 0)."""
    return add_node(Cast(dtype, name=name), [data], device=device)[0]
