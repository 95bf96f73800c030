"""``fn.readers``: operators that read data sets from storage."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..distributed import resolve_shard
from ..graph import DataNode, add_node
from ..ops.file_reader import DEFAULT_FILE_FILTERS, FileReader
from ..ops.sharding import ShardSpec
from .numpy_reader import numpy

__all__ = ["file", "numpy"]


def file(
    *,
    file_root: str | os.PathLike[str] | None = None,
    file_list: str | os.PathLike[str] | None = None,
    files: Sequence[str | os.PathLike[str]] | None = None,
    labels: Sequence[int] | None = None,
    file_filters: Sequence[str] | str = DEFAULT_FILE_FILTERS,
    case_sensitive_filter: bool = False,
    random_shuffle: bool = False,
    initial_fill: int = 1024,
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
        file_list: text file of ``path label`` lines (paths relative to
            ``file_root`` if given, else to the list's folder).
        files: explicit paths; ``labels`` default to 0, 1, 2, ...
        labels: one integer label per entry of ``files``.
        file_filters: glob patterns of the files to take under ``file_root``
            (case-insensitive unless ``case_sensitive_filter``).
        random_shuffle: shuffle every epoch (through a buffer of ``initial_fill``).
        initial_fill: size of the shuffle buffer.
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
    shard_id, num_shards = resolve_shard(shard_id, num_shards)
    spec = ShardSpec(
        shard_id=shard_id,
        num_shards=num_shards,
        stick_to_shard=stick_to_shard,
        pad_last_batch=pad_last_batch,
        random_shuffle=random_shuffle,
        initial_fill=initial_fill,
    )
    reader = FileReader(
        file_root=file_root,
        file_list=file_list,
        files=files,
        labels=labels,
        file_filters=file_filters,
        case_sensitive_filter=case_sensitive_filter,
        shard=spec,
        seed=seed,
        name=name,
    )
    data, label = add_node(reader, [])
    return data, label
