"""``erase`` on the GPU: regions planned on the host, filled on the device (the CPU's ``erase_regions`` over ``xp``)."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.erase import Erase, erase_regions
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["erase_gpu"]


@register(Erase)
def erase_gpu(op: Erase, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    def one(row: int, x: Any) -> Any:
        axes, regions = op.regions(chunk, row, tuple(x.shape))
        value, channel_axis = op.fill(chunk, row, x)
        return erase_regions(ctx.xp, x, axes, regions, value, channel_axis)

    return [each_sample(chunk, ctx, one)]
