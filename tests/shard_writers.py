"""Writers of the record formats, as their reference tools lay them out, for the reader tests.

Each writer follows the format's specification, not streamflow's reader:

* TFRecord: TensorFlow's framing (length, masked CRC-32C of the length, data,
  masked CRC-32C of the data) around serialized ``tf.train.Example`` protos;
* MXNet RecordIO: ``dmlc::RecordIOWriter`` framing (magic ``0xced7230a``,
  length with a 3-bit continuation flag, 4-byte padding; payloads holding
  the magic are split into parts) around ``IRHeader`` + image bytes, as
  ``mxnet.recordio.pack`` makes them, and the ``.idx`` of ``im2rec``;
* Caffe ``Datum`` and Caffe2 ``TensorProtos`` messages, stored in LMDB with
  the ``lmdb`` package.

The protobuf encoding is written here by hand and checked against Google's
``protobuf`` package in ``test_shard_writers.py``. Importable with only numpy
(``lmdb`` is imported by the LMDB writer), so the DALI recording script
uses the same writers.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# --- CRC-32C (Castagnoli), as TFRecord uses it -------------------------------------------
_POLY = 0x82F63B78
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data: bytes) -> int:
    try:
        import crc32c as fast  # type: ignore[import-not-found]

        return int(fast.crc32c(data))
    except ImportError:
        pass
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


# --- protobuf encoding ------------------------------------------------------------------
def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative ints as 10-byte two's complement, like protobuf
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def len_field(number: int, payload: bytes) -> bytes:
    return tag(number, 2) + varint(len(payload)) + payload


def varint_field(number: int, value: int) -> bytes:
    return tag(number, 0) + varint(value)


def packed_floats(number: int, values: Iterable[float]) -> bytes:
    return len_field(number, np.asarray(list(values), dtype="<f4").tobytes())


def packed_varints(number: int, values: Iterable[int]) -> bytes:
    return len_field(number, b"".join(varint(int(v)) for v in values))


# --- tf.train.Example --------------------------------------------------------------------
def example(features: dict[str, Any]) -> bytes:
    """A serialized ``tf.train.Example``: bytes/str -> BytesList, float arrays -> FloatList,
    int arrays -> Int64List (a list of bytes is a BytesList of several values)."""
    entries = b""
    for key, value in features.items():
        if isinstance(value, (bytes, str)) or (isinstance(value, list) and value and isinstance(value[0], bytes)):
            items = [value] if isinstance(value, (bytes, str)) else value
            lst = b"".join(len_field(1, v.encode() if isinstance(v, str) else v) for v in items)
            feature = len_field(1, lst)
        else:
            arr = np.asarray(value)
            if arr.dtype.kind == "f":
                feature = len_field(2, packed_floats(1, arr.reshape(-1)))
            else:
                feature = len_field(3, packed_varints(1, arr.reshape(-1)))
        entries += len_field(1, len_field(1, key.encode()) + len_field(2, feature))
    return len_field(1, entries)


def tfrecord_frame(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


def write_tfrecord(path: Path, records: Sequence[bytes]) -> list[tuple[int, int]]:
    """Write framed records; return (offset, size) of each (the index)."""
    index = []
    with open(path, "wb") as f:
        for data in records:
            framed = tfrecord_frame(data)
            index.append((f.tell(), len(framed)))
            f.write(framed)
    return index


def write_tfrecord_index(path: Path, index: Sequence[tuple[int, int]]) -> None:
    path.write_text("".join(f"{o} {s}\n" for o, s in index))


# --- MXNet RecordIO ----------------------------------------------------------------------
RECORDIO_MAGIC = 0xCED7230A


def irheader(label: float | Sequence[float], image_id: int = 0) -> bytes:
    """``mxnet.recordio.pack``'s header: flag, label, id, id2 (+ the label floats when flag > 0)."""
    if isinstance(label, (int, float)):
        return struct.pack("<IfQQ", 0, float(label), image_id, 0)
    labels = np.asarray(label, dtype="<f4")
    return struct.pack("<IfQQ", len(labels), 0.0, image_id, 0) + labels.tobytes()


def recordio_frame(payload: bytes) -> bytes:
    """``dmlc::RecordIOWriter::WriteRecord``: split at every aligned magic word, pad to 4 bytes."""
    magic = struct.pack("<I", RECORDIO_MAGIC)
    parts = []
    start = 0
    for pos in range(0, len(payload) - 3, 4):
        if payload[pos : pos + 4] == magic:
            parts.append(payload[start:pos])
            start = pos + 4
    parts.append(payload[start:])
    out = bytearray()
    for i, part in enumerate(parts):
        if len(parts) == 1:
            flag = 0
        elif i == 0:
            flag = 1
        elif i == len(parts) - 1:
            flag = 3
        else:
            flag = 2
        out += magic + struct.pack("<I", (flag << 29) | len(part)) + part
        out += b"\0" * ((-len(part)) % 4)
    return bytes(out)


def write_recordio(rec: Path, idx: Path | None, payloads: Sequence[bytes]) -> list[int]:
    offsets = []
    with open(rec, "wb") as f:
        for p in payloads:
            offsets.append(f.tell())
            f.write(recordio_frame(p))
    if idx is not None:
        idx.write_text("".join(f"{i}\t{o}\n" for i, o in enumerate(offsets)))
    return offsets


# --- Caffe / Caffe2 ----------------------------------------------------------------------
def caffe_datum(data: bytes, label: int | None, encoded: bool = True,
                shape: tuple[int, int, int] | None = None) -> bytes:
    """``caffe.Datum``: channels=1, height=2, width=3, data=4, label=5, encoded=7."""
    out = b""
    if shape is not None:
        h, w, c = shape
        out += varint_field(1, c) + varint_field(2, h) + varint_field(3, w)
    out += len_field(4, data)
    if label is not None:
        out += varint_field(5, label)
    out += varint_field(7, int(encoded))
    return out


