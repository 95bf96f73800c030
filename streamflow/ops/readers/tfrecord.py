"""``readers.tfrecord``: features of ``tf.train.Example`` records in TFRecord files.

::

    import streamflow.tfrecord as tfrec
    out = fn.readers.tfrecord(
        path=["s3://bucket/train-00000.tfrecord", ...],
        index_path=["s3://bucket/train-00000.idx", ...],
        features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                  "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
    images = fn.decoders.image(out["image/encoded"])

One output per feature (a dict, as DALI returns). Records are located by
the index files (``python -m streamflow.tools.tfrecord2idx``); without
``index_path`` the files' record headers are scanned when the pipeline is
defined.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import PipelineDefinitionError
from ...graph import DataNode, add_node
from ...io.formats import tfrecord as fmt
from ...sharding import ShardSpec
from ...tfrecord import Feature, FeatureType
from ..arguments import READER, fn_function
from .records import RecordReader, as_list, check_index_count, read_index_file, scan_file

__all__ = ["TFRecordReader", "index_records", "tfrecord"]


def index_records(path: str, index_path: str | None) -> list[tuple[int, int]]:
    """(offset, size) of each record of ``path``: from its index file, or by scanning it."""
    if index_path is not None:
        return read_index_file(index_path, "readers.tfrecord", "index_path", fmt.parse_index, fmt.RecordError)
    return scan_file(path, "readers.tfrecord", fmt.scan_records, fmt.RecordError)


class TFRecordReader(RecordReader):
    """Reads ``Example`` records; one output per feature of ``features`` (in order)."""

    name = "readers.tfrecord"

    def __init__(self, paths: Sequence[str], index_paths: Sequence[str], features: Mapping[str, Feature],
                 *, shard: ShardSpec = ShardSpec(), seed: int | None = None, name: str | None = None) -> None:
        files, offsets, sizes = [], [], []
        for f, path in enumerate(paths):
            for offset, size in index_records(path, index_paths[f] if index_paths else None):
                files.append(f)
                offsets.append(offset)
                sizes.append(size)
        self.features = dict(features)
        self.num_outputs = len(self.features)
        super().__init__(paths, files, offsets, sizes, shard=shard, seed=seed, name=name)

    def parse(self, record: memoryview, item: int) -> list[Any]:
        return fmt.decode_features(fmt.record_payload(record), self.features)


def _check_features(features: Any) -> dict[str, Feature]:
    if not isinstance(features, Mapping) or not features:
        raise PipelineDefinitionError(
            "readers.tfrecord: features must be a non-empty dict of name -> tfrecord.FixedLenFeature(...) "
            f"or tfrecord.VarLenFeature(...), got {features!r}"
        )
    for key, value in features.items():
        if not isinstance(key, str) or not isinstance(value, Feature):
            raise PipelineDefinitionError(
                f"readers.tfrecord: features[{key!r}] must be made by streamflow.tfrecord.FixedLenFeature or "
                f"VarLenFeature, got {value!r}"
            )
        if value.dtype is FeatureType.STRING and (value.shape is None or _volume(value.shape) > 1):
            raise PipelineDefinitionError(
                f"readers.tfrecord: features[{key!r}]: tensors of strings are not supported; a string feature "
                "must be FixedLenFeature([], tfrecord.string, default)"
            )
    return dict(features)


def _volume(shape: tuple[int, ...]) -> int:
    out = 1
    for s in shape:
        out *= s
    return out


@fn_function(READER)
def tfrecord(
    *,
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    index_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    features: Mapping[str, Feature],
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
) -> dict[str, DataNode]:
    """Read features of ``tf.train.Example`` records from TFRecord files.

    Args:
        path: TFRecord files (local paths, ``s3://``, ``gs://``, ``http(s)://``).
        index_path: one index file per TFRecord file (``tfrecord2idx``
            format: ``offset size`` per record). Without it, the files are
            scanned when the pipeline is defined (slower to start).
        features: feature name -> ``tfrecord.FixedLenFeature(shape, dtype,
            default)`` or ``tfrecord.VarLenFeature([partial_shape,] dtype,
            default)``; ``dtype`` is ``tfrecord.int64`` (int64 output),
            ``tfrecord.float32`` (float32) or ``tfrecord.string`` (the bytes
            of the one value, uint8).
        random_shuffle, initial_fill, shuffle_after_epoch, shard_id, num_shards, stick_to_shard,
            pad_last_batch, seed: shuffling and sharding, as ``readers.file``.
        name: the reader's name (``pipe.epoch_size(name)``, iterators).

    Returns:
        A dict: feature name -> ``DataNode``. A feature missing from a
        record gives a 0-d array (the default value; DALI leaves it
        uninitialised); a fixed-shape feature with fewer values is filled up
        with the default.
    """
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill,
                                shuffle_after_epoch=shuffle_after_epoch,
                                shuffle_after_epoch_seed=shuffle_after_epoch_seed)
    paths = as_list(path, "path", "readers.tfrecord", required="TFRecord files")
    index_paths = as_list(index_path, "index_path", "readers.tfrecord")
    check_index_count(paths, index_paths, "readers.tfrecord", "path", "index_path")
    feats = _check_features(features)
    reader = TFRecordReader(paths, index_paths, feats, shard=spec, seed=seed, name=name)
    nodes = add_node(reader, [])
    return dict(zip(feats, nodes if isinstance(nodes, (list, tuple)) else [nodes]))
