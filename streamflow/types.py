"""Enums of the public API: devices, image types, data types, interpolation.

Strings that DALI users pass (``"cpu"``, ``"mixed"``, ``"gpu"``, ``"linear"``)
are parsed once, at the API boundary, into these enums; the rest of the code
compares enums, never strings.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BatchInfo",
    "SampleInfo",
    "ANY_DATA",
    "BGR",
    "BOOL",
    "FLOAT",
    "FLOAT16",
    "FLOAT64",
    "GRAY",
    "ANY_DATA",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "INTERP_CUBIC",
    "INTERP_GAUSSIAN",
    "INTERP_LANCZOS3",
    "INTERP_LINEAR",
    "INTERP_NN",
    "INTERP_TRIANGULAR",
    "NCHW",
    "NFCHW",
    "NFHWC",
    "NHWC",
    "RGB",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "DALIDataType",
    "DALIImageType",
    "DALIInterpType",
    "DataType",
    "Device",
    "ErrorPolicy",
    "ImageType",
    "InterpType",
    "LastBatchPolicy",
    "Number",
    "OutOfBoundsPolicy",
    "YCbCr",
    "Constant",
    "ScalarConstant",
    "to_dali_type",
    "parse_device",
    "parse_dtype",
    "parse_image_type",
    "parse_interp",
]


#: A scalar argument: DALI takes ints and floats alike.
Number = float | int


def _parse_enum(enum_cls: type[enum.Enum], value: Any, what: str) -> Any:
    """Turn a string (any case) or an enum member into a member of ``enum_cls``."""
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        key = value.strip().upper()
        for member in enum_cls:
            if key in (member.name, str(member.value).upper()):
                return member
    valid = ", ".join(repr(m.name.lower()) for m in enum_cls)
    raise ValueError(f"unknown {what} {value!r}; expected one of: {valid}")


class Device(enum.Enum):
    """Where an operator runs.

    ``CPU``: on the host thread pool. ``MIXED``: host input, GPU output
    (decoders). ``GPU``: on the device.
    """

    CPU = "cpu"
    MIXED = "mixed"
    GPU = "gpu"


def parse_device(value: str | Device) -> Device:
    """Parse ``"cpu" | "mixed" | "gpu"`` (or a ``Device``) into a ``Device``."""
    return _parse_enum(Device, value, "device")


class ImageType(enum.Enum):
    """Color layout of decoded images (DALI's ``types.DALIImageType``)."""

    RGB = "rgb"
    BGR = "bgr"
    GRAY = "gray"
    YCbCr = "ycbcr"
    ANY_DATA = "any_data"


DALIImageType = ImageType


def parse_image_type(value: str | ImageType) -> ImageType:
    """Parse ``"rgb" | "bgr" | "gray" | "ycbcr"`` into an ``ImageType``."""
    return _parse_enum(ImageType, value, "image type")


class DataType(enum.Enum):
    """Element types of tensors (DALI's ``types.DALIDataType``)."""

    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT16 = "float16"
    FLOAT = "float32"
    FLOAT64 = "float64"
    BOOL = "bool"

    @property
    def numpy(self) -> np.dtype:
        """The matching numpy dtype."""
        return np.dtype(self.value)

    @classmethod
    def from_numpy(cls, dtype: Any) -> DataType:
        """The ``DataType`` of a numpy dtype (or anything ``np.dtype`` accepts)."""
        name = np.dtype(dtype).name
        for member in cls:
            if member.value == name:
                return member
        raise ValueError(f"numpy dtype {name!r} has no streamflow DataType")


DALIDataType = DataType


def parse_dtype(value: Any) -> DataType:
    """Parse a ``DataType``, a numpy dtype or a name (``"float32"``, ``"FLOAT"``)."""
    if isinstance(value, DataType):
        return value
    if isinstance(value, str):
        try:
            return _parse_enum(DataType, value, "data type")
        except ValueError:
            pass
    try:
        return DataType.from_numpy(value)
    except TypeError:
        pass
    valid = ", ".join(m.name for m in DataType)
    raise ValueError(f"unknown data type {value!r}; expected one of: {valid}")


class InterpType(enum.Enum):
    """Interpolation filters (DALI's ``types.DALIInterpType``)."""

    INTERP_NN = "nn"
    INTERP_LINEAR = "linear"
    INTERP_CUBIC = "cubic"
    INTERP_LANCZOS3 = "lanczos3"
    INTERP_GAUSSIAN = "gaussian"
    INTERP_TRIANGULAR = "triangular"


DALIInterpType = InterpType


def parse_interp(value: str | InterpType) -> InterpType:
    """Parse ``"linear"``, ``"INTERP_LINEAR"`` or an ``InterpType``."""
    if isinstance(value, str) and not value.upper().startswith("INTERP_"):
        value = "INTERP_" + value
    return _parse_enum(InterpType, value, "interpolation type")


class OutOfBoundsPolicy(enum.Enum):
    """What a crop or region of interest does when it leaves the input."""

    ERROR = "error"
    PAD = "pad"
    TRIM_TO_SHAPE = "trim_to_shape"


class ErrorPolicy(enum.Enum):
    """What a pipeline does with a sample that fails (``on_error``)."""

    RAISE = "raise"
    SKIP = "skip"

    @classmethod
    def parse(cls, value: str | ErrorPolicy) -> ErrorPolicy:
        if isinstance(value, ErrorPolicy):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise ValueError(f"on_error must be 'raise' or 'skip', got {value!r}") from None


class LastBatchPolicy(enum.Enum):
    """How an iterator ends an epoch whose size is not a multiple of the batch."""

    FILL = "fill"
    DROP = "drop"
    PARTIAL = "partial"


# DALI-style module-level aliases, so `types.FLOAT` and `types.RGB` work.
FLOAT = DataType.FLOAT
FLOAT16 = DataType.FLOAT16
FLOAT64 = DataType.FLOAT64
UINT8 = DataType.UINT8
INT8 = DataType.INT8
UINT16 = DataType.UINT16
INT16 = DataType.INT16
INT32 = DataType.INT32
INT64 = DataType.INT64
BOOL = DataType.BOOL
RGB = ImageType.RGB
BGR = ImageType.BGR
GRAY = ImageType.GRAY
YCbCr = ImageType.YCbCr
ANY_DATA = ImageType.ANY_DATA
INTERP_NN = InterpType.INTERP_NN
INTERP_LINEAR = InterpType.INTERP_LINEAR
INTERP_CUBIC = InterpType.INTERP_CUBIC
INTERP_LANCZOS3 = InterpType.INTERP_LANCZOS3
INTERP_GAUSSIAN = InterpType.INTERP_GAUSSIAN
INTERP_TRIANGULAR = InterpType.INTERP_TRIANGULAR
UINT32 = DataType.UINT32
UINT64 = DataType.UINT64
# DALI's legacy layout constants (``output_layout=types.NCHW``): per-sample layouts here.
NCHW = "CHW"
NHWC = "HWC"
NFHWC = "FHWC"
NFCHW = "FCHW"


# What external_source callables are given (DALI: ``nvidia.dali.types.SampleInfo`` / ``BatchInfo``).
@dataclass(frozen=True)
class SampleInfo:
    """What a per-sample callable is told about the sample it must produce."""

    idx_in_epoch: int
    idx_in_batch: int
    iteration: int
    epoch_idx: int


@dataclass(frozen=True)
class BatchInfo:
    """What a batch callable is told (with ``batch_info=True``)."""

    iteration: int
    epoch_idx: int
def to_dali_type(name: str) -> DataType:
    """DALI's ``types.to_dali_type``: the ``DataType`` of a numpy type name (``"uint8"`` -> ``UINT8``)."""
    return parse_dtype(name)


class ScalarConstant:
    """DALI's ``types.ScalarConstant``: a number with an explicit type for arithmetic on pipeline data.

    ``Constant(10).uint8() * images`` computes in uint8; a plain ``10`` would be
    int32 (a Python ``int`` is INT32, a ``float`` FLOAT, a ``bool`` BOOL).
    """

    def __init__(self, value: Any, dtype: Any = None) -> None:
        if dtype is None:
            dtype = DataType.BOOL if isinstance(value, (bool, np.bool_)) else (
                DataType.INT32 if isinstance(value, (int, np.integer)) else DataType.FLOAT)
        self.dtype = parse_dtype(dtype)
        if not isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
            raise TypeError(f"Constant: expected a number, got {value!r}")
        #: the value as a numpy scalar of ``dtype`` (a float given an integer type is truncated, as in DALI)
        self.value = self.dtype.numpy.type(value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.value, dtype=dtype)

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __str__(self) -> str:
        return f"{self.value}:DALIDataType.{self.dtype.name}"

    __repr__ = __str__

    def bool(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.BOOL)

    def int8(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.INT8)

    def int16(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.INT16)

    def int32(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.INT32)

    def int64(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.INT64)

    def uint8(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.UINT8)

    def uint16(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.UINT16)

    def uint32(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.UINT32)

    def uint64(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.UINT64)

    def float16(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.FLOAT16)

    def float32(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.FLOAT)

    def float64(self) -> ScalarConstant:
        return ScalarConstant(self.value, DataType.FLOAT64)


#: Makes pipeline data of a constant array; registered by ``streamflow.ops.constant`` (a higher layer).
_tensor_constant: Any = None


def register_tensor_constant(factory: Any) -> None:
    """Set what ``Constant(array)`` calls to make pipeline data (``factory(array, layout=...)``)."""
    global _tensor_constant
    _tensor_constant = factory


def Constant(value: Any, dtype: Any = None, shape: Any = None, layout: str | None = None,
             device: Any = None, **kwargs: Any) -> Any:
    """DALI's ``types.Constant``: a number gives a ``ScalarConstant`` (for arithmetic); an array (or a
    ``shape``) gives pipeline data holding that array for every sample (``fn.constant``)."""
    if shape is None and layout is None and np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return ScalarConstant(value, dtype)
    array = np.asarray(value) if dtype is None else np.asarray(value, dtype=parse_dtype(dtype).numpy)
    if shape is not None:
        array = np.broadcast_to(array, tuple(int(s) for s in np.atleast_1d(shape))).copy()
    if _tensor_constant is None:  # pragma: no cover - streamflow.ops.constant is loaded by `import streamflow`
        raise RuntimeError("types.Constant(array) needs streamflow's operators: import streamflow first")
    return _tensor_constant(array, layout=layout or "")
