"""``preemphasis_filter`` on the GPU: the CPU operator's element-wise filter, over ``ctx.xp``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.preemphasis_filter import PreemphasisFilter, preemphasis
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["preemphasis_filter_gpu"]


@register(PreemphasisFilter)
def preemphasis_filter_gpu(op: PreemphasisFilter, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp

    def one(row: int, x: Any) -> Any:
        if x.ndim not in (1, 2) or x.dtype.kind not in "uif":
            raise SampleError(f"preemphasis_filter: expects a numeric (time,) or (time, channels) signal, "
                              f"got shape {x.shape} of {x.dtype}")
        y = preemphasis(xp, x, op.coeff(chunk, row), op.border)
        if op.out_dtype.kind in "ui":  # round half away from zero and saturate, as cast does
            info = np.iinfo(op.out_dtype)
            y = xp.clip(xp.trunc(y + xp.copysign(0.5, y)), info.min, info.max)
        return y.astype(op.out_dtype)

    return [each_sample(chunk, ctx, one)]
