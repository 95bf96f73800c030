"""``decoders.audio``: encoded audio (WAV, FLAC, OGG Vorbis, OGG Opus, ...) to samples and sample rates.

Decoding is libsndfile's (``streamflow.codecs.audio``); then, as DALI's CPU
decoder does:

* ``downmix=True``: the mean of the channels, a 1-D output ``(frames,)``;
  otherwise ``(frames, channels)`` (mono files too).
* ``sample_rate > 0`` and different from the file's: resampled with DALI's
  windowed sinc (``streamflow._native.audio``) at ``quality``; the second
  output is then the target rate.
* ``dtype``: ``FLOAT`` (integer PCM scaled by ``1 / 2**(bits-1)``, libsndfile's
  convention), ``INT16`` or ``INT32``. Without resampling or downmixing an
  integer output is libsndfile's own conversion; otherwise the float result
  scaled to the type's range, rounded and saturated.

The second output is the sample rate as a float32 scalar [Hz].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._native import audio as native_audio
from ...codecs.audio import AudioInfo, decode_audio
from ...errors import DecodeError, PipelineDefinitionError, SampleError
from ...graph import DataNode, add_node, split_arguments
from ...operator import Chunk, Operator
from ...types import DataType, Device
from ..arguments import fn_function
from ..cast import parse_output_dtype

__all__ = ["AUDIO_DTYPES", "AudioDecode", "audio", "check_quality", "finish_audio"]

#: Output types of the audio decoders (DALI's).
AUDIO_DTYPES = (np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.float32))


def check_quality(quality: float, what: str) -> float:
    """A resampling quality in [0, 100]."""
    q = float(quality)
    if not 0.0 <= q <= 100.0:
        raise PipelineDefinitionError(f"{what}: quality must be in [0, 100], got {quality}")
    return q


def audio_dtype(dtype: Any, what: str) -> np.dtype:
    """DALI's audio output types: INT16, INT32 or FLOAT."""
    out = parse_output_dtype(dtype, f"{what}: dtype")
    if out not in AUDIO_DTYPES:
        raise PipelineDefinitionError(f"{what}: dtype must be INT16, INT32 or FLOAT, got {out.name}")
    return out


def finish_audio(encoded: Any, *, target_rate: float, downmix: bool, dtype: np.dtype,
                 quality: float, offset: float = 0.0,
                 duration: float | None = None) -> tuple[np.ndarray, np.float32, int]:
    """Decode (``offset``/``duration`` in seconds), downmix, resample and convert one file, as DALI does.

    Returns:
        (samples, output sample rate, the file's sample rate)

    Raises:
        DecodeError: the data is not decodable audio.
    """
    target = float(np.float32(target_rate))  # DALI keeps rates as float32

    def resamples(info: AudioInfo) -> bool:
        return target > 0 and target != float(info.sample_rate)

    def decode_type(info: AudioInfo) -> Any:
        # Integer outputs come from libsndfile directly unless the samples are mixed or resampled.
        mixed = downmix and info.channels > 1
        return np.float32 if (mixed or resamples(info) or dtype == np.float32) else dtype

    samples, rate = decode_audio(encoded, decode_type, offset, duration)
    resample = target > 0 and target != float(rate)
    if downmix:
        samples = samples.mean(axis=1, dtype=np.float32) if samples.shape[1] > 1 else samples[:, 0]
    if resample:
        samples = native_audio.resample(samples, float(rate), target, quality, dtype=dtype)
    elif samples.dtype != dtype:
        samples = native_audio.normalized_int(samples, dtype)
    return np.ascontiguousarray(samples), np.float32(target if resample else rate), rate


class AudioDecode(Operator):
    """Decodes each sample of the chunk with libsndfile; outputs (audio, sample rate)."""

    name = "decoders.audio"
    num_outputs = 2
    per_sample_args = frozenset({"sample_rate"})

    def __init__(self, *, sample_rate: float = 0.0, downmix: bool = False, dtype: Any = DataType.FLOAT,
                 quality: float = 50.0, name: str | None = None) -> None:
        super().__init__(name=name)
        self.sample_rate = float(sample_rate)
        self.downmix = bool(downmix)
        self.dtype = audio_dtype(dtype, self.name)
        self.quality = check_quality(quality, self.name)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return chunk.each_sample(lambda row, encoded: self._one(chunk, row, encoded), outputs=2)

    def _one(self, chunk: Chunk, row: int, encoded: Any) -> tuple[Any, np.ndarray]:
        target = float(np.asarray(chunk.arg("sample_rate", row, self.sample_rate)).reshape(-1)[0])
        if not np.isfinite(target) or target < 0:
            raise SampleError(f"{self.name}: sample_rate must be >= 0, got {target}")
        try:
            samples, rate, _ = finish_audio(encoded, target_rate=target, downmix=self.downmix,
                                            dtype=self.dtype, quality=self.quality)
        except DecodeError as err:
            raise DecodeError(f"{self.name}: {err.reason}", chunk.sources[row]) from None
        return samples, np.asarray(rate, dtype=np.float32)

    def layout(self, index: int) -> str:
        return ""


@fn_function()
def audio(
    data: DataNode,
    *,
    sample_rate: float | DataNode = 0.0,
    downmix: bool = False,
    dtype: DataType | str = DataType.FLOAT,
    quality: float = 50.0,
    device: str | Device | None = None,
    name: str | None = None,
) -> tuple[DataNode, DataNode]:
    """Decode audio files; returns ``(audio, sample_rate)``.

    Args:
        data: encoded files as 1-D uint8 arrays (``readers.file``).
        sample_rate: resample to this rate [Hz] when > 0 (per sample as a
            ``DataNode``: speed perturbation).
        downmix: average the channels into one, giving 1-D ``(frames,)`` output;
            otherwise ``(frames, channels)``.
        dtype: ``FLOAT`` (default), ``INT16`` or ``INT32``.
        quality: resampling quality in [0, 100]: 3 sinc lobes at 0, 16 at 50, 64 at 100.

    Returns:
        the samples, and the sample rate as a float32 scalar [Hz] (the target
        rate when resampled).
    """
    constants, per_sample = split_arguments(dict(sample_rate=sample_rate))
    op = AudioDecode(sample_rate=constants.get("sample_rate", 0.0), downmix=downmix, dtype=dtype, quality=quality,
                     name=name)
    out = add_node(op, [data], per_sample, device=device)
    return out[0], out[1]
