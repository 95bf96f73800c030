"""``permute_batch`` on the GPU: the batch's device samples picked by index (references, no copies)."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.permute_batch import PermuteBatch
from ..context import GpuContext
from .registry import register

__all__ = ["permute_batch_gpu"]


@register(PermuteBatch)
def permute_batch_gpu(op: PermuteBatch, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return op.run(chunk)
