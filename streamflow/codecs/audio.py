"""Audio decoding through libsndfile (the ``soundfile`` package): the only importer of ``soundfile``.

libsndfile decodes WAV (PCM, float, A-law/mu-law, ADPCM), FLAC, OGG Vorbis,
OGG Opus, AIFF, CAF and, from libsndfile 1.1, MP3. ``soundfile`` releases the
GIL while libsndfile decodes, so the engine's worker threads decode in
parallel. Every failure is a ``DecodeError`` that says what libsndfile
reported; the caller adds the file name.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DecodeError, MissingDependencyError

__all__ = ["AudioInfo", "decode_audio", "probe_audio", "soundfile_module"]

_SF: Any = None
_SF_LOCK = threading.Lock()


def soundfile_module() -> Any:
    """Import ``soundfile`` once and return it.

    Raises:
        MissingDependencyError: the package is not installed.
    """
    global _SF
    if _SF is None:
        with _SF_LOCK:
            if _SF is None:
                try:
                    import soundfile
                except (ImportError, OSError) as exc:  # OSError: libsndfile itself is missing
                    raise MissingDependencyError("soundfile", "audio", "audio decoding") from exc
                _SF = soundfile
    return _SF


@dataclass(frozen=True)
class AudioInfo:
    """What a file's header says: frames (per channel), channels and sample rate [Hz]."""

    frames: int
    channels: int
    sample_rate: int
    format: str


def _as_file(data: Any) -> io.BytesIO:
    if isinstance(data, np.ndarray):
        base = data.base
        if (isinstance(base, bytes) and data.ndim == 1 and data.dtype == np.uint8 and data.flags.c_contiguous
                and data.nbytes == len(base)):
            return io.BytesIO(base)  # a view of a whole bytes object (readers.file): shared, not copied
        return io.BytesIO(np.ascontiguousarray(data).view(np.uint8).tobytes())
    return io.BytesIO(bytes(data))


def _open(sf: Any, data: Any) -> Any:
    if len(data) == 0:
        raise DecodeError("empty input: no audio data")
    try:
        return sf.SoundFile(_as_file(data))
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise DecodeError(f"not a decodable audio file ({_reason(exc)})") from None


def _reason(exc: BaseException) -> str:
    text = str(getattr(exc, "error_string", "") or exc)
    return text.replace("Error opening <_io.BytesIO object", "libsndfile").split(">: ", 1)[-1].strip()


def probe_audio(data: Any) -> AudioInfo:
    """The header of encoded audio (bytes or a uint8 array)."""
    sf = soundfile_module()
    with _open(sf, data) as f:
        return AudioInfo(int(f.frames), int(f.channels), int(f.samplerate), str(f.format))


def decode_audio(data: Any, dtype: Any = np.float32, offset: float = 0.0,
                 duration: float | None = None) -> tuple[np.ndarray, int]:
    """Decode encoded audio to ``(samples, sample_rate)``; samples have shape ``(frames, channels)``.

    Args:
        data: the encoded file (bytes or a 1-D uint8 array).
        dtype: float32 (integer formats scaled by ``1 / 2**(bits-1)``, libsndfile's
            convention), int16 or int32 (libsndfile's conversion); or a function
            of the file's ``AudioInfo`` that returns one of them.
        offset: start [s]: frames from ``int(offset * rate)`` (truncated, as DALI's nemo_asr).
        duration: length [s]: ``int(duration * rate)`` frames, cut at the end of
            the file; ``None`` reads to the end.

    Raises:
        DecodeError: the data is not audio libsndfile can decode, is cut short
            or has no samples.
    """
    sf = soundfile_module()
    with _open(sf, data) as f:
        frames, channels, rate = int(f.frames), int(f.channels), int(f.samplerate)
        if rate <= 0:
            raise DecodeError(f"invalid sample rate {rate} in the header")
        if channels <= 0:
            raise DecodeError("the header declares no channels")
        if callable(dtype) and not isinstance(dtype, (type, np.dtype, str)):
            dtype = dtype(AudioInfo(frames, channels, rate, str(f.format)))
        dtype = np.dtype(dtype)
        start = min(frames, max(0, int(offset * rate)))
        count = frames - start if duration is None else min(frames - start, max(0, int(duration * rate)))
        try:
            if start:
                f.seek(start)
            samples = f.read(count, dtype=dtype.name, always_2d=True)
        except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
            raise DecodeError(f"audio data is corrupt or cut short ({_reason(exc)})") from None
    if samples.shape[0] < count:
        raise DecodeError(f"audio data is cut short: the header declares {frames} frames, "
                          f"{start + samples.shape[0]} could be decoded")
    if samples.shape[0] == 0:
        where = f" from {offset} s for {duration} s" if offset or duration is not None else ""
        raise DecodeError(f"no audio samples{where} (the file holds {frames} frames at {rate} Hz)")
    return samples, rate
