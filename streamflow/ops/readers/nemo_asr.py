"""``readers.nemo_asr``: audio and transcripts from NVIDIA NeMo manifests (JSON lines), as DALI 2.4's reader.

Each manifest line is a JSON object with ``audio_filepath`` (required),
``offset`` and ``duration`` [s] (the part of the file to read: from frame
``int(offset * rate)``, ``int(duration * rate)`` frames; the rest of the file
without ``duration``) and ``text``. Entries whose ``duration`` (0 when
missing) is above ``max_duration`` or below ``min_duration`` (when > 0) are
left out; ``read_idxs`` gives an entry's index among the kept entries.

Outputs, in order: the audio (decoded as ``decoders.audio`` does, with
``downmix`` on by default: float32 ``(frames,)``), then when asked the file's
sample rate (float32 scalar; the file's own rate even when resampled, as
DALI's), the transcript (UTF-8 bytes as uint8, no terminator) and the index
(int64 ``(1,)``). Files are read and decoded on the I/O threads (libsndfile
releases the GIL); a file that cannot be decoded fails its sample (named),
so ``on_error="skip"`` replaces it.

A relative ``audio_filepath`` is taken relative to the working directory, as
DALI does, or, when no such file exists there, to the manifest's folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import DecodeError, PipelineDefinitionError, ReadError, SampleError
from ...graph import DataNode, add_node
from ...operator import SourceBatch
from ...sharding import ShardSpec
from ...types import DataType
from ..arguments import READER, fn_function
from ..decoders.audio import audio_dtype, check_quality, finish_audio
from .list_source import ListSource

__all__ = ["ManifestEntry", "NemoAsrReader", "nemo_asr", "read_manifests"]


@dataclass(frozen=True)
class ManifestEntry:
    """One line of a manifest."""

    path: str
    offset: float
    duration: float | None
    text: str


def _number(entry: dict[str, Any], key: str, where: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise PipelineDefinitionError(f"readers.nemo_asr: {where}: {key} must be a number >= 0 [s], got {value!r}")
    return float(value)


def read_manifests(paths: Sequence[str]) -> list[ManifestEntry]:
    """Every entry of the manifests, in order; a malformed line is an error naming the file and line."""
    entries = []
    for manifest in paths:
        base = os.path.dirname(os.path.abspath(manifest))
        try:
            with open(manifest, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise PipelineDefinitionError(
                f"readers.nemo_asr: cannot read manifest {manifest!r}: {e.strerror or e}") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{manifest}:{number}"
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as e:
                raise PipelineDefinitionError(f"readers.nemo_asr: {where}: not a JSON object ({e.msg})") from None
            if not isinstance(entry, dict) or not isinstance(entry.get("audio_filepath"), str):
                raise PipelineDefinitionError(f"readers.nemo_asr: {where}: needs an 'audio_filepath' string")
            path = entry["audio_filepath"]
            if not os.path.isabs(path) and not os.path.exists(path) and os.path.exists(os.path.join(base, path)):
                path = os.path.join(base, path)
            text = entry.get("text", "")
            entries.append(ManifestEntry(path, _number(entry, "offset", where) or 0.0,
                                         _number(entry, "duration", where), text if isinstance(text, str) else str(text)))
    return entries


class NemoAsrReader(ListSource):
    """See the module docstring."""

    name = "readers.nemo_asr"

    def __init__(self, *, manifest_filepaths: Sequence[str], read_sample_rate: bool = True, read_text: bool = True,
                 read_idxs: bool = False, downmix: bool = True, sample_rate: float = -1.0,
                 dtype: Any = DataType.FLOAT, quality: float = 50.0, min_duration: float = 0.0,
                 max_duration: float = 0.0, shard: ShardSpec = ShardSpec(), seed: int | None = None,
                 name: str | None = None) -> None:
        super().__init__(shard=shard, seed=seed, name=name)
        entries = read_manifests(manifest_filepaths)
        kept = [e for e in entries if not (max_duration > 0 and (e.duration or 0.0) > max_duration)
                and not (min_duration > 0 and (e.duration or 0.0) < min_duration)]
        if not kept:
            raise PipelineDefinitionError(
                f"readers.nemo_asr: no entries left in {list(manifest_filepaths)} ({len(entries)} before the "
                f"min_duration={min_duration} / max_duration={max_duration} filter)")
        self.entries = kept
        self.read_sample_rate, self.read_text, self.read_idxs = bool(read_sample_rate), bool(read_text), bool(read_idxs)
        self.num_outputs = 1 + self.read_sample_rate + self.read_text + self.read_idxs
        self.downmix, self.sample_rate = bool(downmix), float(sample_rate)
        self.dtype = audio_dtype(dtype, self.name)
        self.quality = check_quality(quality, self.name)

    @property
    def num_items(self) -> int:
        return len(self.entries)

    def _decode(self, item: int) -> tuple[np.ndarray, int] | SampleError:
        """Read and decode one entry (an I/O thread)."""
        entry = self.entries[item]
        try:
            with open(entry.path, "rb") as f:
                data = f.read()
        except OSError as e:
            return ReadError(f"cannot read the file: {e.strerror or e}", entry.path)
        try:
            samples, _, file_rate = finish_audio(data, target_rate=max(self.sample_rate, 0.0), downmix=self.downmix,
                                                 dtype=self.dtype, quality=self.quality, offset=entry.offset,
                                                 duration=entry.duration)
        except DecodeError as err:
            return DecodeError(f"{self.name}: {err.reason}", entry.path)
        return samples, file_rate

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        import asyncio

        assert self._io is not None
        io = self._io
        results = await asyncio.gather(*(io.call(self._decode, int(i)) for i in items))
        outputs: list[list[Any]] = [[] for _ in range(self.num_outputs)]
        failures: dict[int, SampleError] = {}
        for row, (item, result) in enumerate(zip(items, results)):
            entry = self.entries[int(item)]
            values: list[Any]
            if isinstance(result, SampleError):
                failures[row] = result
                values = [None] * self.num_outputs
            else:
                samples, file_rate = result
                values = [samples]
                if self.read_sample_rate:
                    values.append(np.asarray(file_rate, dtype=np.float32))
                if self.read_text:
                    values.append(np.frombuffer(entry.text.encode("utf-8"), dtype=np.uint8).copy())
                if self.read_idxs:
                    values.append(np.array([int(item)], dtype=np.int64))
            for column, value in zip(outputs, values):
                column.append(value)
        return SourceBatch(outputs=outputs, sample_ids=ids, sources=[self.entries[int(i)].path for i in items],
                           failures=failures)


@fn_function(READER)
def nemo_asr(
    *,
    manifest_filepaths: str | Sequence[str],
    read_sample_rate: bool = True,
    read_text: bool = True,
    read_idxs: bool = False,
    downmix: bool = True,
    sample_rate: float = -1.0,
    dtype: DataType | str = DataType.FLOAT,
    quality: float = 50.0,
    min_duration: float = 0.0,
    max_duration: float = 0.0,
    normalize_text: bool | None = None,
    random_shuffle: bool = False,
    initial_fill: int = 1024,
    shuffle_after_epoch: bool = False,
    shuffle_after_epoch_seed: int | None = None,
    shard_id: int | None = None,
    num_shards: int | None = None,
    stick_to_shard: bool = False,
    pad_last_batch: bool = False,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode | tuple[DataNode, ...]:
    """Read NeMo ASR manifests: audio, then (as asked) sample rate, transcript and entry index.

    Args:
        manifest_filepaths: one or more JSON-lines manifests.
        read_sample_rate: output the file's sample rate (float32 scalar).
        read_text: output the transcript as UTF-8 bytes (uint8).
        read_idxs: output the entry's index among the kept entries (int64 ``(1,)``).
        downmix: average the channels into a 1-D signal (default on).
        sample_rate: resample to this rate [Hz] when > 0.
        dtype: ``FLOAT`` (default), ``INT16`` or ``INT32``.
        quality: resampling quality in [0, 100].
        min_duration, max_duration: keep entries whose manifest ``duration`` is
            within these bounds [s] (0: no bound).
        normalize_text: DALI's deprecated argument; ignored.
        random_shuffle, initial_fill, shuffle_after_epoch, shard_id, num_shards, stick_to_shard,
            pad_last_batch, seed: as ``readers.file``.
        name: the reader's name (``pipe.epoch_size(name)``, iterators).
    """
    del normalize_text  # deprecated in DALI, no effect
    paths = [manifest_filepaths] if isinstance(manifest_filepaths, (str, os.PathLike)) else list(manifest_filepaths)
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill,
                                shuffle_after_epoch=shuffle_after_epoch,
                                shuffle_after_epoch_seed=shuffle_after_epoch_seed)
    reader = NemoAsrReader(manifest_filepaths=[os.fspath(p) for p in paths], read_sample_rate=read_sample_rate,
                           read_text=read_text, read_idxs=read_idxs, downmix=downmix, sample_rate=sample_rate,
                           dtype=dtype, quality=quality, min_duration=min_duration, max_duration=max_duration,
                           shard=spec, seed=seed, name=name)
    out = add_node(reader, [])
    return out[0] if len(out) == 1 else out
