"""``copy`` on the GPU: one device-to-device copy per sample."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.copy import Copy
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["copy_gpu"]


@register(Copy)
def copy_gpu(op: Copy, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [each_sample(chunk, ctx, lambda row, x: x.copy())]
