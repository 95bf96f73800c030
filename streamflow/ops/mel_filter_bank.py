"""``mel_filter_bank``: a spectrogram to a mel spectrogram, as DALI 2.4's CPU operator.

``nfilter`` triangular filters with centres evenly spaced on the mel scale
between ``freq_low`` and ``freq_high`` (default ``sample_rate / 2``); the
filters' corners are the mel points turned back to Hz, and FFT bin ``k`` sits
at ``k * sample_rate / nfft`` Hz (``nfft = 2 * (bins - 1)``); bins outside
``[freq_low, freq_high]`` get no weight. ``mel_formula``: ``"slaney"``
(linear below 1 kHz, logarithmic above; librosa's default) or ``"htk"``
(``2595 log10(1 + f / 700)``). ``normalize=True`` scales each filter by
``2 / (f_right - f_left)`` (unit area, librosa's ``norm="slaney"``), else its
peak is 1. The frequency axis is the ``f`` of the input layout (``"ft"`` from
``spectrogram``), else the second to last (or only) axis.

The weights are a ``(nfilter, bins)`` matrix built in float64. On the CPU
only its non-zero entries are used (each bin feeds at most two filters): for
an ``"ft"`` spectrogram in C (``streamflow._native.audio.mel_rows``), each
filter's weighted bins added in increasing order as DALI does; other layouts
in numpy (``np.add.reduceat``, whose order differs in the last bit). The GPU
implementation does one dense matrix product per batch.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._native import audio as native_audio
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["MelFilterBank", "hz_to_mel", "mel_filter_bank", "mel_to_hz", "mel_weights", "sparse_weights"]

_SLANEY_STEP = 0.068751777  # log(6.4) / 27, as DALI rounds it
_F_SP = 200.0 / 3.0


def hz_to_mel(hz: Any, formula: str) -> Any:
    hz = np.asarray(hz, dtype=np.float64)
    if formula == "htk":
        return 1127.0 * np.log1p(hz / 700.0)
    with np.errstate(divide="ignore"):
        return np.where(hz >= 1000.0, 15.0 + np.log(np.maximum(hz, 1e-300) / 1000.0) / _SLANEY_STEP, hz / _F_SP)


def mel_to_hz(mel: Any, formula: str) -> Any:
    mel = np.asarray(mel, dtype=np.float64)
    if formula == "htk":
        return 700.0 * np.expm1(mel / 1127.0)
    return np.where(mel >= 15.0, 1000.0 * np.exp(_SLANEY_STEP * (mel - 15.0)), mel * _F_SP)


@functools.lru_cache(maxsize=32)
def mel_weights(nfilter: int, bins: int, sample_rate: float, freq_low: float, freq_high: float, normalize: bool,
                formula: str) -> np.ndarray:
    """The ``(nfilter, bins)`` float32 filter matrix (read-only, cached)."""
    nfft = 2 * (bins - 1)
    high = freq_high if freq_high > 0 else sample_rate / 2.0
    mel_low, mel_high = hz_to_mel(freq_low, formula), hz_to_mel(high, formula)
    delta = (mel_high - mel_low) / (nfilter + 1)
    corners = mel_to_hz(mel_low + delta * np.arange(nfilter + 2), formula)
    corners[-1] = mel_to_hz(mel_high, formula)
    freqs = np.arange(bins) * (sample_rate / nfft)
    left, centre, right = corners[:-2, None], corners[1:-1, None], corners[2:, None]
    up = (freqs[None, :] - left) / (centre - left)
    down = (right - freqs[None, :]) / (right - centre)
    weights = np.maximum(0.0, np.minimum(up, down))
    if normalize:
        weights *= 2.0 / (right - left)
    first = max(0, int(np.ceil(freq_low * nfft / sample_rate)))
    last = min(bins - 1, int(np.floor(high * nfft / sample_rate)))
    weights[:, :first] = 0.0
    weights[:, last + 1 :] = 0.0
    out = weights.astype(np.float32)
    out.setflags(write=False)
    return out


def sparse_weights(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The non-zero (filter, bin) pairs of ``weights`` by filter: bins, weights, each filter's first pair, empty filters."""
    filters, bins = np.nonzero(weights)
    counts = np.bincount(filters, minlength=weights.shape[0])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    empty = counts == 0
    # reduceat needs valid, non-decreasing starts; empty filters are zeroed afterwards
    starts = np.minimum(starts, max(len(bins) - 1, 0))
    return bins, weights[filters, bins].astype(np.float32), starts, empty


