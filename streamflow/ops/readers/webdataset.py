"""``readers.webdataset``: samples of WebDataset tar shards, one output per extension set.

::

    images, labels = fn.readers.webdataset(
        paths=["s3://bucket/shard-000000.tar", ...], ext=["jpg;png", "cls"],
        index_paths=[...])                    # optional: wds2idx index files

A sample is the group of consecutive tar members sharing a base name (see
``io.formats.webdataset``); output ``i`` is the sample's component whose
extension is in ``ext[i]`` (a ``;``-separated set). The components a sample
needs are read with one byte-range read (they are adjacent in the tar).
Without ``index_paths`` the tar headers are scanned when the pipeline is
defined (only headers are read).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import PipelineDefinitionError
from ...graph import DataNode, add_node
from ...io.formats import webdataset as fmt
from ...sharding import ShardSpec
from ...types import DataType, parse_dtype
from ..arguments import READER, fn_function
from .records import RecordReader, as_list, check_index_count, read_index_file, scan_file

__all__ = ["WebDatasetReader", "index_samples", "webdataset"]

MISSING = ("empty", "skip", "error")


def index_samples(path: str, index_path: str | None) -> list[list[fmt.Component]]:
    """The samples of one archive: from its index file, or by scanning its headers."""
    op = "readers.webdataset"
    if index_path is not None:
        return read_index_file(index_path, op, "index_paths entry", fmt.parse_index, fmt.IndexError_)
    samples = scan_file(path, op, lambda read, size, where: fmt.group_samples(fmt.scan_tar(read, size, where)),
                        fmt.IndexError_)
    if not samples:
        raise PipelineDefinitionError(f"readers.webdataset: {path!r} holds no samples (no regular files)")
    return samples


class WebDatasetReader(RecordReader):
    """Reads the components of each sample that the outputs ask for.

    Args:
        paths, index_paths: the archives and their index files (or ``[]``).
        ext: per output, the set of extensions it takes.
        missing: ``"empty"``, ``"skip"`` or ``"error"`` (``missing_component_behavior``).
        dtypes: per output, the element type the bytes are viewed as.
        case_sensitive: whether extensions are compared case-sensitively.
    """

    name = "readers.webdataset"

    def __init__(self, paths: Sequence[str], index_paths: Sequence[str], ext: Sequence[frozenset[str]],
                 missing: str, dtypes: Sequence[DataType], case_sensitive: bool, *,
                 shard: ShardSpec = ShardSpec(), seed: int | None = None, name: str | None = None) -> None:
        self.ext = list(ext)
        self.num_outputs = len(self.ext)
        self.dtypes = [d.numpy for d in dtypes]
        files, offsets, sizes = [], [], []
        #: per sample: its key and per output (offset from the record's start, size) or None
        self.parts: list[tuple[str, list[tuple[int, int] | None]]] = []
        for f, path in enumerate(paths):
            for sample in index_samples(path, index_paths[f] if index_paths else None):
                chosen = [self._pick(sample, wanted, case_sensitive) for wanted in self.ext]
                key = fmt.split_name(sample[0].name)[0] if sample[0].name else f"#{sample[0].offset}"
                absent = [i for i, c in enumerate(chosen) if c is None]
                if absent and missing == "skip":
                    continue
                if absent and missing == "error":
                    wanted_text = ", ".join(repr(";".join(sorted(self.ext[i]))) for i in absent)
                    raise PipelineDefinitionError(
                        f"readers.webdataset: sample {key!r} of {path!r} (at byte {sample[0].offset}) has no "
                        f"component for ext {wanted_text}; its components are {[c.ext for c in sample]} "
                        "(missing_component_behavior='error'; use 'empty' or 'skip' to accept such samples)"
                    )
                used = [c for c in chosen if c is not None]
                start = min((c.offset for c in used), default=sample[0].offset)
                end = max((c.offset + c.size for c in used), default=start)
                files.append(f)
                offsets.append(start)
                sizes.append(end - start)
                self.parts.append((key, [None if c is None else (c.offset - start, c.size) for c in chosen]))
        if not self.parts:
            raise PipelineDefinitionError(
                f"readers.webdataset: no sample of {list(paths)} has components for every ext "
                f"{[';'.join(sorted(e)) for e in self.ext]} (missing_component_behavior='skip' skipped them all)"
            )
        super().__init__(paths, files, offsets, sizes, shard=shard, seed=seed, name=name)

    @staticmethod
    def _pick(sample: list[fmt.Component], wanted: frozenset[str], case_sensitive: bool) -> fmt.Component | None:
        for component in sample:  # the first matching component, in archive order
            if (component.ext if case_sensitive else component.ext.lower()) in wanted:
                return component
        return None

    def source(self, item: int) -> str:
        return f"{super().source(item)} (sample {self.parts[item][0]!r})"

    def parse(self, record: memoryview, item: int) -> list[Any]:
        out = []
        for i, part in enumerate(self.parts[item][1]):
            dtype = self.dtypes[i]
            if part is None:
                out.append(np.zeros(0, dtype))
                continue
            begin, size = part
            if size % dtype.itemsize:
                raise ValueError(
                    f"component for ext {';'.join(sorted(self.ext[i]))!r} has {size} bytes, not a multiple of "
                    f"{dtype.itemsize} (dtypes[{i}] = {dtype.name})"
                )
            out.append(np.frombuffer(record[begin : begin + size], dtype=dtype).copy())
        return out


def _ext_sets(ext: str | Sequence[str], case_sensitive: bool) -> list[frozenset[str]]:
    items = [ext] if isinstance(ext, str) else list(ext)
    if not items or not all(isinstance(e, str) for e in items):
        raise PipelineDefinitionError(f"readers.webdataset: ext must be a string or a list of strings, got {ext!r}")
    sets = []
    for e in items:
        parts = frozenset(p if case_sensitive else p.lower() for p in e.split(";") if p)
        if not parts:
            raise PipelineDefinitionError(f"readers.webdataset: ext entry {e!r} names no extension")
        sets.append(parts)
    return sets


@fn_function(READER)
def webdataset(
    *,
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    ext: str | Sequence[str],
    index_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    missing_component_behavior: str = "",
    dtypes: Any = None,
    case_sensitive_extensions: bool = True,
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
    """Read samples of WebDataset tar archives.

    Args:
        paths: the archives (local paths, ``s3://``, ``gs://``, ``http(s)://``).
        ext: one extension set per output, extensions separated by ``;``
            (``"jpg;png"``); an extension is the text after the first dot of
            the member's file name.
        index_paths: one ``wds2idx`` index file per archive; without them
            the archives' headers are scanned when the pipeline is defined.
        missing_component_behavior: a sample without a component for an
            output: ``"empty"`` (default; an empty array), ``"skip"`` (the
            sample is left out) or ``"error"``.
        dtypes: per output, the type the bytes are read as (default uint8).
        case_sensitive_extensions: compare extensions case-sensitively.
        random_shuffle, initial_fill, shuffle_after_epoch, shard_id, num_shards, stick_to_shard,
            pad_last_batch, seed: shuffling and sharding, as ``readers.file``.
        name: the reader's name (``pipe.epoch_size(name)``, iterators).

    Returns:
        One ``DataNode`` per ``ext`` entry (a single one when ``ext`` has one).
    """
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill,
                                shuffle_after_epoch=shuffle_after_epoch,
                                shuffle_after_epoch_seed=shuffle_after_epoch_seed)
    archives = as_list(paths, "paths", "readers.webdataset", required="archives")
    indexes = as_list(index_paths, "index_paths", "readers.webdataset")
    check_index_count(archives, indexes, "readers.webdataset", "paths", "index_paths")
    sets = _ext_sets(ext, case_sensitive_extensions)
    behavior = missing_component_behavior.lower() or "empty"
    if behavior not in MISSING:
        raise PipelineDefinitionError(
            f"readers.webdataset: missing_component_behavior must be 'empty', 'skip' or 'error', got "
            f"{missing_component_behavior!r}"
        )
    if dtypes is None:
        types = [DataType.UINT8] * len(sets)
    else:
        listed = list(dtypes) if isinstance(dtypes, (list, tuple)) else [dtypes]
        try:
            types = [parse_dtype(d) for d in listed]
        except ValueError as e:
            raise PipelineDefinitionError(f"readers.webdataset: dtypes: {e}") from None
        if len(types) != len(sets):
            raise PipelineDefinitionError(
                f"readers.webdataset: {len(sets)} ext entries but {len(types)} dtypes; give one dtype per output"
            )
        if DataType.BOOL in types:
            raise PipelineDefinitionError("readers.webdataset: dtypes: BOOL is not supported (DALI neither)")
    reader = WebDatasetReader(archives, indexes, sets, behavior, types, case_sensitive_extensions,
                              shard=spec, seed=seed, name=name)
    nodes = add_node(reader, [])
    return nodes[0] if len(nodes) == 1 else tuple(nodes)
