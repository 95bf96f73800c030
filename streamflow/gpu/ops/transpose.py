"""``transpose`` on the GPU: a cupy copy into the permuted order (no custom kernel needed)."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.transpose import Transpose
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["transpose_gpu"]


@register(Transpose)
def transpose_gpu(op: Transpose, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp

    def one(row: int, x: Any) -> Any:
        # asarray(order="C"), not ascontiguousarray: that one makes 0-d samples 1-d
        return xp.asarray(xp.transpose(x, op.perm_for(tuple(x.shape))), order="C")

    return [each_sample(chunk, ctx, one)]
