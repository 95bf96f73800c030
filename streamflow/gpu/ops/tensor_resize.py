"""``tensor_resize`` on the GPU: the CPU code (per-axis passes over the resampler's taps) over cupy."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.tensor_resize import TensorResize
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["tensor_resize_gpu"]


@register(TensorResize)
def tensor_resize_gpu(op: TensorResize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [each_sample(chunk, ctx, lambda row, x: op.apply(ctx.xp, chunk, row, x))]
