"""``pad`` on the GPU: output shapes planned on the host from the batch's shapes, one fill and copy per sample."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.pad import Pad
from ..context import GpuContext
from .registry import register

__all__ = ["pad_gpu"]


@register(Pad)
def pad_gpu(op: Pad, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [op.pad_batch(chunk, list(chunk.inputs[0]), ctx.xp)]
