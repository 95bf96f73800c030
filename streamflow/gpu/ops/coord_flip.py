"""``coord_flip`` on the GPU: the CPU operator's float32 operations over cupy (``CoordFlip.flip_sample``)."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.coord_flip import CoordFlip
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["coord_flip_gpu"]


@register(CoordFlip)
def coord_flip_gpu(op: CoordFlip, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [each_sample(chunk, ctx, lambda row, points: op.flip_sample(chunk, row, points, ctx.xp))]
