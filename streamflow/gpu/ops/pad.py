"""``pad`` on the GPU: output shapes planned on the host from the batch's shapes, one fill and copy per sample."""

from __future__ import annotations

from typing import Any

from ...errors import SampleError
from ...operator import Chunk
from ...ops.pad import Pad, fill_as
from ..context import GpuContext
from .registry import register

__all__ = ["pad_gpu"]


@register(Pad)
def pad_gpu(op: Pad, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    samples = list(chunk.inputs[0])
    try:
        shapes, fills = op.plan(chunk, [tuple(s.shape) for s in samples])
    except SampleError as err:
        for row in range(len(samples)):
            chunk.fail(row, SampleError(err.reason))
        return [[None] * len(samples)]
    out: list[Any] = []
    for x, shape, fill in zip(samples, shapes, fills):
        y = xp.full(shape, fill_as(fill, x.dtype), dtype=x.dtype)
        y[tuple(slice(0, e) for e in x.shape)] = x
        out.append(y)
    return [out]
