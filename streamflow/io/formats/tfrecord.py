"""TFRecord files: record framing, index files, ``tf.train.Example`` decoding.

A TFRecord file is a sequence of records::

    uint64 length (little endian) | uint32 masked crc32c(length) | data | uint32 masked crc32c(data)

An index file (DALI's ``tfrecord2idx`` format) has one ``offset size`` line
per record, ``size`` covering the whole framed record. The data of a record
is a serialized ``tf.train.Example``::

    Example  { Features features = 1; }
    Features { map<string, Feature> feature = 1; }        // entries: key = 1, value = 2
    Feature  { oneof { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
    *List    { repeated <bytes | float | int64> value = 1; }

CRCs are not checked (as in DALI): reading stays at memory speed. Framing
is: the length field must fit the record the index names.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...tfrecord import Feature, FeatureType
from .protowire import (
    LEN,
    VARINT,
    ProtoError,
    fields,
    repeated_float32,
    repeated_varints,
)

__all__ = [
    "HEADER_BYTES",
    "RECORD_OVERHEAD",
    "FeatureValue",
    "RecordError",
    "feature_array",
    "format_index",
    "parse_example",
    "parse_index",
    "record_payload",
    "scan_records",
]

HEADER_BYTES = 12  # length + its crc
RECORD_OVERHEAD = 16  # header + data crc

#: A decoded feature: its kind and values (list of bytes, float32 array or int64 array).
FeatureValue = tuple[FeatureType, Any]


class RecordError(ValueError):
    """A record or index line is malformed (the message says how)."""


def record_payload(record: memoryview) -> memoryview:
    """The ``Example`` bytes of one framed record (as the index delimits it)."""
    if len(record) < RECORD_OVERHEAD:
        raise RecordError(f"record is too short: {len(record)} bytes, a TFRecord record has at least {RECORD_OVERHEAD}")
    (length,) = struct.unpack_from("<Q", record, 0)
    if length > len(record) - RECORD_OVERHEAD:
        raise RecordError(
            f"record length field says {length} bytes, but the record has only {len(record) - RECORD_OVERHEAD} "
            "(a wrong index file, or a truncated or corrupt TFRecord file)"
        )
    return record[HEADER_BYTES : HEADER_BYTES + length]


def scan_records(read: Callable[[int, int], bytes], size: int, where: str) -> list[tuple[int, int]]:
    """(offset, size) of every record of a file of ``size`` bytes, reading headers with ``read(offset, n)``."""
    out = []
    pos = 0
    while pos < size:
        header = read(pos, 8)
        if len(header) < 8:
            raise RecordError(f"{where}: truncated record header at byte {pos}")
        (length,) = struct.unpack("<Q", header)
        total = length + RECORD_OVERHEAD
        if pos + total > size:
            raise RecordError(
                f"{where}: the record at byte {pos} claims {length} bytes but the file ends at {size}; not a TFRecord file?"
            )
        out.append((pos, total))
        pos += total
    return out


def parse_index(text: str, where: str) -> list[tuple[int, int]]:
    """(offset, size) pairs of a ``tfrecord2idx`` index file."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        try:
            offset, size = (int(p) for p in parts[:2])
            if len(parts) != 2 or offset < 0 or size < RECORD_OVERHEAD:
                raise ValueError
        except ValueError:
            raise RecordError(f"{where}:{number}: expected 'offset size' (non-negative ints), got {line!r}") from None
        out.append((offset, size))
    if not out:
        raise RecordError(f"{where}: the index file lists no records")
    return out


def format_index(records: list[tuple[int, int]]) -> str:
    """The text of an index file for ``records``."""
    return "".join(f"{offset} {size}\n" for offset, size in records)


def _float_values(wire: int, value: Any, out: list[np.ndarray]) -> None:
    floats = repeated_float32(wire, value)
    if floats is None:
        raise ProtoError("FloatList value has the wrong wire type")
    out.append(floats)


def _int_values(wire: int, value: Any, out: list[int]) -> None:
    if wire not in (LEN, VARINT):
        raise ProtoError("Int64List value has the wrong wire type")
    out.extend(repeated_varints(wire, value))


