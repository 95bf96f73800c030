"""``preemphasis_filter`` on the GPU: the CPU operator's filter and conversion, over ``ctx.xp``."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.preemphasis_filter import PreemphasisFilter
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["preemphasis_filter_gpu"]


@register(PreemphasisFilter)
def preemphasis_filter_gpu(op: PreemphasisFilter, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [each_sample(chunk, ctx, lambda row, x: op.filter_sample(chunk, row, x, ctx.xp))]
