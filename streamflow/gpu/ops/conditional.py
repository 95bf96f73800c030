"""The merge of an ``if`` on pipeline data, on the GPU: per sample, a reference to the chosen branch's value.

No kernel: the samples are already on the device; a constant that a branch
set is copied to the device once per sample that takes it.
"""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.conditional import Merge
from ..context import GpuContext
from .registry import register

__all__ = ["merge_gpu"]


@register(Merge)
def merge_gpu(op: Merge, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [op.pick(chunk, lambda constant: ctx.to_device([constant])[0])]
