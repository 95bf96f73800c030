"""``water``, ``sphere``, ``jitter`` on the GPU: the CPU code (``ops/displacement.py``) over cupy.

The maps are float32 element-wise expressions and the sampling a gather, so
cupy runs them as a few fused element-wise kernels; jitter's random offsets
are drawn on the host (the CPU's stream, so both devices give the same image)
and copied over.
"""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.displacement import Displacement
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["displacement_gpu"]


@register(Displacement)
def displacement_gpu(op: Displacement, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [each_sample(chunk, ctx, lambda row, image: op.apply(ctx.xp, chunk, row, image))]
