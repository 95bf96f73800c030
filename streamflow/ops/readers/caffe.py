"""``readers.caffe`` and ``readers.caffe2``: records of Caffe / Caffe2 LMDB databases.

The values of the LMDB (read in key order, every path in turn) are Caffe
``Datum`` or Caffe2 ``TensorProtos`` messages (``io.formats.caffe``). LMDB
files are memory-mapped by the ``lmdb`` package, so the databases must be
local folders (``pip install 'streamflow[lmdb]'``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import MissingDependencyError, PipelineDefinitionError, ReadError, SampleError
from ...graph import DataNode, add_node
from ...io import storage
from ...io.formats import caffe as fmt
from ...io.formats.protowire import ProtoError
from ...operator import SourceBatch
from ...sharding import ShardSpec
from ..arguments import READER, fn_function
from .list_source import ListSource
from .records import as_list

__all__ = ["Caffe2Reader", "CaffeReader", "LmdbReader", "caffe", "caffe2"]

# Caffe2 label types (DALI's label_type argument)
SINGLE_LABEL, MULTI_LABEL_SPARSE, MULTI_LABEL_DENSE, MULTI_LABEL_WEIGHTED_SPARSE, NO_LABEL = range(5)


def _lmdb(reader: str) -> Any:
    try:
        import lmdb
    except ImportError:
        raise MissingDependencyError("lmdb", "lmdb", f"{reader} (LMDB databases)") from None
    return lmdb


class _SharedEnvs:
    """The process's open LMDB environments, shared by the readers that read them.

    LMDB refuses to open one database twice in a process, so two pipelines
    (or a pipeline and a dynamic-mode reader) over the same database share its
    environment; the last reader to close it closes it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._envs: dict[str, list[Any]] = {}  # real path -> [environment, readers using it]

    def acquire(self, lmdb: Any, path: str) -> Any:
        key = os.path.realpath(path)
        with self._lock:
            entry = self._envs.get(key)
            if entry is None:
                env = lmdb.open(path, readonly=True, lock=False, readahead=False, subdir=os.path.isdir(path))
                entry = self._envs[key] = [env, 0]
            entry[1] += 1
            return entry[0]

    def release(self, path: str) -> None:
        key = os.path.realpath(path)
        with self._lock:
            entry = self._envs.get(key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self._envs[key]
        entry[0].close()


_SHARED_ENVS = _SharedEnvs()


class LmdbReader(ListSource):
    """Reads the values of LMDB databases in key order; subclasses parse them (``parse``)."""

    def __init__(self, paths: Sequence[str], *, shard: ShardSpec, seed: int | None, name: str | None) -> None:
        super().__init__(shard=shard, seed=seed, name=name)
        lmdb = _lmdb(self.name)
        self.paths = list(paths)
        self._envs: dict[int, Any] = {}
        self._lock = threading.Lock()
        db_of, keys = [], []
        for d, path in enumerate(self.paths):
            if storage.is_url(path):
                raise PipelineDefinitionError(
                    f"{self.name}: {path!r}: LMDB databases are memory-mapped and must be local folders; "
                    "copy the database locally, or convert it to TFRecord or WebDataset shards"
                )
            try:
                env = _SHARED_ENVS.acquire(lmdb, path)
            except lmdb.Error as e:
                raise PipelineDefinitionError(f"{self.name}: cannot open LMDB database {path!r}: {e}") from None
            with env.begin(buffers=False) as txn:
                found = list(txn.cursor().iternext(keys=True, values=False))
            self._envs[d] = env
            db_of.extend([d] * len(found))
            keys.extend(found)
        if not keys:
            self.close()
            raise PipelineDefinitionError(f"{self.name}: the LMDB databases {self.paths} hold no records")
        self.db_of = np.asarray(db_of, dtype=np.int32)
        self.keys: list[bytes] = keys

    @property
    def num_items(self) -> int:
        return len(self.keys)

    def source(self, item: int) -> str:
        return f"{self.paths[self.db_of[item]]} key {self.keys[item].decode('utf-8', 'backslashreplace')!r}"

    def _env(self, d: int) -> Any:
        with self._lock:
            env = self._envs.get(d)
            if env is None:
                env = self._envs[d] = _SHARED_ENVS.acquire(_lmdb(self.name), self.paths[d])
            return env

    def parse(self, value: memoryview, item: int) -> list[Any]:
        """The outputs of one record; a ``ValueError`` fails the sample."""
        raise NotImplementedError

    def _read_parse(self, items: np.ndarray) -> tuple[list[list[Any]], dict[int, SampleError]]:
        outputs: list[list[Any]] = [[] for _ in range(self.num_outputs)]
        failures: dict[int, SampleError] = {}
        for row, item in enumerate(int(i) for i in items):
            values: list[Any] | None = None
            try:
                with self._env(int(self.db_of[item])).begin(buffers=False) as txn:
                    value = txn.get(self.keys[item])
                if value is None:
                    raise ReadError("the key is gone (the database changed since the pipeline was defined)",
                                    self.source(item))
                values = self.parse(memoryview(value), item)
            except ReadError as e:
                failures[row] = e
            except (ValueError, ProtoError) as e:
                failures[row] = ReadError(f"bad record: {e}", self.source(item))
            except Exception as e:  # lmdb.Error and kin: the database is damaged
                failures[row] = ReadError(f"{type(e).__name__}: {e}", self.source(item))
            for out, v in zip(outputs, values or [None] * self.num_outputs):
                out.append(v)
        return outputs, failures

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        assert self._io is not None
        outputs, failures = await self._io.call(self._read_parse, items)
        sources: list[str | None] = [self.source(int(i)) for i in items]
        return SourceBatch(outputs=outputs, sample_ids=ids, sources=sources, failures=failures)

    def close(self) -> None:
        with self._lock:
            opened, self._envs = list(self._envs), {}
        for d in opened:
            _SHARED_ENVS.release(self.paths[d])


class CaffeReader(LmdbReader):
    """Caffe ``Datum`` records: (image, label) as ``image_available``/``label_available`` say."""

    name = "readers.caffe"

    def __init__(self, paths: Sequence[str], image_available: bool, label_available: bool, **kw: Any) -> None:
        self.image_available = image_available
        self.label_available = label_available
        self.num_outputs = int(image_available) + int(label_available)
        super().__init__(paths, **kw)

    def parse(self, value: memoryview, item: int) -> list[Any]:
        datum = fmt.parse_datum(value)
        out: list[Any] = []
        if self.image_available:
            data = np.frombuffer(datum.data, dtype=np.uint8).copy()
            if datum.encoded is False:  # raw pixels: shape from the datum (DALI: H, W, C)
                shape = (datum.height, datum.width, datum.channels)
                if int(np.prod(shape)) != data.size:
                    raise ValueError(
                        f"raw image of {data.size} bytes does not match its size {datum.height}x{datum.width}x"
                        f"{datum.channels}"
                    )
                data = data.reshape(shape)
            out.append(data)
        if self.label_available:
            out.append(np.array([] if datum.label is None else [datum.label], dtype=np.int32))
        return out

    def layout(self, index: int) -> str:
        return ""


class Caffe2Reader(LmdbReader):
    """Caffe2 ``TensorProtos`` records: image, label, additional inputs, bounding box."""

    name = "readers.caffe2"

    def __init__(self, paths: Sequence[str], image_available: bool, label_type: int, num_labels: int,
                 additional_inputs: int, bbox: bool, **kw: Any) -> None:
        self.image_available = image_available
        self.label_type = label_type
        self.num_labels = num_labels
        self.additional_inputs = additional_inputs
        self.bbox = bbox
        self.num_outputs = int(image_available) + int(label_type != NO_LABEL) + additional_inputs + int(bbox)
        super().__init__(paths, **kw)

    def _image(self, t: fmt.Tensor) -> np.ndarray:
        if t.data_type == fmt.C2_STRING:
            if not t.string_data:
                raise ValueError("the image tensor (STRING) holds no string")
            return np.frombuffer(t.string_data[0], dtype=np.uint8).copy()
        if t.data_type == fmt.C2_BYTE:
            if len(t.dims) < 2:
                raise ValueError(f"a raw (BYTE) image needs dims [H, W(, C)], got {t.dims}")
            h, w = t.dims[0], t.dims[1]
            c = t.dims[2] if len(t.dims) == 3 else 1
            if h * w * c != len(t.byte_data):
                raise ValueError(f"image data size mismatch: {len(t.byte_data)} bytes (expected {h * w * c})")
            return np.frombuffer(t.byte_data, dtype=np.uint8).reshape(h, w, c).copy()
        raise ValueError(f"the image tensor has data_type {t.data_type}; expected STRING (4) or BYTE (3)")

    def _values(self, t: fmt.Tensor) -> np.ndarray:
        if t.data_type == fmt.C2_FLOAT:
            return t.floats()
        if t.data_type == fmt.C2_INT32:
            return t.ints()
        if t.data_type == fmt.C2_INT64:
            return t.int64s()
        raise ValueError(f"unsupported tensor data_type {t.data_type} (FLOAT, INT32 or INT64 expected)")

    def _label(self, protos: list[fmt.Tensor], at: int) -> np.ndarray:
        t = protos[at]
        if t.data_type not in (fmt.C2_FLOAT, fmt.C2_INT32):
            raise ValueError(f"unsupported label data_type {t.data_type} (FLOAT or INT32 expected)")
        values = self._values(t)
        if self.label_type == SINGLE_LABEL:
            if values.size != 1:
                raise ValueError(f"label_type=0 (single label) but the label tensor has {values.size} values")
            return values
        if self.label_type == MULTI_LABEL_DENSE:
            return values
        dtype = values.dtype if self.label_type == MULTI_LABEL_SPARSE else np.float32
        dense = np.zeros(self.num_labels, dtype=dtype)
        idx = values.astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_labels):
            raise ValueError(f"label index out of bounds: {idx.tolist()} (num_labels: {self.num_labels})")
        if self.label_type == MULTI_LABEL_SPARSE:
            dense[idx] = 1
        else:
            if at + 1 >= len(protos):
                raise ValueError("label_type=3 (weighted sparse) needs a weights tensor after the indices")
            weights = protos[at + 1].floats()
            if weights.size < idx.size:
                raise ValueError(f"{idx.size} label indices but {weights.size} weights")
            dense[idx] = weights[: idx.size]
        return dense

    def parse(self, value: memoryview, item: int) -> list[Any]:
        protos = fmt.parse_tensor_protos(value)
        need = int(self.image_available) + int(self.label_type != NO_LABEL) + self.additional_inputs
        need += int(self.label_type == MULTI_LABEL_WEIGHTED_SPARSE)
        if len(protos) < need:
            raise ValueError(f"the record holds {len(protos)} tensors, the reader's arguments need {need}")
        out: list[Any] = []
        at = 0
        if self.image_available:
            out.append(self._image(protos[at]))
            at += 1
        if self.label_type != NO_LABEL:
            out.append(self._label(protos, at))
            at += 2 if self.label_type == MULTI_LABEL_WEIGHTED_SPARSE else 1
        for _ in range(self.additional_inputs):
            out.append(self._values(protos[at]))
            at += 1
        if self.bbox:
            if at < len(protos):
                box = protos[at]
                if box.data_type != fmt.C2_INT32 or len(box.int32_data) != 4:
                    raise ValueError("the bounding box tensor must be INT32 with 4 values")
                out.append(box.ints())
            else:
                out.append(np.zeros(0, np.int32))
        return out