class MelFilterBank(Operator):
    """See the module docstring."""

    name = "mel_filter_bank"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, *, nfilter: int = 128, sample_rate: float = 44100.0, freq_low: float = 0.0,
                 freq_high: float = 0.0, normalize: bool = True, mel_formula: str = "slaney", layout: str = "",
                 name: str | None = None) -> None:
        super().__init__(name=name)
        if int(nfilter) <= 0:
            raise PipelineDefinitionError(f"mel_filter_bank: nfilter must be positive, got {nfilter}")
        if not float(sample_rate) > 0:
            raise PipelineDefinitionError(f"mel_filter_bank: sample_rate must be positive, got {sample_rate}")
        nyquist = float(sample_rate) / 2
        if not 0 <= float(freq_low) <= nyquist or not 0 <= float(freq_high) <= nyquist:
            raise PipelineDefinitionError(
                f"mel_filter_bank: freq_low and freq_high must be in [0, sample_rate / 2 = {nyquist}], "
                f"got {freq_low}, {freq_high}")
        if freq_high and float(freq_high) <= float(freq_low):
            raise PipelineDefinitionError(
                f"mel_filter_bank: freq_high ({freq_high}) must be above freq_low ({freq_low})")
        if mel_formula not in ("slaney", "htk"):
            raise PipelineDefinitionError(f"mel_filter_bank: mel_formula must be 'slaney' or 'htk', got {mel_formula!r}")
        self.nfilter, self.sample_rate = int(nfilter), float(sample_rate)
        self.freq_low, self.freq_high = float(freq_low), float(freq_high)
        self.normalize, self.mel_formula = bool(normalize), mel_formula
        self._layout = layout
        self._sparse: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._offsets: dict[int, np.ndarray] = {}  # each filter's first (filter, bin) pair, and the end

    def freq_axis(self, ndim: int) -> int:
        if self._layout and len(self._layout) == ndim and "f" in self._layout:
            return self._layout.index("f")
        return max(0, ndim - 2)

    def weights(self, bins: int) -> np.ndarray:
        if bins < 2:
            raise SampleError(f"mel_filter_bank: the frequency axis has {bins} bins; it needs at least 2")
        return mel_weights(self.nfilter, bins, self.sample_rate, self.freq_low, self.freq_high, self.normalize,
                           self.mel_formula)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, x: Any) -> np.ndarray:
            x = np.asarray(x)
            if x.ndim == 0 or x.dtype != np.float32:
                raise SampleError(f"mel_filter_bank: expects a float32 spectrogram, got shape {x.shape} of {x.dtype}")
            axis = self.freq_axis(x.ndim)
            n = x.shape[axis]
            if n not in self._sparse:
                dense = self.weights(n)
                self._offsets[n] = np.concatenate([[0], np.cumsum(np.count_nonzero(dense, axis=1))]).astype(np.int64)
                self._sparse[n] = sparse_weights(dense)
            bins, weights, starts, empty = self._sparse[n]
            # Each bin feeds at most two filters: weight the (filter, bin) pairs and add them up per
            # filter, about 2 * bins products per frame instead of nfilter * bins for a dense product.
            if x.ndim == 2 and axis == 0:  # "ft": in C, no temporaries
                return native_audio.mel_rows(x, bins, weights, self._offsets[n])
            moved = np.moveaxis(x, axis, 0)
            if len(bins) == 0:  # no filter has a bin (e.g. a 2-bin spectrum)
                return np.zeros(x.shape[:axis] + (self.nfilter,) + x.shape[axis + 1 :], np.float32)
            terms = moved[bins] * weights.reshape((-1,) + (1,) * (x.ndim - 1))
            out = np.add.reduceat(terms, starts, axis=0) if len(starts) else np.zeros((0, *moved.shape[1:]), np.float32)
            out[empty] = 0.0
            return np.ascontiguousarray(np.moveaxis(out, 0, axis), dtype=np.float32)

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def mel_filter_bank(
    data: DataNode,
    *,
    nfilter: int = 128,
    sample_rate: float = 44100.0,
    freq_low: float = 0.0,
    freq_high: float = 0.0,
    normalize: bool = True,
    mel_formula: str = "slaney",
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Apply a bank of triangular mel filters to spectrograms.

    Args:
        nfilter: number of mel filters.
        sample_rate: the audio's sampling rate [Hz].
        freq_low, freq_high: frequency range [Hz] (``freq_high=0``: ``sample_rate / 2``).
        normalize: unit-area filters (else unit peak).
        mel_formula: ``"slaney"`` or ``"htk"``.
    """
    op = MelFilterBank(nfilter=nfilter, sample_rate=sample_rate, freq_low=freq_low, freq_high=freq_high,
                       normalize=normalize, mel_formula=mel_formula, layout=input_layout(data, "mel_filter_bank"),
                       name=name)
    return add_node(op, [data], device=device)[0]
