"""``constant``, ``full``, ``full_like``, ``zeros(_like)``, ``ones(_like)`` on the GPU: filled device arrays.

The shapes and types are planned as on the CPU (``Fill.plan``); the values
are converted on the host when they are one constant, and with the CPU's
saturating conversion over ``xp`` when they come from a fill input.
"""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.constant import Constant, Fill
from ..context import GpuContext
from .registry import register

__all__ = ["constant_gpu", "fill_gpu"]


@register(Constant)
def constant_gpu(op: Constant, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    # One device copy per batch (not per pipeline: the consumer may write to what it is handed).
    value = ctx.to_device([op.value])[0]
    return [[value] * len(chunk)]


@register(Fill)
def fill_gpu(op: Fill, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [op.fill_batch(chunk, ctx.xp)]
