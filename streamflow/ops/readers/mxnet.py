"""``readers.mxnet``: (image, label) records of MXNet RecordIO files (``im2rec``'s ``.rec`` + ``.idx``).

The ``.idx`` index lists each record's offset (global across ``path``, as
if the files were concatenated, like DALI); a record runs to the next
offset. Without ``index_path`` the files' record headers are scanned when
the pipeline is defined.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import PipelineDefinitionError
from ...graph import DataNode, add_node
from ...io import storage
from ...io.formats import recordio as fmt
from ...sharding import ShardSpec
from ..arguments import READER, fn_function
from .records import RecordReader, as_list, read_index_file, scan_file

__all__ = ["MXNetReader", "mxnet"]


def index_records(paths: list[str], index_path: str | None) -> list[tuple[int, int, int]]:
    """(file, offset, size) of every record of ``paths``."""
    op = "readers.mxnet"
    if index_path is not None:
        sizes = [storage.file_size(p, f"{op}: cannot open") for p in paths]
        return read_index_file(index_path, op, "index_path",
                               lambda text, where: fmt.record_extents(fmt.parse_index(text, where), sizes),
                               fmt.RecordIOError)

    def scan(read: Callable[[int, int], bytes], size: int, where: str) -> list[tuple[int, int, int]]:
        return fmt.record_extents(fmt.scan_records(read, size, where), [size])

    out: list[tuple[int, int, int]] = []
    for f, path in enumerate(paths):
        out.extend((f, o, s) for _, o, s in scan_file(path, op, scan, fmt.RecordIOError))
    return out


class MXNetReader(RecordReader):
    """Outputs (encoded image as uint8, float32 label of shape (1,) or (n,))."""

    name = "readers.mxnet"
    num_outputs = 2

    def __init__(self, paths: Sequence[str], index_path: str | None, *, shard: ShardSpec = ShardSpec(),
                 seed: int | None = None, name: str | None = None) -> None:
        records = index_records(list(paths), index_path)
        super().__init__(paths, [r[0] for r in records], [r[1] for r in records], [r[2] for r in records],
                         shard=shard, seed=seed, name=name)

    def parse(self, record: memoryview, item: int) -> list[Any]:
        image, label = fmt.parse_image_record(record)
        return [image, label]


@fn_function(READER)
def mxnet(
    *,
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    index_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
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
    """Read (image, label) pairs from MXNet RecordIO files.

    Args:
        path: the ``.rec`` files (local paths, ``s3://``, ``gs://``, ``http(s)://``).
        index_path: a list of one ``.idx`` file (``key offset`` lines, offsets
            across all of ``path``); without it, the files are scanned when
            the pipeline is defined.
        random_shuffle, initial_fill, shuffle_after_epoch, shard_id, num_shards, stick_to_shard,
            pad_last_batch, seed: shuffling and sharding, as ``readers.file``.
        name: the reader's name (``pipe.epoch_size(name)``, iterators).

    Returns:
        ``(images, labels)``: the record's image bytes (uint8, 1-D) and its
        float32 label: shape ``(1,)``, or ``(n,)`` for a record with ``n``
        labels (``IRHeader.flag``).
    """
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill,
                                shuffle_after_epoch=shuffle_after_epoch,
                                shuffle_after_epoch_seed=shuffle_after_epoch_seed)
    paths = as_list(path, "path", "readers.mxnet", required="RecordIO files")
    indexes = as_list(index_path, "index_path", "readers.mxnet")
    if len(indexes) > 1:
        raise PipelineDefinitionError(
            f"readers.mxnet: index_path must name one .idx file (offsets across all of path), got {len(indexes)}"
        )
    reader = MXNetReader(paths, indexes[0] if indexes else None, shard=spec, seed=seed, name=name)
    images, labels = add_node(reader, [])
    return images, labels
