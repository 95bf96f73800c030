"""``coord_transform`` on the GPU: the CPU operator's float32 operations over cupy
(``CoordTransform.transform_sample``: the products summed in DALI's order, then ``cast_array``)."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.coord_transform import CoordTransform
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["coord_transform_gpu"]


@register(CoordTransform)
def coord_transform_gpu(op: CoordTransform, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [each_sample(chunk, ctx, lambda row, points: op.transform_sample(chunk, row, points, ctx.xp))]