def _feature(buf: memoryview) -> FeatureValue | None:
    kind: FeatureValue | None = None
    for number, wire, value in fields(buf):
        if wire != LEN or number not in (1, 2, 3):
            continue
        assert isinstance(value, memoryview)
        if number == 1:
            kind = (FeatureType.STRING, [bytes(v) for n, w, v in fields(value) if n == 1 and w == LEN])
        elif number == 2:
            floats: list[np.ndarray] = []
            for n, w, v in fields(value):
                if n == 1:
                    _float_values(w, v, floats)
            kind = (FeatureType.FLOAT32, np.concatenate(floats) if floats else np.zeros(0, np.float32))
        else:
            ints: list[int] = []
            for n, w, v in fields(value):
                if n == 1:
                    _int_values(w, v, ints)
            kind = (FeatureType.INT64, np.array(ints, dtype=np.int64))
    return kind


def parse_example(data: memoryview, wanted: set[str]) -> dict[str, FeatureValue | None]:
    """The features named in ``wanted`` of a serialized ``Example`` (absent ones are left out).

    A feature set with no value list (an empty ``Feature``) maps to ``None``.
    """
    found: dict[str, FeatureValue | None] = {}
    for number, wire, features in fields(data):
        if number != 1 or wire != LEN:
            continue
        for n, w, entry in fields(features):  # type: ignore[arg-type]
            if n != 1 or w != LEN:
                continue
            key: str | None = None
            feature: memoryview | None = None
            for en, ew, ev in fields(entry):  # type: ignore[arg-type]
                if en == 1 and ew == LEN:
                    key = bytes(ev).decode("utf-8", "replace")
                elif en == 2 and ew == LEN:
                    feature = ev  # type: ignore[assignment]
            if key is not None and key in wanted:
                found[key] = _feature(feature) if feature is not None else None
    return found


_NUMPY = {FeatureType.INT64: np.int64, FeatureType.FLOAT32: np.float32}


def feature_array(name: str, spec: Feature, value: FeatureValue | None) -> np.ndarray:
    """One output sample of a feature, as DALI's reader gives it.

    * missing feature: a 0-d array of the feature's type holding the default
      (DALI gives a 0-d tensor too, uninitialised); a string's is 0;
    * ``string``: the bytes of its only value (uint8); several values are refused;
    * numbers with a fixed shape: the values, the rest filled with the default;
      more values than the shape holds is an error;
    * numbers of variable length: 1-D, or ``[-1, *partial_shape]``.
    """
    if spec.dtype is FeatureType.STRING:
        if spec.shape is None or int(np.prod(spec.shape)) > 1:
            raise RecordError(f"feature {name!r}: tensors of strings are not supported; use FixedLenFeature([], string, ...)")
        if value is None:
            return np.zeros((), np.uint8)
        kind, items = value
        if kind is not FeatureType.STRING:
            raise RecordError(f"feature {name!r} holds a {kind.name.lower()} list, the reader expects string")
        if len(items) > 1:
            raise RecordError(f"feature {name!r} has {len(items)} strings; a string feature must have exactly one")
        data = items[0] if items else spec.default
        return np.frombuffer(data, dtype=np.uint8).copy()
    dtype = _NUMPY[spec.dtype]
    if value is None:
        return np.array(spec.default, dtype=dtype)
    kind, items = value
    if kind is not spec.dtype:
        raise RecordError(
            f"feature {name!r} holds a {kind.name.lower()} list, the reader expects {spec.dtype.name.lower()}"
        )
    values = np.asarray(items, dtype=dtype)
    if spec.shape is not None:
        size = int(np.prod(spec.shape))
        if values.size > size:
            raise RecordError(f"feature {name!r} has {values.size} values, more than its shape {list(spec.shape)} holds")
        out = np.full(size, spec.default, dtype=dtype)
        out[: values.size] = values
        return out.reshape(spec.shape)
    if spec.partial_shape:
        inner = int(np.prod(spec.partial_shape))
        if inner == 0 or values.size % inner:
            raise RecordError(
                f"feature {name!r} has {values.size} values, not a multiple of its partial shape {list(spec.partial_shape)}"
            )
        return values.reshape((-1, *spec.partial_shape))
    return values


def decode_features(payload: memoryview, specs: Mapping[str, Feature]) -> list[np.ndarray]:
    """One array per feature of ``specs`` (in order) from an ``Example``'s bytes."""
    try:
        found = parse_example(payload, set(specs))
    except ProtoError as e:
        raise RecordError(f"not a tf.train.Example: {e}") from None
    return [feature_array(name, spec, found.get(name)) for name, spec in specs.items()]
