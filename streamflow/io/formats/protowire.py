"""A small protocol-buffers wire-format decoder: just what the record readers need.

TFRecord (``tf.train.Example``), Caffe (``Datum``) and Caffe2 (``TensorProtos``)
records are protobuf messages. Their few fields are read straight from the
wire format (https://protobuf.dev/programming-guides/encoding/), so no
generated code and no ``protobuf`` package are needed:

* a message is a sequence of (tag, value); ``tag = field_number << 3 | wire_type``;
* wire types: 0 varint, 1 fixed 64-bit, 2 length-delimited (bytes, strings,
  sub-messages, packed repeated scalars), 5 fixed 32-bit; 3/4 (groups) are
  deprecated and refused.

Every malformed input (truncated varint, length past the end, unknown wire
type) raises :class:`ProtoError`; nothing reads outside the buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

__all__ = [
    "ProtoError",
    "Value",
    "fields",
    "packed_fixed32",
    "packed_varints",
    "read_varint",
    "repeated_float32",
    "repeated_varints",
    "to_int32",
    "to_int64",
]

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

#: A field's value: an int (varint, fixed) or the bytes of a length-delimited field.
Value = int | memoryview


class ProtoError(ValueError):
    """The bytes are not a valid protobuf message of the expected shape."""


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Decode the varint at ``pos``; return (value, position after it)."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise ProtoError(f"truncated varint at byte {pos}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ProtoError(f"varint longer than 10 bytes at byte {pos}")


def fields(data: bytes | bytearray | memoryview) -> Iterator[tuple[int, int, Value]]:
    """Each field of the message ``data``, in wire order: (field number, wire type, value).

    Length-delimited values are zero-copy ``memoryview`` slices of ``data``.
    """
    buf = data if isinstance(data, memoryview) else memoryview(data)
    if buf.format != "B" or buf.ndim != 1:
        buf = buf.cast("B")
    pos, end = 0, len(buf)
    while pos < end:
        tag_at = pos
        tag, pos = read_varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ProtoError(f"field number 0 at byte {tag_at}")
        value: Value
        if wire == VARINT:
            value, pos = read_varint(buf, pos)
        elif wire == LEN:
            size, pos = read_varint(buf, pos)
            if size > end - pos:
                raise ProtoError(f"field {number} at byte {tag_at}: length {size} runs past the end ({end - pos} left)")
            value = buf[pos : pos + size]
            pos += size
        elif wire == FIXED32:
            if pos + 4 > end:
                raise ProtoError(f"field {number} at byte {tag_at}: truncated 32-bit value")
            value = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        elif wire == FIXED64:
            if pos + 8 > end:
                raise ProtoError(f"field {number} at byte {tag_at}: truncated 64-bit value")
            value = int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        else:
            raise ProtoError(f"field {number} at byte {tag_at}: unsupported wire type {wire}")
        yield number, wire, value


def to_int64(value: int) -> int:
    """A varint read as a signed 64-bit integer (two's complement)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def to_int32(value: int) -> int:
    """A varint read as a signed 32-bit integer (negative int32s are sign-extended to 64 bits)."""
    value &= (1 << 32) - 1
    return value - (1 << 32) if value >= 1 << 31 else value


def packed_varints(buf: memoryview) -> list[int]:
    """The varints of a packed repeated field, as unsigned values."""
    out = []
    pos, end = 0, len(buf)
    while pos < end:
        value, pos = read_varint(buf, pos)
        out.append(value)
    return out


def packed_fixed32(buf: memoryview, dtype: str = "<f4") -> np.ndarray:
    """A packed repeated 32-bit field (``float``, ``fixed32``) as an array of ``dtype``."""
    if len(buf) % 4:
        raise ProtoError(f"packed 32-bit field of {len(buf)} bytes (not a multiple of 4)")
    return np.frombuffer(buf, dtype=dtype)


def repeated_varints(wire: int, value: Value, convert: Callable[[int], int] = to_int64) -> list[int]:
    """One occurrence of a repeated integer field: its values, packed (``LEN``) or one, through ``convert``."""
    if wire == LEN:
        return [convert(v) for v in packed_varints(value)]  # type: ignore[arg-type]
    return [convert(value)]  # type: ignore[arg-type]


def repeated_float32(wire: int, value: Value) -> np.ndarray | None:
    """One occurrence of a repeated ``float`` field: packed (``LEN``) or one ``FIXED32``; ``None`` for another wire type."""
    if wire == LEN:
        return packed_fixed32(value)  # type: ignore[arg-type]
    if wire == FIXED32:
        return np.array([value], dtype=np.uint32).view(np.float32)
    return None
