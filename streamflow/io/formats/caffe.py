"""Caffe ``Datum`` and Caffe2 ``TensorProtos`` records (the values of Caffe/Caffe2 LMDBs).

Only the fields the readers use are decoded (``protowire``)::

    Datum        { int32 channels = 1; int32 height = 2; int32 width = 3; bytes data = 4;
                   int32 label = 5; repeated float float_data = 6; bool encoded = 7; }
    TensorProtos { repeated TensorProto protos = 1; }
    TensorProto  { repeated int64 dims = 1; DataType data_type = 2; repeated float float_data = 3;
                   repeated int32 int32_data = 4; bytes byte_data = 5; repeated bytes string_data = 6;
                   repeated int64 int64_data = 10; }

Caffe2's ``DataType``: FLOAT = 1, INT32 = 2, BYTE = 3, STRING = 4, INT64 = 10.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .protowire import (
    LEN,
    VARINT,
    ProtoError,
    fields,
    repeated_float32,
    repeated_varints,
    to_int32,
)

__all__ = ["Datum", "Tensor", "parse_datum", "parse_tensor_protos"]

C2_FLOAT, C2_INT32, C2_BYTE, C2_STRING, C2_INT64 = 1, 2, 3, 4, 10


@dataclass
class Datum:
    """A decoded ``caffe.Datum`` (fields absent from the record are ``None``)."""

    channels: int = 0
    height: int = 0
    width: int = 0
    data: bytes = b""
    label: int | None = None
    encoded: bool | None = None


def parse_datum(buf: memoryview) -> Datum:
    """Decode a ``caffe.Datum`` (raises ``ProtoError`` on malformed bytes)."""
    d = Datum()
    for number, wire, value in fields(buf):
        if wire == VARINT:
            assert isinstance(value, int)
            if number == 1:
                d.channels = to_int32(value)
            elif number == 2:
                d.height = to_int32(value)
            elif number == 3:
                d.width = to_int32(value)
            elif number == 5:
                d.label = to_int32(value)
            elif number == 7:
                d.encoded = bool(value)
        elif wire == LEN and number == 4:
            d.data = bytes(value)
    return d


@dataclass
class Tensor:
    """A decoded ``caffe2.TensorProto``."""

    data_type: int = C2_FLOAT  # protobuf's default
    dims: list[int] = field(default_factory=list)
    float_data: list[np.ndarray] = field(default_factory=list)
    int32_data: list[int] = field(default_factory=list)
    int64_data: list[int] = field(default_factory=list)
    byte_data: bytes = b""
    string_data: list[bytes] = field(default_factory=list)

    def floats(self) -> np.ndarray:
        return np.concatenate(self.float_data).astype(np.float32) if self.float_data else np.zeros(0, np.float32)

    def ints(self) -> np.ndarray:
        return np.array(self.int32_data, dtype=np.int32)

    def int64s(self) -> np.ndarray:
        return np.array(self.int64_data, dtype=np.int64)


def _tensor(buf: memoryview) -> Tensor:
    t = Tensor()
    for number, wire, value in fields(buf):
        if number == 1:
            t.dims.extend(repeated_varints(wire, value))
        elif number == 2 and wire == VARINT:
            t.data_type = int(value)
        elif number == 3:
            floats = repeated_float32(wire, value)
            if floats is not None:
                t.float_data.append(floats)
        elif number == 4:
            t.int32_data.extend(repeated_varints(wire, value, to_int32))
        elif number == 10:
            t.int64_data.extend(repeated_varints(wire, value))
        elif number == 5 and wire == LEN:
            t.byte_data = bytes(value)
        elif number == 6 and wire == LEN:
            t.string_data.append(bytes(value))
    return t


def parse_tensor_protos(buf: memoryview) -> list[Tensor]:
    """Decode a ``caffe2.TensorProtos`` message into its tensors."""
    out = []
    for number, wire, value in fields(buf):
        if number == 1:
            if wire != LEN:
                raise ProtoError("TensorProtos.protos has the wrong wire type")
            out.append(_tensor(value))  # type: ignore[arg-type]
    return out
