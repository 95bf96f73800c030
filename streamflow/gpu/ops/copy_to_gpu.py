"""``.gpu()``: host samples to the device, one asynchronous copy per batch.
"""

from __future__ import annotations

from typing import Any

from ...operator import Chunk, CopyToGpu
from ..context import GpuContext
from .registry import register

__all__ = ["copy_to_gpu"]


@register(CopyToGpu)
def copy_to_gpu(op: CopyToGpu, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    """``.gpu()``: pinned staging, one asynchronous copy per batch on the stage's stream."""
    return [ctx.to_device(chunk.inputs[0])]
