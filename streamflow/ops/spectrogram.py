"""``spectrogram``: the short-time Fourier transform's magnitude, as DALI 2.4's CPU operator.

Windows of ``window_length`` samples every ``window_step``; with
``center_windows`` (default) window ``i`` is centred on sample
``i * window_step`` (``n // step + 1`` windows) and the signal is extended by
reflection (``reflect_padding``, without repeating the edge sample) or zeros;
otherwise only whole windows inside the signal (``(n - length) // step + 1``).
Each window is multiplied by ``window_fn`` (default DALI's Hann,
``0.5 - 0.5 cos(2 pi (t + 0.5) / length)``), zero-padded to ``nfft``
(default ``window_length``) and transformed; the output is ``|X| ** power``
for the ``nfft // 2 + 1`` non-negative frequencies, float32, in layout
``"ft"`` (default) or ``"tf"``.

The transform is numpy's pocketfft in float64 on the float32 windowed
samples, the power rounded to float32 (numpy's float32 transform of many rows
is several times slower and no more like DALI's; a float32 FFT, scipy's,
would be faster but adds its own rounding, 3e-3 dB in the quietest bins, to
DALI's). The zero padding to ``nfft`` is at the end of each window: DALI
centres the window in ``nfft`` instead, which only rotates it, so the
magnitudes are the same. Agreement with DALI: within 2e-5 of each output's
maximum (``docs/audio.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import audio as native_audio
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["Spectrogram", "frame_signal", "hann_window", "num_windows", "spectrogram", "windowed_fft"]


def windowed_fft(frames: np.ndarray, window: np.ndarray, n: int) -> np.ndarray:
    """The FFT of each row of ``frames * window`` (float32 products, as DALI's), zero-padded to ``n``.

    The products are written straight into a zero-padded float64 array
    (numpy's transform of whole rows is faster than its own padding);
    returns ``(rows, n // 2 + 1)`` complex128.
    """
    padded = np.zeros((frames.shape[0], n), np.float64)
    np.multiply(frames, window, out=padded[:, : frames.shape[1]])  # float32 loop, stored as float64
    return np.fft.rfft(padded, axis=-1)


def hann_window(length: int) -> np.ndarray:
    """DALI's Hann window (float32): ``0.5 * (1 - cos(2 pi (t + 0.5) / length))``."""
    t = np.arange(length, dtype=np.float64)
    return (0.5 * (1.0 - np.cos(2.0 * np.pi * (t + 0.5) / length))).astype(np.float32)


def num_windows(n: int, length: int, step: int, centered: bool) -> int:
    """Windows DALI extracts from ``n`` samples."""
    if not centered:
        return max(0, (n - length) // step + 1) if n >= length else 0
    return n // step + 1


def frame_signal(xp: Any, x: Any, length: int, step: int, centered: bool, reflect: bool,
                 contiguous: bool = True) -> Any:
    """The windows of a 1-D signal as a ``(windows, length)`` array (no window function applied).

    With ``contiguous=False`` the result may be a strided view (of the signal or of its padded copy).
    """
    n = int(x.shape[0])
    count = num_windows(n, length, step, centered)
    if count == 0:
        return xp.zeros((0, length), dtype=x.dtype)
    half = length // 2
    if centered and n > half:
        # the usual case: pad once (reflection or zeros) and take strided windows, no index arrays
        padded = xp.pad(x, (half, max(0, (count - 1) * step + length - half - n)),
                        mode="reflect" if reflect else "constant")
        view = xp.lib.stride_tricks.as_strided(padded, shape=(count, length),
                                               strides=(padded.strides[0] * step, padded.strides[0]))
        return xp.ascontiguousarray(view) if contiguous else view
    if not centered:
        view = xp.lib.stride_tricks.as_strided(x, shape=(count, length), strides=(x.strides[0] * step, x.strides[0]))
        return xp.ascontiguousarray(view) if contiguous else view
    starts = xp.arange(count, dtype=xp.int64) * step - (length // 2 if centered else 0)
    index = starts[:, None] + xp.arange(length, dtype=xp.int64)[None, :]
    if not centered:
        return x[index]
    if reflect and n > 1:
        period = 2 * (n - 1)  # reflection without repeating the edge: ... 2 1 | 0 1 2 ... n-1 | n-2 ...
        folded = xp.abs(index) % period
        folded = xp.where(folded >= n, period - folded, folded)
        return x[folded]
    inside = (index >= 0) & (index < n)
    values = x[xp.clip(index, 0, max(n - 1, 0))] if n else xp.zeros(index.shape, dtype=x.dtype)
    return xp.where(inside, values, xp.zeros((), dtype=x.dtype))


class Spectrogram(Operator):
    """See the module docstring."""

    name = "spectrogram"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, *, nfft: int | None = None, window_length: int = 512, window_step: int = 256,
                 window_fn: Sequence[float] | None = None, power: int = 2, center_windows: bool = True,
                 reflect_padding: bool = True, layout: str = "ft", name: str | None = None) -> None:
        super().__init__(name=name)
        self.window_length, self.window_step = int(window_length), int(window_step)
        if self.window_length <= 0 or self.window_step <= 0:
            raise PipelineDefinitionError(
                f"spectrogram: window_length and window_step must be positive, got {window_length}, {window_step}")
        self.nfft = self.window_length if nfft is None or int(nfft) <= 0 else int(nfft)
        if self.nfft < self.window_length:
            raise PipelineDefinitionError(
                f"spectrogram: nfft ({self.nfft}) must be at least window_length ({self.window_length})")
        if power not in (1, 2):
            raise PipelineDefinitionError(f"spectrogram: power must be 1 (magnitude) or 2 (power), got {power}")
        self.power = int(power)
        if window_fn is not None and len(window_fn) > 0:
            self.window = np.asarray(window_fn, dtype=np.float32).reshape(-1)
            if self.window.size != self.window_length:
                raise PipelineDefinitionError(
                    f"spectrogram: window_fn has {self.window.size} values; it needs window_length = "
                    f"{self.window_length}")
        else:
            self.window = hann_window(self.window_length)
        self.center_windows, self.reflect_padding = bool(center_windows), bool(reflect_padding)
        if layout not in ("ft", "tf"):
            raise PipelineDefinitionError(f"spectrogram: layout must be 'ft' or 'tf', got {layout!r}")
        self._layout = layout

    def signal(self, x: Any) -> Any:
        """The 1-D float32 signal of a sample: ``(n,)``, ``(n, 1)`` or ``(1, n)``."""
        if x.ndim == 2 and 1 in x.shape:
            x = x.reshape(-1)
        if x.ndim != 1:
            raise SampleError(f"spectrogram: expects one channel, (n,), (n, 1) or (1, n); got shape {tuple(x.shape)}")
        return x

    def frames(self, xp: Any, x: Any, windowed: bool = True) -> Any:
        """Windowed frames: ``(windows, window_length)`` float32 (the FFT zero-pads them to nfft).

        ``windowed=False``: the frames before the window function, possibly a strided view.
        """
        frames = frame_signal(xp, x.astype(xp.float32, copy=False), self.window_length, self.window_step,
                              self.center_windows, self.reflect_padding, contiguous=False)
        return frames * xp.asarray(self.window)[None, :] if windowed else frames

    def finish(self, xp: Any, spectrum: Any) -> Any:
        """``|X| ** power`` of ``(windows, bins)`` complex values, in the output layout, float32."""
        mag = spectrum.real ** 2 + spectrum.imag ** 2
        if self.power == 1:
            mag = xp.sqrt(mag)
        if self._layout == "ft":
            return xp.ascontiguousarray(mag.T, dtype=xp.float32)  # one pass: transpose and round
        return mag.astype(xp.float32)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, x: Any) -> np.ndarray:
            x = self.signal(np.asarray(x))
            if x.dtype != np.float32:
                raise SampleError(f"spectrogram: expects float32 samples, got {x.dtype}")
            n, half = x.shape[0], self.window_length // 2
            if n and (not self.center_windows or n > half):  # C framing and powers, one call each
                count = num_windows(n, self.window_length, self.window_step, self.center_windows)
                frames = native_audio.stft_frames(x, self.window, count, self.nfft, self.window_step,
                                                  half if self.center_windows else 0, self.reflect_padding)
                return native_audio.stft_power(np.fft.rfft(frames, axis=-1), self.power, self._layout == "ft")
            return self.finish(np, windowed_fft(self.frames(np, x, windowed=False), self.window, self.nfft))

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def spectrogram(
    data: DataNode,
    *,
    nfft: int | None = None,
    window_length: int = 512,
    window_step: int = 256,
    window_fn: Sequence[float] | None = None,
    power: int = 2,
    center_windows: bool = True,
    reflect_padding: bool = True,
    layout: str = "ft",
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """The spectrogram of one-channel float32 signals.

    Args:
        nfft: FFT size (default ``window_length``); ``nfft // 2 + 1`` bins.
        window_length: samples per window.
        window_step: samples between windows.
        window_fn: ``window_length`` window values (default: Hann).
        power: 1 (magnitude) or 2 (power).
        center_windows: centre window ``i`` on sample ``i * window_step``
            (padding the signal) instead of keeping whole windows only.
        reflect_padding: pad by reflection (else zeros) when centring.
        layout: ``"ft"`` (frequency-major, default) or ``"tf"``.
    """
    op = Spectrogram(nfft=nfft, window_length=window_length, window_step=window_step, window_fn=window_fn,
                     power=power, center_windows=center_windows, reflect_padding=reflect_padding, layout=layout,
                     name=name)
    return add_node(op, [data], device=device)[0]
