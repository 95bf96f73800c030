"""``RecordReader``: what the readers of shard files share (TFRecord, WebDataset, RecordIO).

A data set is a list of records, each a byte range ``(file, offset, size)``
of one of the shard files (local paths or URLs), found from index files or
by scanning the files when the pipeline is defined. Epoch order, sharding,
shuffling, padding, checkpoints and ``on_error="skip"`` replacements are
``ListSource``'s, so every such reader resumes exactly and shards like
``readers.file``. A batch's ranges are read concurrently (``io.storage``),
then each record is parsed on the I/O threads; a record that cannot be read
or parsed fails alone, as a ``ReadError`` naming the file and byte offset.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from ...errors import PipelineDefinitionError, ReadError, SampleError
from ...io import storage
from ...io.formats.protowire import ProtoError
from ...operator import SourceBatch
from ...sharding import ShardSpec
from .list_source import ListSource

__all__ = ["RecordReader", "as_list", "check_index_count", "read_index_file", "scan_file"]

T = TypeVar("T")


def as_list(value: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None, what: str, reader: str,
            *, required: str | None = None) -> list[str]:
    """A ``str or list of str`` argument as a list of paths (``os.PathLike`` accepted).

    With ``required`` (what the paths name, e.g. ``"TFRecord files"``), an empty list is an error.
    """
    items: Sequence[Any]
    if value is None:
        items = []
    elif isinstance(value, (str, bytes)) or hasattr(value, "__fspath__"):
        items = [value]
    else:
        items = value
    out = [os.fsdecode(v) for v in items]
    if any(not p for p in out):
        raise PipelineDefinitionError(f"{reader}: {what} has an empty path")
    if required is not None and not out:
        raise PipelineDefinitionError(f"{reader}: {what} lists no {required}")
    return out


def check_index_count(paths: list[str], index_paths: list[str], reader: str, path_arg: str, index_arg: str) -> None:
    """One index file per data file, or none at all."""
    if index_paths and len(index_paths) != len(paths):
        raise PipelineDefinitionError(
            f"{reader}: {len(paths)} {path_arg} but {len(index_paths)} {index_arg}; give one index file per "
            f"data file (same order), or no {index_arg} to index the files when the pipeline is defined"
        )


def read_index_file(index_path: str, reader: str, index_arg: str, parse: Callable[[str, str], T],
                    error: type[ValueError]) -> T:
    """``parse(text, index_path)`` of an index file; an ``error`` (malformed index) names ``reader``."""
    text = storage.read_text(index_path, f"{reader}: cannot read {index_arg}")
    try:
        return parse(text, index_path)
    except error as e:
        raise PipelineDefinitionError(f"{reader}: {e}") from None


def scan_file(path: str, reader: str, scan: Callable[[Callable[[int, int], bytes], int, str], T],
              error: type[ValueError]) -> T:
    """``scan(read, size, path)`` over the byte ranges of a data file that has no index file.

    An ``error`` (not the expected format) names ``reader``; the file is closed either way.
    """
    source = storage.open_range_reader(path, f"{reader}: cannot open")
    try:
        return scan(source.read, source.size, path)
    except error as e:
        raise PipelineDefinitionError(f"{reader}: {e}") from None
    finally:
        source.close()


class RecordReader(ListSource):
    """Reads records given as byte ranges of shard files and parses each into the outputs.

    Args:
        files: the shard files (paths or URLs).
        file_index, offsets, sizes: per record, its file (index into
            ``files``), byte offset and size.
        shard, seed, name: as :class:`ListSource`.
    """

    def __init__(
        self,
        files: Sequence[str],
        file_index: Sequence[int] | np.ndarray,
        offsets: Sequence[int] | np.ndarray,
        sizes: Sequence[int] | np.ndarray,
        *,
        shard: ShardSpec,
        seed: int | None,
        name: str | None,
    ) -> None:
        super().__init__(shard=shard, seed=seed, name=name)
        self.files = list(files)
        self.file_index = np.asarray(file_index, dtype=np.int32)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        if not len(self.offsets):
            raise PipelineDefinitionError(f"{self.name}: the data set has no records")
        self.storage = storage.Storage()
        ends = self.offsets + self.sizes
        for f, path in enumerate(self.files):
            mine = ends[self.file_index == f]
            if len(mine):
                self.storage.set_extent(path, int(mine.max()))

    @property
    def num_items(self) -> int:
        return len(self.offsets)

    def source(self, item: int) -> str:
        """How the record ``item`` is named in errors and ``Batch.sources``."""
        return storage.where(self.files[self.file_index[item]], int(self.offsets[item]))

    @abc.abstractmethod
    def parse(self, record: memoryview, item: int) -> list[Any]:
        """The outputs of record ``item`` from its bytes; a ``ValueError`` fails the sample."""

    def _parse_all(self, blobs: list[bytes | ReadError], items: np.ndarray) -> tuple[list[list[Any]], dict[int, SampleError]]:
        outputs: list[list[Any]] = [[] for _ in range(self.num_outputs)]
        failures: dict[int, SampleError] = {}
        for row, (blob, item) in enumerate(zip(blobs, items)):
            values: list[Any] | None = None
            if isinstance(blob, ReadError):
                failures[row] = blob
            else:
                try:
                    values = self.parse(memoryview(blob), int(item))
                except (ValueError, ProtoError) as e:  # every format error is a ValueError
                    failures[row] = ReadError(f"bad record: {e}", self.source(int(item)))
            for out, value in zip(outputs, values or [None] * self.num_outputs):
                out.append(value)
        return outputs, failures

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        assert self._io is not None
        requests = [
            (self.files[self.file_index[i]], int(self.offsets[i]), int(self.sizes[i])) for i in items
        ]
        blobs = await self.storage.read_ranges(self._io, requests)
        outputs, failures = await self._io.call(self._parse_all, blobs, items)
        sources: list[str | None] = [self.source(int(i)) for i in items]
        return SourceBatch(outputs=outputs, sample_ids=ids, sources=sources, failures=failures)

    def close(self) -> None:
        self.storage.close()
