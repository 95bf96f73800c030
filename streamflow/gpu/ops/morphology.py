"""``experimental.dilate`` / ``erode`` on the GPU: the CPU code (shifted maxima) over cupy."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.morphology import Morphology
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["morphology_gpu"]


@register(Morphology)
def morphology_gpu(op: Morphology, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [each_sample(chunk, ctx, lambda row, image: op.apply(ctx.xp, chunk, row, image))]
