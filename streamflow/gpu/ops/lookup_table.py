"""``lookup_table`` on the GPU: a gather from the table, copied to the device once per stage (``LookupTable.lookup``)."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.lookup_table import LookupTable
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["lookup_table_gpu"]


@register(LookupTable)
def lookup_table_gpu(op: LookupTable, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    table = ctx.shared(("lookup_table", id(op)), lambda: xp.asarray(op.table))
    return [each_sample(chunk, ctx, lambda row, x: op.lookup(x, xp, table))]
