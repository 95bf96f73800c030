"""The CPU audio resampler (DALI's windowed-sinc resampler), over the C extension ``_audio``.

DALI resamples audio (``decoders.audio(sample_rate=...)``, ``audio_resample``)
with a sinc filter under a Hann envelope, tabulated and linearly interpolated:

* ``quality`` q in [0, 100] gives ``lobes = round(0.007 q^2 - 0.09 q + 3)``
  (3 at 0, 16 at 50, 64 at 100) and a table of ``64 * lobes + 1`` points.
* Output sample ``j`` sits at input position ``j * in_rate / out_rate``; its
  taps are the input samples less than ``lobes`` away (clipped to the signal),
  weighted by ``sinc(d) * hann(d / lobes)``. The window is not widened when
  downsampling (DALI does not low-pass first), and the weights are not
  renormalised at the edges.
* Output length: ``ceil(n_in * out_rate / in_rate)``.
* Integer outputs: the float result times the type's maximum, rounded and
  saturated (DALI's ``ConvertSatNorm``).

The table, the per-output position and the order of the sum over taps
follow DALI's float32 arithmetic (the C loop reads the weights from phase
tables instead of per-tap lookups, with the same bits); results agree with
DALI's to float32 rounding (see ``docs/audio.md``).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

__all__ = [
    "ResampleWindow",
    "mel_rows",
    "nonsilent",
    "lobes_for_quality",
    "normalized_float",
    "normalized_int",
    "resample",
    "resampled_length",
    "window_for_quality",
]

_KINDS = {np.dtype(np.float32): 0, np.dtype(np.int16): 1, np.dtype(np.int32): 2}


def lobes_for_quality(quality: float) -> int:
    """Sinc lobes on each side for a resampling ``quality`` in [0, 100]."""
    q = float(quality)
    return int(round(0.007 * q * q - 0.09 * q + 3))


class ResampleWindow:
    """The tabulated windowed sinc of ``lobes`` lobes (``lookup[0]`` and the tail are zeros)."""

    def __init__(self, lobes: int) -> None:
        coeffs = 64 * lobes + 1
        self.lobes = lobes
        scale = np.float32(2.0 * lobes / (coeffs - 1))
        envelope_scale = np.float32(2.0 / coeffs)
        center = int((coeffs - 1) * 0.5)
        i = np.arange(coeffs, dtype=np.float32) - np.float32(center)
        x = (i * scale).astype(np.float32)
        y = (i * envelope_scale).astype(np.float64)
        px = np.pi * x.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            sinc = np.where(np.abs(px) < 1e-5, 1.0 - px * px / 6.0, np.sin(px) / px)
        lookup = np.zeros(coeffs + 5, dtype=np.float32)
        lookup[1 : coeffs + 1] = (sinc.astype(np.float32) * (0.5 * (1.0 + np.cos(y * np.pi))).astype(np.float32))
        self.lookup = lookup
        self.center = float(np.float32(center + 1))
        self.scale = float(np.float32(1.0) / scale)

    def __call__(self, x: Any, xp: Any = np) -> Any:
        """Window values at offsets ``x`` (float32 array of module ``xp``; the table is copied to it)."""
        lookup = xp.asarray(self.lookup)
        fi = x * np.float32(self.scale) + np.float32(self.center)
        fl = xp.floor(fi)
        i = xp.clip(fl.astype(np.int32), 0, len(self.lookup) - 2)
        inside = (fl >= 0) & (fl < len(self.lookup) - 1)
        w = lookup[i] + (fi - fl) * (lookup[i + 1] - lookup[i])
        return xp.where(inside, w, np.float32(0)).astype(np.float32)


@functools.lru_cache(maxsize=16)
def window_for_quality(quality: float) -> ResampleWindow:
    """The (cached) window DALI uses at ``quality``."""
    return ResampleWindow(lobes_for_quality(quality))


def resampled_length(n_in: int, in_rate: float, out_rate: float) -> int:
    """DALI's output length: ``ceil(n_in * out_rate / in_rate)``."""
    return int(math.ceil(n_in * float(out_rate) / float(in_rate)))


def resample(signal: np.ndarray, in_rate: float, out_rate: float, quality: float = 50.0,
             out_length: int | None = None, dtype: Any = np.float32) -> np.ndarray:
    """Resample a float32 signal of shape ``(n,)`` or ``(n, channels)``.

    Args:
        signal: float32 samples (other types are converted to float32 first).
        in_rate, out_rate: the sampling rates (only their ratio matters) [Hz].
        quality: DALI's quality in [0, 100].
        out_length: output samples (default: ``resampled_length``).
        dtype: float32, int16 or int32 output.
    """
    from . import _audio  # type: ignore[attr-defined]

    x = np.ascontiguousarray(signal, dtype=np.float32)
    if x.ndim not in (1, 2):
        raise ValueError(f"resample expects a (n,) or (n, channels) signal, got shape {x.shape}")
    channels = 1 if x.ndim == 1 else x.shape[1]
    n_out = resampled_length(x.shape[0], in_rate, out_rate) if out_length is None else int(out_length)
    out_dtype = np.dtype(dtype)
    if out_dtype not in _KINDS:
        raise ValueError(f"resample outputs float32, int16 or int32, not {out_dtype}")
    out = np.empty((n_out,) if x.ndim == 1 else (n_out, channels), dtype=out_dtype)
    if n_out == 0:
        return out
    if channels == 0:
        return out
    window = window_for_quality(float(quality))
    _audio.resample(x, out, channels, _KINDS[out_dtype], float(in_rate), float(out_rate), window.lookup,
                    window.scale, window.center, window.lobes, 0)
    return out


