"""``decoders.inflate`` with GPU data: the compressed bytes are copied to the host, decompressed there
(liblz4 / zlib, as on the CPU) and the result copied back. nvCOMP, which DALI uses, is not used: this
keeps DALI pipelines that inflate GPU data (``fn.decoders.inflate(data.gpu(), ...)``) running."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.decoders.inflate import Inflate
from ..context import GpuContext
from .registry import register

__all__ = ["inflate_gpu"]


@register(Inflate)
def inflate_gpu(op: Inflate, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    host = chunk.each_sample(lambda row, data: op.decode(chunk, row, ctx.to_host(data)))
    done = [h for h in host if h is not None]
    on_device = iter(ctx.to_device(done) if done else [])
    return [[None if h is None else next(on_device) for h in host]]
