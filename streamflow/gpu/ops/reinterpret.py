"""``reinterpret`` on the GPU: a view of the device array (shapes planned on the host, as on the CPU)."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.reinterpret import Reinterpret
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["reinterpret_gpu"]


@register(Reinterpret)
def reinterpret_gpu(op: Reinterpret, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    if len(chunk.inputs) > 1:  # the shape input was copied to the device with the data: plan on the host
        chunk.inputs[1] = [None if s is None else ctx.to_host(s) for s in chunk.inputs[1]]
    return [each_sample(chunk, ctx, lambda row, x: op.view_sample(chunk, row, x, ctx.xp))]
