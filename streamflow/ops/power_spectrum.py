"""``power_spectrum``: the power (or magnitude) spectrum along one axis, as DALI 2.4.

``out = |rfft(x, nfft, axis)| ** power`` with ``power`` 2 (``re^2 + im^2``,
the default) or 1 (the magnitude); ``nfft`` (default: the axis' length)
truncates or zero-pads the signal; the axis gets ``nfft // 2 + 1`` bins.
Inputs are float32 (DALI refuses other types); outputs float32. The FFT is
numpy's (``xp.fft``; cuFFT through cupy on the GPU) in float64, DALI's is
float32: results agree within float32 rounding.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["PowerSpectrum", "power_spectrum", "spectrum"]


def spectrum(xp: Any, x: Any, axis: int, nfft: int | None, power: int) -> Any:
    """``|rfft(x, nfft, axis)| ** power`` as float32 (``xp``: numpy or cupy)."""
    if np.dtype(x.dtype) != np.float32:
        raise SampleError(f"power_spectrum: expects float32 samples, got {x.dtype}")
    if not -x.ndim <= axis < x.ndim:
        raise SampleError(f"power_spectrum: axis {axis} is outside a sample of {x.ndim} dimensions")
    n = nfft or x.shape[axis]
    if n <= 0:
        raise SampleError(f"power_spectrum: the transform needs a positive length, got {n}")
    f = xp.fft.rfft(x.astype(xp.float64), n=n, axis=axis)
    p = f.real * f.real + f.imag * f.imag
    return (p if power == 2 else xp.sqrt(p)).astype(xp.float32)


class PowerSpectrum(Operator):
    """Power spectrum along ``axis`` of each sample."""

    name: ClassVar[str] = "power_spectrum"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, axis: int = -1, nfft: int | None = None, power: int = 2, *, name: str | None = None) -> None:
        super().__init__(name=name)
        if power not in (1, 2):
            raise PipelineDefinitionError(f"power_spectrum: power must be 1 or 2, got {power}")
        if nfft is not None and nfft <= 0:
            raise PipelineDefinitionError(f"power_spectrum: nfft must be positive, got {nfft}")
        self.axis, self.nfft, self.power = int(axis), nfft, int(power)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, x: spectrum(np, np.asarray(x), self.axis, self.nfft, self.power))]


@fn_function()
def power_spectrum(
    input: DataNode,
    *,
    axis: int = -1,
    nfft: int | None = None,
    power: int = 2,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """The power spectrum of float32 signals along ``axis``: ``nfft // 2 + 1`` bins.

    Args:
        axis: the axis transformed to frequencies (default: the last).
        nfft: the FFT size (default: the axis' length; shorter truncates, longer zero-pads).
        power: 2 for ``re^2 + im^2`` (default), 1 for the magnitude.
    """
    return add_node(PowerSpectrum(axis, nfft, power, name=name), [input], device=device)[0]
