"""``one_hot`` on the GPU: the CPU operator's comparison over cupy (``OneHot.encode``), with the
batch's legacy scalar rule decided on the whole batch as on the CPU."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.one_hot import OneHot
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["one_hot_gpu"]


@register(OneHot)
def one_hot_gpu(op: OneHot, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    scalars = op.scalar_batch(chunk.inputs[0])
    return [each_sample(chunk, ctx, lambda row, x: op.encode(x, scalars, ctx.xp))]
