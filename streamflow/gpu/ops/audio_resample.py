"""``audio_resample`` on the GPU: DALI's windowed sinc as a gather and a weighted sum, over ``ctx.xp``.

Each output sample's ``2 * lobes`` taps are gathered at once (an
``(outputs, taps)`` index array) and weighted by the tabulated window,
interpolated on the device; positions follow the CPU resampler (a double
block start every 256 outputs, float32 offsets from it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._native import audio as native_audio
from ..._native.audio import normalized_float, normalized_int
from ...operator import Chunk
from ...ops.audio_resample import AudioResample
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["audio_resample_gpu", "resample_xp"]

_BLOCK = 256


def resample_xp(xp: Any, x: Any, in_rate: float, out_rate: float, length: int, quality: float) -> Any:
    """Resample float32 ``x`` of shape ``(n,)`` or ``(n, channels)`` to ``length`` samples (float32)."""
    window = native_audio.window_for_quality(quality)
    n = int(x.shape[0])
    ratio = in_rate / out_rate
    # Positions are planned on the host: a double block start every 256 outputs, then float32 offsets
    # accumulated output by output (a sequential float32 sum, as the CPU loop adds them).
    blocks = -(-length // _BLOCK)
    start = np.arange(blocks, dtype=np.float64) * _BLOCK * ratio
    block_base = np.floor(start)
    steps = np.full((blocks, _BLOCK), np.float32(ratio), dtype=np.float32)
    steps[:, 0] = (start - block_base).astype(np.float32)
    pos = np.add.accumulate(steps, axis=1, dtype=np.float32).reshape(-1)[:length]
    base = np.repeat(block_base, _BLOCK)[:length]
    first = np.ceil(pos).astype(np.int64) - window.lobes
    taps = np.arange(2 * window.lobes, dtype=np.int64)
    index = (base.astype(np.int64) + first)[:, None] + taps[None, :]
    offset = (first[:, None] + taps[None, :]).astype(np.float32) - pos[:, None]
    valid = (index >= 0) & (index < n)
    weights = xp.asarray(np.where(valid, 1.0, 0.0).astype(np.float32)) * window(xp.asarray(offset), xp)
    gathered = x[xp.asarray(np.clip(index, 0, max(n - 1, 0)))]
    if x.ndim == 1:
        return (gathered * weights).sum(axis=1, dtype=xp.float32)
    return (gathered * weights[:, :, None]).sum(axis=1, dtype=xp.float32)


@register(AudioResample)
def audio_resample_gpu(op: AudioResample, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp

    def one(row: int, x: Any) -> Any:
        in_rate, out_rate, length, out_dtype = op.plan(chunk, row, x)
        if length == 0 or x.shape[0] == 0 or (x.ndim == 2 and x.shape[1] == 0):
            return xp.zeros((length, *x.shape[1:]), dtype=out_dtype)
        y = resample_xp(xp, normalized_float(x, xp), in_rate, out_rate, length, op.quality)
        return y if out_dtype == np.float32 else normalized_int(y, out_dtype, xp)

    return [each_sample(chunk, ctx, one)]

