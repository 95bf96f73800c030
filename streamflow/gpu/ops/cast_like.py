"""``cast_like`` on the GPU: ``cast_array`` (DALI's saturating conversion) over the context's array module."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.cast import cast_array
from ...ops.cast_like import CastLike
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["cast_like_gpu"]


@register(CastLike)
def cast_like_gpu(op: CastLike, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp

    def one(row: int, x: Any) -> Any:
        target = np.dtype(chunk.inputs[1][row].dtype)
        if np.dtype(x.dtype).kind not in "uifb" or target.kind not in "uifb":
            raise SampleError(f"cast_like: both inputs must be numeric, got {x.dtype} and {target}")
        return cast_array(x, target, xp)

    return [each_sample(chunk, ctx, one)]
