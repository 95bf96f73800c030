"""``cast_like`` on the GPU, and ``cast_xp``: DALI's saturating conversion over an array module."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.cast_like import CastLike
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["cast_like_gpu", "cast_xp"]


def cast_xp(xp: Any, values: Any, dtype: Any) -> Any:
    """``ops.cast.cast_array`` over ``xp``: float to integer rounds half away from zero and
    saturates, NaN becomes 0; integers saturate; to bool: non-zero."""
    with np.errstate(over="ignore", invalid="ignore"):  # (numpy only) saturation is intended
        return _cast(xp, values, np.dtype(dtype))


def _cast(xp: Any, values: Any, dtype: np.dtype) -> Any:
    src = np.dtype(values.dtype)
    if dtype == np.bool_:
        return values != 0
    if dtype.kind in "ui" and src.kind == "f":
        info = np.iinfo(dtype)
        v = values.astype(xp.float64)
        v = xp.where(xp.isnan(v), 0.0, v)
        v = xp.trunc(v + xp.copysign(0.5, v))
        high = v >= float(info.max)  # 2**63 and 2**64 do not fit a 64-bit target: saturate explicitly
        out = xp.clip(xp.where(high, 0.0, v), float(info.min), float(info.max)).astype(dtype)
        return xp.where(high, dtype.type(info.max), out)
    if dtype.kind in "ui" and src.kind in "uib":
        if src.kind == "b":
            return values.astype(dtype)
        info, have = np.iinfo(dtype), np.iinfo(src)
        return xp.clip(values, max(info.min, have.min), min(info.max, have.max)).astype(dtype)
    return values.astype(dtype)


@register(CastLike)
def cast_like_gpu(op: CastLike, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp

    def one(row: int, x: Any) -> Any:
        target = np.dtype(chunk.inputs[1][row].dtype)
        if np.dtype(x.dtype).kind not in "uifb" or target.kind not in "uifb":
            raise SampleError(f"cast_like: both inputs must be numeric, got {x.dtype} and {target}")
        return cast_xp(xp, x, target)

    return [each_sample(chunk, ctx, one)]
