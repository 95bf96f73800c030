"""Sequences on the GPU: an image operator frame by frame (``FrameWise``, through the frame
operator's own GPU implementation), ``per_frame``, ``sequence_rearrange``, ``element_extract``.

The same expansion and regrouping as on the CPU (``ops/sequence.py``); frames are
stacked with the array module of the context (cupy on a GPU, numpy in the host build).
"""

from __future__ import annotations

from typing import Any

from ...errors import SampleError
from ...operator import Chunk
from ...ops.sequence import ElementExtract, FrameWise, PerFrame, SequenceRearrange
from ..context import GpuContext
from .registry import find_impl, register

__all__ = ["element_extract_gpu", "frame_wise_gpu", "per_frame_gpu", "sequence_rearrange_gpu"]


@register(FrameWise)
def frame_wise_gpu(op: FrameWise, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    impl = find_impl(op.inner)
    if impl is None:
        raise SampleError(f"{op.name} has no GPU implementation for sequences")
    sub, spans, failed = op.expand(chunk)
    outputs = impl(op.inner, sub, ctx) if len(sub) else [[] for _ in range(op.num_outputs)]
    return op.regroup(chunk, sub, outputs, spans, failed, ctx.xp.stack)


@register(PerFrame)
def per_frame_gpu(op: PerFrame, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [list(chunk.inputs[0])]


@register(SequenceRearrange)
def sequence_rearrange_gpu(op: SequenceRearrange, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp

    def rearrange(row: int, seq: Any) -> Any:
        if seq.ndim < 1:
            raise SampleError("sequence_rearrange: expected a sequence, got a scalar")
        order = op.order_of(chunk, row, int(seq.shape[0]))
        return xp.ascontiguousarray(seq[xp.asarray(order)])

    return [chunk.each_sample(rearrange)]


@register(ElementExtract)
def element_extract_gpu(op: ElementExtract, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    outs: list[list[Any]] = [[None] * len(chunk) for _ in op.element_map]
    for row, seq in enumerate(chunk.inputs[0]):
        n = int(seq.shape[0]) if seq.ndim else 0
        bad = [e for e in op.element_map if not 0 <= e < n]
        if bad:
            chunk.fail(row, SampleError(f"element_extract: element {bad[0]} is outside the sequence of {n} elements"))
            continue
        for k, e in enumerate(op.element_map):
            outs[k][row] = ctx.xp.ascontiguousarray(seq[e])
    return outs


