"""``mfcc`` on the GPU: the DCT as one matrix product (cuBLAS) for the batch, over ``ctx.xp``."""

from __future__ import annotations

from typing import Any

from ...errors import SampleError
from ...operator import Chunk
from ...ops.mfcc import Mfcc
from ..context import GpuContext
from .audio_common import each_sample, matmul_by_length
from .registry import register

__all__ = ["mfcc_gpu"]


@register(Mfcc)
def mfcc_gpu(op: Mfcc, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp

    def check(row: int, x: Any) -> Any:
        if x.ndim == 0 or x.dtype != xp.float32:
            raise SampleError(f"mfcc: expects a float32 mel spectrogram, got shape {x.shape} of {x.dtype}")
        op.matrix(x.ndim, tuple(x.shape))
        return x

    samples = each_sample(chunk, ctx, check)
    return [matmul_by_length(xp, samples, lambda x: op.axis % x.ndim,
                             lambda x: op.matrix(x.ndim, tuple(x.shape))[1])]
