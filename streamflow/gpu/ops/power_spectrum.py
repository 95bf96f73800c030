"""``power_spectrum`` on the GPU: the CPU code over cupy (cuFFT)."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.power_spectrum import PowerSpectrum, spectrum
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["power_spectrum_gpu"]


@register(PowerSpectrum)
def power_spectrum_gpu(op: PowerSpectrum, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [each_sample(chunk, ctx, lambda row, x: spectrum(ctx.xp, x, op.axis, op.nfft, op.power))]
