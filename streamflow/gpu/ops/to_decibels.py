"""``to_decibels`` on the GPU: element-wise, the reference (each sample's maximum) kept on the device."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.to_decibels import ToDecibels
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["to_decibels_gpu"]


@register(ToDecibels)
def to_decibels_gpu(op: ToDecibels, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    min_ratio = np.float32(10.0 ** (op.cutoff_db / op.multiplier))

    def one(row: int, x: Any) -> Any:
        if x.dtype.kind not in "uif":
            raise SampleError(f"to_decibels: expects numbers, got {x.dtype}")
        v = x.astype(xp.float32)
        # A reference of 0 (every value 0) gives the cutoff everywhere, as on the CPU.
        ref = v.max() if op.reference == 0.0 and v.size else xp.asarray(op.reference, dtype=xp.float32)
        inv = xp.where(ref != 0, np.float32(1.0) / xp.where(ref != 0, ref, np.float32(1.0)), np.float32(0.0))
        ratio = xp.maximum(v * inv.astype(xp.float32), min_ratio)
        return (np.float32(op.multiplier) * xp.log10(ratio)).astype(xp.float32)

    return [each_sample(chunk, ctx, one)]