def normalized_float(x: Any, xp: Any = np) -> Any:
    """Samples as float32 in [-1, 1] (DALI's ConvertNorm: signed by the type's max, unsigned 0 -> -1)."""
    dtype = np.dtype(x.dtype)
    if dtype == np.float32:
        return x
    if dtype.kind == "f":
        return x.astype(xp.float32)
    info = np.iinfo(dtype)
    v = x.astype(xp.float64)
    return (v * (2.0 / info.max) - 1.0 if dtype.kind == "u" else v / info.max).astype(xp.float32)


def normalized_int(x: Any, dtype: np.dtype, xp: Any = np) -> Any:
    """float [-1, 1] samples as ``dtype`` (DALI's ConvertSatNorm): scaled, rounded half away from zero, saturated."""
    info = np.iinfo(dtype)
    v = x.astype(xp.float64)
    scaled = (v + 1.0) * (info.max / 2.0) if dtype.kind == "u" else v * info.max
    return xp.clip(xp.trunc(scaled + xp.copysign(0.5, scaled)), info.min, info.max).astype(dtype)


def nonsilent(x: np.ndarray, window: int, cutoff_db: float, reference_power: float | None) -> tuple[int, int]:
    """(begin, length) of the part of 1-D ``x`` whose ``window``-sample mean power is within ``cutoff_db``
    of ``reference_power`` (default: the loudest window's); the C version of
    ``streamflow.ops.nonsilent_region.region(moving_power(...))``, same results, no temporary arrays.

    ``x`` is float32 or float64 (other types: convert to float64 first); ``1 <= window <= len(x)``.
    """
    from . import _audio  # type: ignore[attr-defined]

    v = np.ascontiguousarray(x)
    if v.dtype not in (np.float32, np.float64) or v.ndim != 1:
        raise ValueError(f"nonsilent expects a 1-D float32 or float64 signal, got {v.dtype} {v.shape}")
    ratio = 10.0 ** (float(cutoff_db) / 10.0)
    reference = -1.0 if reference_power is None else float(reference_power)
    begin, length = _audio.nonsilent(v, int(v.dtype == np.float64), int(window), ratio, reference)
    return int(begin), int(length)


def mel_rows(spec: np.ndarray, bins: np.ndarray, weights: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Banded weighted sums of the rows of a 2-D float32 ``spec``: filter ``f`` is
    ``sum(weights[k] * spec[bins[k]] for k in range(offsets[f], offsets[f + 1]))``, added in order
    (``np.add.reduceat``'s order); a filter without bins is zero. Returns ``(len(offsets) - 1, spec.shape[1])``."""
    from . import _audio  # type: ignore[attr-defined]

    spec = np.ascontiguousarray(spec, dtype=np.float32)
    out = np.empty((len(offsets) - 1, spec.shape[1]), np.float32)
    if out.size == 0:
        return out
    _audio.mel_rows(spec, out, np.ascontiguousarray(bins, dtype=np.int64),
                    np.ascontiguousarray(weights, dtype=np.float32), np.ascontiguousarray(offsets, dtype=np.int64),
                    spec.shape[1])
    return out


def stft_frames(x: np.ndarray, window: np.ndarray, count: int, nfft: int, step: int, offset: int,
                reflect: bool) -> np.ndarray:
    """``(count, nfft)`` float64 rows: ``x[i * step - offset + t] * window[t]`` in float32 for
    ``t < len(window)``, zeros after; samples outside the non-empty float32 signal ``x`` reflected
    without repeating the edge (``reflect``) or zero."""
    from . import _audio  # type: ignore[attr-defined]

    out = np.empty((count, nfft), np.float64)
    if count:
        _audio.stft_frames(np.ascontiguousarray(x, dtype=np.float32), out,
                           np.ascontiguousarray(window, dtype=np.float32), count, nfft, step, offset, int(reflect))
    return out


def stft_power(spectrum: np.ndarray, power: int, transpose: bool) -> np.ndarray:
    """``|X| ** power`` (1 or 2) of a ``(windows, bins)`` complex128 spectrum, in double, as float32;
    ``(bins, windows)`` with ``transpose``."""
    from . import _audio  # type: ignore[attr-defined]

    spectrum = np.ascontiguousarray(spectrum, dtype=np.complex128)
    count, bins = spectrum.shape
    out = np.empty((bins, count) if transpose else (count, bins), np.float32)
    if out.size:
        _audio.stft_power(spectrum, out, count, bins, int(power), int(transpose))
    return out
