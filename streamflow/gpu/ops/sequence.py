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
    return [chunk.each_sample(lambda row, seq: op.rearrange(chunk, row, seq, ctx.xp))]


@register(ElementExtract)
def element_extract_gpu(op: ElementExtract, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return op.extract(chunk, chunk.inputs[0], ctx.xp)
