"""``bb_flip`` on the GPU: the CPU operator's float32 operations over cupy (``BbFlip.flip_sample``)."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.bb_flip import BbFlip
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["bb_flip_gpu"]


@register(BbFlip)
def bb_flip_gpu(op: BbFlip, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [each_sample(chunk, ctx, lambda row, boxes: op.flip_sample(chunk, row, boxes, ctx.xp))]