# caffe2.TensorProto.DataType
C2_FLOAT, C2_INT32, C2_BYTE, C2_STRING, C2_INT64 = 1, 2, 3, 4, 10


def caffe2_tensor(data_type: int, *, dims: Sequence[int] = (), floats: Sequence[float] = (),
                  ints: Sequence[int] = (), int64s: Sequence[int] = (), byte_data: bytes | None = None,
                  strings: Sequence[bytes] = ()) -> bytes:
    """``caffe2.TensorProto``: dims=1, data_type=2, float_data=3, int32_data=4, byte_data=5,
    string_data=6, int64_data=10 (repeated numbers packed)."""
    out = b"".join(varint_field(1, d) for d in dims) + varint_field(2, data_type)
    if floats:
        out += packed_floats(3, floats)
    if ints:
        out += packed_varints(4, ints)
    if byte_data is not None:
        out += len_field(5, byte_data)
    out += b"".join(len_field(6, s) for s in strings)
    if int64s:
        out += packed_varints(10, int64s)
    return out


def caffe2_protos(*tensors: bytes) -> bytes:
    """``caffe2.TensorProtos``: repeated TensorProto protos = 1."""
    return b"".join(len_field(1, t) for t in tensors)


def write_lmdb(path: Path, values: Sequence[bytes], keys: Sequence[bytes] | None = None) -> None:
    """An LMDB environment (a folder) with ``values`` under keys ``00000000``, ``00000001``, ..."""
    import lmdb

    keys = keys or [f"{i:08d}".encode() for i in range(len(values))]
    size = max(1 << 20, 4 * sum(len(v) + 64 for v in values))
    env = lmdb.open(str(path), map_size=size, subdir=True)
    try:
        with env.begin(write=True) as txn:
            for k, v in zip(keys, values):
                txn.put(k, v)
    finally:
        env.close()


# --- the reference data set (shared by the tests and the DALI recording script) ------------
REFERENCE_FILES = [
    "jpeg-quirks/hopper.jpg", "jpeg-quirks/hopper_gray.jpg", "jpeg-quirks/hopper_16bit_qtables.jpg",
    "jpeg-quirks/hopper_orientation_3.jpg", "jpeg-quirks/hopper_orientation_6.jpg",
    "jpeg-quirks/pil_sample_rgb.jpg", "jpeg-quirks/flower2.jpg", "photos/rocket.jpg",
]  # fmt: skip


def reference_samples(data_dir: Path) -> list[tuple[str, bytes, int]]:
    """(key, JPEG bytes, label) of the reference data set: real JPEGs of tests/data, labels i % 3."""
    return [(f"sample{i:03d}", (data_dir / name).read_bytes(), i % 3) for i, name in enumerate(REFERENCE_FILES)]


def write_wds(path: Path, samples: Sequence[tuple[str, dict[str, bytes]]]) -> None:
    """A WebDataset shard written by ``webdataset.TarWriter`` (keys -> {ext: bytes})."""
    import webdataset as wds

    with wds.TarWriter(str(path)) as sink:
        for key, parts in samples:
            sink.write({"__key__": key, **parts})


def build_reference(root: Path, data_dir: Path) -> dict[str, Any]:
    """Write the reference data set in every format under ``root``; return the paths."""
    samples = reference_samples(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    halves = [samples[:4], samples[4:]]
    out: dict[str, Any] = {"wds": [], "wds_idx": [], "tfrecord": [], "tfrecord_idx": []}
    for i, half in enumerate(halves):
        tar = root / f"shard-{i:02d}.tar"
        write_wds(tar, [(k, {"jpg": data, "cls": str(label).encode()}) for k, data, label in half])
        out["wds"].append(str(tar))
        rec = root / f"part-{i:02d}.tfrecord"
        index = write_tfrecord(rec, [
            example({"image/encoded": data, "image/class/label": np.array([label]), "image/key": k})
            for k, data, label in half
        ])
        write_tfrecord_index(root / f"part-{i:02d}.idx", index)
        out["tfrecord"].append(str(rec))
        out["tfrecord_idx"].append(str(root / f"part-{i:02d}.idx"))
    write_recordio(root / "data.rec", root / "data.idx",
                   [irheader(float(label), i) + data for i, (_, data, label) in enumerate(samples)])
    out["rec"], out["rec_idx"] = str(root / "data.rec"), str(root / "data.idx")
    write_lmdb(root / "caffe_lmdb", [caffe_datum(data, label) for _, data, label in samples])
    out["caffe"] = str(root / "caffe_lmdb")
    write_lmdb(root / "caffe2_lmdb", [
        caffe2_protos(caffe2_tensor(C2_STRING, strings=[data]), caffe2_tensor(C2_INT32, ints=[label]))
        for _, data, label in samples
    ])
    out["caffe2"] = str(root / "caffe2_lmdb")
    # Quirks: a missing component, upper-case extension, a hidden member, two matching components.
    quirks = root / "quirks.tar"
    jpg = samples[0][1]
    write_wds(quirks, [
        ("a", {"jpg": jpg, "cls": b"1"}),
        ("b", {"jpg": samples[1][1]}),
        ("c", {"JPG": samples[2][1], "cls": b"3"}),
        ("d", {"jpg": samples[3][1], "png": samples[4][1], "cls": b"4"}),
    ])
    out["quirks"] = str(quirks)
    return out
