"""``spectrogram`` on the GPU: the windows of the whole batch in one cuFFT call (cupy.fft), over ``ctx.xp``."""

from __future__ import annotations

from typing import Any

from ...errors import SampleError
from ...operator import Chunk
from ...ops.spectrogram import Spectrogram
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["spectrogram_gpu"]


@register(Spectrogram)
def spectrogram_gpu(op: Spectrogram, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp

    def frames(row: int, x: Any) -> Any:
        signal = op.signal(x)
        if signal.dtype != xp.float32:
            raise SampleError(f"spectrogram: expects float32 samples, got {signal.dtype}")
        return op.frames(xp, signal)

    framed = each_sample(chunk, ctx, frames)
    rows = [r for r, f in enumerate(framed) if f is not None]
    out: list[Any] = [None] * len(chunk)
    if not rows:
        return [out]
    counts = [framed[r].shape[0] for r in rows]
    batch = xp.concatenate([framed[r] for r in rows]) if len(rows) > 1 else framed[rows[0]]
    spectrum = xp.fft.rfft(batch, n=op.nfft, axis=1)  # complex64: one batched cuFFT plan on the GPU
    start = 0
    for row, count in zip(rows, counts):
        out[row] = op.finish(xp, spectrum[start : start + count])
        start += count
    return [out]
