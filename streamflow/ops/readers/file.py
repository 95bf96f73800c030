"""``readers.file``: encoded files and integer labels from a folder tree or a list.

Three ways to name the files (exactly one must be used):

* ``file_root``: every sorted sub-folder is a class (label 0, 1, ...); the
  files under it (recursively, sorted) are its samples.
* ``file_list``: a text file of ``path label`` lines; paths are relative to
  ``file_root`` if given, else to the list's own folder.
* ``files`` (+ ``labels``, default 0, 1, 2, ...).

Every path may also be a URL (``s3://``, ``gs://``, ``http(s)://``): files are
then read through ``io.remote`` (``file_root`` needs a listable store: S3, GCS).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence

import numpy as np

from ...errors import PipelineDefinitionError, ReadError
from ...graph import DataNode, add_node
from ...io import remote, storage
from ...operator import SourceBatch
from ...sharding import ShardSpec
from ..arguments import READER, fn_function
from .list_source import ListSource, split_read_errors

__all__ = [
    "DEFAULT_FILE_FILTERS", "FileReader", "check_folder", "file", "list_file_root", "parse_file_list",
    "read_list_lines", "sub_folders", "walk_files",
]

DEFAULT_FILE_FILTERS = (
    "*.jpg", "*.jpeg", "*.png", "*.bmp", "*.tif", "*.tiff", "*.pnm", "*.ppm", "*.pgm",
    "*.pbm", "*.jp2", "*.webp", "*.flac", "*.ogg", "*.wav",
)  # fmt: skip


def _matches(name: str, filters: Sequence[str], case_sensitive: bool) -> bool:
    if not case_sensitive:
        name = name.lower()
        return any(fnmatch.fnmatchcase(name, f.lower()) for f in filters)
    return any(fnmatch.fnmatchcase(name, f) for f in filters)


def walk_files(folder: str, filters: Sequence[str], case_sensitive: bool) -> list[str]:
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


def check_folder(root: str, op: str) -> None:
    """A clear error unless the local ``file_root`` is a folder."""
    if not os.path.isdir(root):
        raise PipelineDefinitionError(f"{op}: file_root {root!r} is not a directory")


def sub_folders(root: str, op: str) -> list[str]:
    """The names of the sub-folders of the local folder ``file_root`` (classes, streams), sorted."""
    check_folder(root, op)
    return sorted(e.name for e in os.scandir(root) if e.is_dir())


def read_list_lines(file_list: str, op: str) -> list[str]:
    """The lines of a local list file, read as UTF-8 (other bytes kept as the file system keeps them)."""
    try:
        with open(file_list, encoding="utf-8", errors="surrogateescape") as f:
            return f.read().splitlines()
    except OSError as e:
        raise PipelineDefinitionError(f"{op}: cannot read file_list {file_list!r}: {e.strerror or e}") from None


def list_file_root(file_root: str, filters: Sequence[str], case_sensitive: bool = False,
                   dir_filters: Sequence[str] | None = None) -> list[tuple[str, int]]:
    """(path, label) pairs: one label per sorted sub-folder of ``file_root`` (matching ``dir_filters``)."""
    if storage.is_url(file_root):
        return _list_url_root(file_root, filters, case_sensitive, dir_filters)
    classes = sub_folders(file_root, "readers.file")
    if dir_filters is not None:
        classes = [c for c in classes if _matches(c, dir_filters, case_sensitive)]
    entries = [
        (path, label)
        for label, cls in enumerate(classes)
        for path in walk_files(os.path.join(file_root, cls), filters, case_sensitive)
    ]
    if not entries:
        where = f"{len(classes)} class folders" if classes else "no class sub-folders"
        raise PipelineDefinitionError(
            f"readers.file: no files matching {list(filters)} under {file_root!r} ({where}); "
            "file_root expects one sub-folder per class, e.g. root/cat/1.jpg"
        )
    return entries


def _list_url_root(file_root: str, filters: Sequence[str], case_sensitive: bool,
                   dir_filters: Sequence[str] | None) -> list[tuple[str, int]]:
    try:
        classes = remote.list_dirs_sync(file_root)
        if dir_filters is not None:
            classes = [c for c in classes if _matches(c, dir_filters, case_sensitive)]
        entries = [
            (url, label)
            for label, cls in enumerate(classes)
            for url in remote.list_files_sync(remote.join_url(file_root, cls))
            if _matches(url.rsplit("/", 1)[-1], filters, case_sensitive)
        ]
    except ReadError as e:
        raise PipelineDefinitionError(f"readers.file: cannot list file_root {file_root!r}: {e.reason}") from None
    if not entries:
        raise PipelineDefinitionError(
            f"readers.file: no files matching {list(filters)} under {file_root!r} ({len(classes)} class folders); "
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
    if storage.is_url(file_list):
        lines = storage.read_text(file_list, "readers.file: cannot read file_list").splitlines()
        base = file_root if file_root is not None else remote.url_dirname(file_list)
    else:
        lines = read_list_lines(file_list, "readers.file")
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
        entries.append((remote.join_url(base, path), label))
    if not entries:
        raise PipelineDefinitionError(f"readers.file: file_list {file_list!r} lists no files")
    return entries


class FileReader(ListSource):
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
        dir_filters: Sequence[str] | None = None,
        shard: ShardSpec = ShardSpec(),
        seed: int | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(shard=shard, seed=seed, name=name)
        # Paths are kept as str; bytes names (non-UTF-8 file systems) become
        # str through os.fsdecode, which round-trips to the same bytes.
        root = os.fsdecode(file_root) if file_root is not None else None
        #: The folder paths are relative to (``get_property(key="source_info")`` reports them so, as DALI).
        self.file_root = root
        if isinstance(file_filters, str):
            file_filters = [file_filters]
        if files is not None:
            if file_list is not None:
                raise PipelineDefinitionError("readers.file: give either files or file_list, not both")
            paths = [remote.join_url(root, os.fsdecode(p)) if root else os.fsdecode(p) for p in files]
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
            if isinstance(dir_filters, str):
                dir_filters = [dir_filters]
            self.entries = list_file_root(root, list(file_filters), case_sensitive_filter, dir_filters)
        else:
            raise PipelineDefinitionError("readers.file needs file_root, file_list or files")
        self.paths = [p for p, _ in self.entries]
        self.labels = np.array([label for _, label in self.entries], dtype=np.int32)
        self.storage = storage.Storage()

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        assert self._io is not None
        paths = [self.paths[i] for i in items]
        contents = await self.storage.read_files(self._io, paths)
        data, failures = split_read_errors(contents, lambda content: np.frombuffer(content, dtype=np.uint8))
        labels = [self.labels[i : i + 1] for i in items]
        return SourceBatch(outputs=[data, labels], sample_ids=ids, sources=paths, failures=failures)

    @property
    def num_items(self) -> int:
        return len(self.entries)

    def close(self) -> None:
        self.storage.close()


@fn_function(READER)
def file(
    *,
    file_root: str | os.PathLike[str] | None = None,
    file_list: str | os.PathLike[str] | None = None,
    files: Sequence[str | os.PathLike[str]] | None = None,
    labels: Sequence[int] | None = None,
    file_filters: Sequence[str] | str = DEFAULT_FILE_FILTERS,
    case_sensitive_filter: bool = False,
    dir_filters: Sequence[str] | str | None = None,
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
) -> tuple[DataNode, DataNode]:
    """Read whole files and their labels.

    Args:
        file_root: folder with one sub-folder per class (label = sorted index).
            Paths here and below may be URLs (``s3://``, ``gs://``, ``http(s)://``).
        file_list: text file of ``path label`` lines (paths relative to
            ``file_root`` if given, else to the list's folder).
        files: explicit paths; ``labels`` default to 0, 1, 2, ...
        labels: one integer label per entry of ``files``.
        file_filters: glob patterns of the files to take under ``file_root``
            (case-insensitive unless ``case_sensitive_filter``).
        dir_filters: glob patterns of the class sub-folders of ``file_root``
            to take (labels count the kept folders only).
        random_shuffle: shuffle every epoch (through a buffer of ``initial_fill``).
        initial_fill: size of the shuffle buffer.
        shuffle_after_epoch: permute the whole data set every epoch (the
            same permutation on every rank, from ``shuffle_after_epoch_seed``;
            each shard then takes its part of it). Not with ``random_shuffle``
            or ``stick_to_shard``.
        shuffle_after_epoch_seed: seed of that permutation (default: a fixed
            one, so every rank agrees).
        shard_id: this reader's shard, in ``[0, num_shards)`` (default: the
            process's rank, from ``torch.distributed`` or ``RANK``; else 0).
        num_shards: how many parts the data set is split into (default: the
            world size, from ``torch.distributed`` or ``WORLD_SIZE``; else 1).
        stick_to_shard: keep the same shard every epoch (otherwise epoch ``e``
            reads shard ``(shard_id + e) % num_shards``).
        pad_last_batch: pad every shard to the same, whole-batch length by
            repeating its last sample.
        seed: shuffling seed (default: the pipeline's).
        name: the reader's name, for ``pipe.epoch_size(name)`` and iterators.

    Returns:
        ``(data, labels)``: the encoded files as 1-D uint8 arrays and int32
        labels of shape ``(1,)``.
    """
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill,
                                shuffle_after_epoch=shuffle_after_epoch,
                                shuffle_after_epoch_seed=shuffle_after_epoch_seed)
    reader = FileReader(
        file_root=file_root,
        file_list=file_list,
        files=files,
        labels=labels,
        file_filters=file_filters,
        case_sensitive_filter=case_sensitive_filter,
        dir_filters=dir_filters,
        shard=spec,
        seed=seed,
        name=name,
    )
    data, label = add_node(reader, [])
    return data, label
