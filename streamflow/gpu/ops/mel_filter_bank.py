"""``mel_filter_bank`` on the GPU: one matrix product (cuBLAS) for the batch, over ``ctx.xp``."""

from __future__ import annotations

from typing import Any

from ...errors import SampleError
from ...operator import Chunk
from ...ops.mel_filter_bank import MelFilterBank
from ..context import GpuContext
from .audio_common import each_sample, matmul_by_length
from .registry import register

__all__ = ["mel_filter_bank_gpu"]


@register(MelFilterBank)
def mel_filter_bank_gpu(op: MelFilterBank, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp

    def check(row: int, x: Any) -> Any:
        if x.ndim == 0 or x.dtype != xp.float32:
            raise SampleError(f"mel_filter_bank: expects a float32 spectrogram, got shape {x.shape} of {x.dtype}")
        op.weights(x.shape[op.freq_axis(x.ndim)])  # fails the sample when the axis is too short
        return x

    samples = each_sample(chunk, ctx, check)

    def axis(x: Any) -> int:
        return op.freq_axis(x.ndim)

    out = matmul_by_length(xp, samples, axis, lambda x: op.weights(x.shape[axis(x)]))
    return [[None if r is None else r.astype(xp.float32, copy=False) for r in out]]
