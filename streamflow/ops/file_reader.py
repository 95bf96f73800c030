"""``readers.file``: encoded files and integer labels from a folder tree or a list.

Three ways to name the files (exactly one must be used):

* ``file_root``: every sorted sub-folder is a class (label 0, 1, ...); the
  files under it (recursively, sorted) are its samples.
* ``file_list``: a text file of ``path label`` lines; paths are relative to
  ``file_root`` if given, else to the list's own folder.
* ``files`` (+ ``labels``, default 0, 1, 2, ...).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import rng
from ..errors import PipelineDefinitionError, ReadError, SampleError
from .base import EpochInfo, RandomKey, Source, SourceBatch
from .sharding import EpochOrder, ShardSpec

if TYPE_CHECKING:
    from ..runtime.io_pool import IOPool

__all__ = ["FileReader", "DEFAULT_FILE_FILTERS", "list_file_root", "parse_file_list"]

DEFAULT_FILE_FILTERS = (
    "*.jpg", "*.jpeg", "*.png", "*.bmp", "*.tif", "*.tiff", "*.pnm", "*.ppm", "*.pgm",
    "*.pbm", "*.jp2", "*.webp",
)  # fmt: skip


def _matches(name: str, filters: Sequence[str], case_sensitive: bool) -> bool:
    if not case_sensitive:
        name = name.lower()
        return any(fnmatch.fnmatchcase(name, f.lower()) for f in filters)
    return any(fnmatch.fnmatchcase(name, f) for f in filters)


def _walk_files(folder: str, filters: Sequence[str], case_sensitive: bool) -> list[str]:
    """Files under ``folder`` matching ``filters``, sorted; symlink loops are cut."""
    found: list[str] = []
    seen_dirs: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen_dirs:  # a symlink loop: do not descend again
            dirnames[:] = []
            continue
        seen_dirs.add(real)
        dirnames.sort()
        for name in filenames:
            if _matches(name, filters, case_sensitive):
                found.append(os.path.join(dirpath, name))
    return sorted(found)


def list_file_root(file_root: str, filters: Sequence[str], case_sensitive: bool = False) -> list[tuple[str, int]]:
    """(path, label) pairs: one label per sorted sub-folder of ``file_root``."""
    if not os.path.isdir(file_root):
        raise PipelineDefinitionError(f"readers.file: file_root {file_root!r} is not a directory")
    classes = sorted(e.name for e in os.scandir(file_root) if e.is_dir())
    entries = [
        (path, label)
        for label, cls in enumerate(classes)
        for path in _walk_files(os.path.join(file_root, cls), filters, case_sensitive)
    ]
    if not entries:
        where = f"{len(classes)} class folders" if classes else "no class sub-folders"
        raise PipelineDefinitionError(
            f"readers.file: no files matching {list(filters)} under {file_root!r} ({where}); "
            "file_root expects one sub-folder per class, e.g. root/cat/1.jpg"
        )
    return entries


LABEL_MAX = 2**31 - 1  # labels are int32


def parse_file_list(file_list: str, file_root: str | None) -> list[tuple[str, int]]:
    """(path, label) pairs from a ``path label`` text file; blank and ``#`` lines skipped.

    The list is read as UTF-8; bytes that are not UTF-8 are kept as the file
    system keeps them (``surrogateescape``), so a list naming non-UTF-8 files
    still reaches those files. Labels must fit in int32.
    """
    try:
        with open(file_list, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise PipelineDefinitionError(f"readers.file: cannot read file_list {file_list!r}: {e.strerror or e}") from None
    base = file_root if file_root is not None else os.path.dirname(os.path.abspath(file_list))
    entries = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.rsplit(None, 1)
        path, label = (parts[0], -1) if len(parts) == 2 else ("", -1)
        try:
            label = int(parts[-1])
        except ValueError:
            path = ""
        if not path or label < 0 or label > LABEL_MAX or "\0" in path:
            raise PipelineDefinitionError(
                f"readers.file: {file_list}:{number}: expected 'path label' with a non-negative "
                f"int32 integer label and no NUL in the path, got {line!r}"
            )
        entries.append((os.path.join(base, path), label))
    if not entries:
        raise PipelineDefinitionError(f"readers.file: file_list {file_list!r} lists no files")
    return entries


class FileReader(Source):
    """Reads whole files; outputs (encoded bytes as uint8 arrays, int32 labels of shape (1,))."""

    name = "readers.file"
    num_outputs = 2

    def __init__(
        self,
        *,
        file_root: str | os.PathLike[str] | None = None,
        file_list: str | os.PathLike[str] | None = None,
        files: Sequence[str | os.PathLike[str]] | None = None,
        labels: Sequence[int] | None = None,
        file_filters: Sequence[str] = DEFAULT_FILE_FILTERS,
        case_sensitive_filter: bool = False,
        shard: ShardSpec = ShardSpec(),
        seed: int | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        # Paths are kept as str; bytes names (non-UTF-8 file systems) become
        # str through os.fsdecode, which round-trips to the same bytes.
        root = os.fsdecode(file_root) if file_root is not None else None
        if isinstance(file_filters, str):
            file_filters = [file_filters]
        if files is not None:
            if file_list is not None:
                raise PipelineDefinitionError("readers.file: give either files or file_list, not both")
            paths = [os.path.join(root, os.fsdecode(p)) if root else os.fsdecode(p) for p in files]
            if labels is None:
                labels = list(range(len(paths)))
            if len(labels) != len(paths):
                raise PipelineDefinitionError(
                    f"readers.file: {len(paths)} files but {len(labels)} labels; give one label per file"
                )
            self.entries = list(zip(paths, (int(x) for x in labels)))
            bad = [x for _, x in self.entries if not -LABEL_MAX - 1 <= x <= LABEL_MAX]
            if bad:
                raise PipelineDefinitionError(f"readers.file: labels are int32, {bad[0]} does not fit")
            if not self.entries:
                raise PipelineDefinitionError("readers.file: files is empty")
        elif file_list is not None:
            self.entries = parse_file_list(os.fsdecode(file_list), root)
        elif root is not None:
            self.entries = list_file_root(root, list(file_filters), case_sensitive_filter)
        else:
            raise PipelineDefinitionError("readers.file needs file_root, file_list or files")
        self.paths = [p for p, _ in self.entries]
        self.labels = np.array([label for _, label in self.entries], dtype=np.int32)
        self.shard = shard
        self._seed = seed
        self._order: EpochOrder | None = None
        self._io: IOPool | None = None
        self._batch_size = 1

    def prepare(self, batch_size: int, seed: int, io: IOPool) -> None:
        self._batch_size = batch_size
        self._io = io
        self._order = EpochOrder(len(self.entries), self.shard, batch_size, self._seed if self._seed is not None else seed)

    def _epoch_order(self) -> EpochOrder:
        if self._order is None:  # asked for sizes before the pipeline started
            self._order = EpochOrder(len(self.entries), self.shard, self._batch_size, self._seed or 0)
        return self._order

    def epoch_info(self) -> EpochInfo:
        return self._epoch_order().info()

    def start_epoch(self, epoch: int) -> None:
        self._epoch_order().indices(epoch)

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        assert self._io is not None
        paths = [self.paths[i] for i in items]
        contents = await self._io.read_files(paths)
        data: list[Any] = []
        failures: dict[int, SampleError] = {}
        for row, content in enumerate(contents):
            if isinstance(content, ReadError):
                failures[row] = content
                data.append(None)
            else:
                data.append(np.frombuffer(content, dtype=np.uint8))
        labels = [self.labels[i : i + 1] for i in items]
        return SourceBatch(outputs=[data, labels], sample_ids=ids, sources=paths, failures=failures)

    async def read_batch(self, epoch: int, batch_index: int) -> SourceBatch | None:
        items, ids = self._epoch_order().indices(epoch)
        begin = batch_index * self._batch_size
        if begin >= len(items):
            return None
        end = begin + self._batch_size
        return await self._read(items[begin:end], ids[begin:end])

    async def read_replacement(self, epoch: int, sample_id: int, attempt: int) -> SourceBatch:
        """A deterministic other sample of the same shard and epoch."""
        items, _ = self._epoch_order().indices(epoch)
        key = RandomKey(self._epoch_order().seed, 0x5EED)
        pick = int(rng.mix(key, epoch, np.array([sample_id]), draw=attempt)[0] % np.uint64(len(items)))
        return await self._read(items[pick : pick + 1], np.array([sample_id], dtype=np.int64))

    def layout(self, index: int) -> str:
        return ""