def _spec(shard_id: int | None, num_shards: int | None, **kw: Any) -> ShardSpec:
    return ShardSpec.for_reader(shard_id, num_shards, **kw)


@fn_function(READER)
def caffe(
    *,
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    image_available: bool = True,
    label_available: bool = True,
    random_shuffle: bool = False,
    initial_fill: int = 1024,
    shard_id: int | None = None,
    num_shards: int | None = None,
    stick_to_shard: bool = False,
    pad_last_batch: bool = False,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode | tuple[DataNode, ...]:
    """Read (image, label) pairs from Caffe LMDB databases.

    Args:
        path: Caffe LMDB folders (local), read in key order.
        image_available: output the image (encoded bytes, or an HWC uint8
            array for a raw ``Datum``, shaped as DALI does).
        label_available: output the int32 label, shape ``(1,)`` (``(0,)``
            for a ``Datum`` without a label).
        random_shuffle, initial_fill, shard_id, num_shards, stick_to_shard,
            pad_last_batch, seed: shuffling and sharding, as ``readers.file``.
        name: the reader's name (``pipe.epoch_size(name)``, iterators).
    """
    if not image_available and not label_available:
        raise PipelineDefinitionError("readers.caffe: image_available and label_available are both False: no outputs")
    paths = as_list(path, "path", "readers.caffe", required="LMDB databases")
    spec = _spec(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                 random_shuffle=random_shuffle, initial_fill=initial_fill)
    reader = CaffeReader(paths, image_available, label_available, shard=spec, seed=seed, name=name)
    nodes = add_node(reader, [])
    return nodes[0] if len(nodes) == 1 else tuple(nodes)


@fn_function(READER)
def caffe2(
    *,
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    image_available: bool = True,
    label_type: int = SINGLE_LABEL,
    num_labels: int = 1,
    additional_inputs: int = 0,
    bbox: bool = False,
    random_shuffle: bool = False,
    initial_fill: int = 1024,
    shard_id: int | None = None,
    num_shards: int | None = None,
    stick_to_shard: bool = False,
    pad_last_batch: bool = False,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode | tuple[DataNode, ...]:
    """Read samples from Caffe2 LMDB databases (``TensorProtos`` records).

    Args:
        path: Caffe2 LMDB folders (local), read in key order.
        image_available: the first tensor is the image: STRING (encoded
            bytes, 1-D uint8) or BYTE with dims ``[H, W(, C)]`` (HWC uint8).
        label_type: 0 single label (shape ``(1,)``), 1 sparse indices (a
            ``num_labels`` one-hot vector), 2 dense vector, 3 weighted sparse
            (indices, then a tensor of weights: a float32 ``num_labels``
            vector), 4 no label. Labels are float32 or int32 as stored.
        num_labels: length of sparse label vectors.
        additional_inputs: further tensors (FLOAT, INT32, INT64), one output each.
        bbox: output the bounding box: a last INT32 tensor of 4 values
            (``(0,)`` when the record has none).
        random_shuffle, initial_fill, shard_id, num_shards, stick_to_shard,
            pad_last_batch, seed: shuffling and sharding, as ``readers.file``.
        name: the reader's name (``pipe.epoch_size(name)``, iterators).
    """
    if label_type not in range(5):
        raise PipelineDefinitionError(f"readers.caffe2: label_type must be 0, 1, 2, 3 or 4, got {label_type!r}")
    if num_labels < 1:
        raise PipelineDefinitionError(f"readers.caffe2: num_labels must be >= 1, got {num_labels}")
    if additional_inputs < 0:
        raise PipelineDefinitionError(f"readers.caffe2: additional_inputs must be >= 0, got {additional_inputs}")
    if not image_available and label_type == NO_LABEL and not additional_inputs and not bbox:
        raise PipelineDefinitionError("readers.caffe2: no outputs (no image, no label, no additional inputs, no bbox)")
    paths = as_list(path, "path", "readers.caffe2", required="LMDB databases")
    spec = _spec(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                 random_shuffle=random_shuffle, initial_fill=initial_fill)
    reader = Caffe2Reader(paths, image_available, label_type, num_labels, additional_inputs, bbox,
                          shard=spec, seed=seed, name=name)
    nodes = add_node(reader, [])
    return nodes[0] if len(nodes) == 1 else tuple(nodes)
