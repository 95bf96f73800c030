"""TFRecord feature types for ``fn.readers.tfrecord`` (DALI's ``nvidia.dali.tfrecord``).

::

    import streamflow.tfrecord as tfrec

    features = {
        "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
        "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
        "image/object/bbox": tfrec.VarLenFeature([4], tfrec.float32, 0.0),
    }

The feature types are TensorFlow's (``tf.io.FixedLenFeature``,
``tf.io.VarLenFeature``); ``VarLenFeature`` also takes a ``partial_shape``:
the values are reshaped to ``[-1, *partial_shape]``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Feature", "FeatureType", "FixedLenFeature", "VarLenFeature", "float32", "int64", "string"]


class FeatureType(enum.IntEnum):
    """The value list of a ``tf.train.Feature`` (DALI's numbering)."""

    INT64 = 0
    STRING = 1
    FLOAT32 = 2


int64 = FeatureType.INT64
string = FeatureType.STRING
float32 = FeatureType.FLOAT32


@dataclass(frozen=True)
class Feature:
    """One feature to extract: its type, fixed shape (or partial shape) and default value.

    Use :func:`FixedLenFeature` and :func:`VarLenFeature` to make one.
    """

    dtype: FeatureType
    default: Any
    shape: tuple[int, ...] | None = None  # FixedLenFeature
    partial_shape: tuple[int, ...] | None = None  # VarLenFeature with a partial shape

    @property
    def fixed(self) -> bool:
        return self.shape is not None


def _dtype(value: Any) -> FeatureType:
    try:
        return FeatureType(value)
    except ValueError:
        raise ValueError(
            f"a TFRecord feature type must be tfrecord.int64, tfrecord.float32 or tfrecord.string, got {value!r}"
        ) from None


def _shape(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, int):
        value = [value]
    try:
        shape = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a list of non-negative ints, got {value!r}") from None
    if any(v < 0 for v in shape):
        raise ValueError(f"{what} must be a list of non-negative ints, got {value!r}")
    return shape


def _default(dtype: FeatureType, value: Any) -> Any:
    if dtype is FeatureType.STRING:
        if isinstance(value, str):
            return value.encode()
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        raise ValueError(f"the default value of a string feature must be str or bytes, got {value!r}")
    try:
        return int(value) if dtype is FeatureType.INT64 else float(value)
    except (TypeError, ValueError):
        raise ValueError(f"the default value of a {dtype.name.lower()} feature must be a number, got {value!r}") from None


def FixedLenFeature(shape: Sequence[int] | int, dtype: Any, default_value: Any) -> Feature:
    """A feature with a fixed shape (``tf.io.FixedLenFeature``).

    Args:
        shape: the output shape; ``[]`` or ``()`` for a scalar. A string
            feature must have one value (shape ``[]`` or ``[1]``): it is
            returned as its bytes (a 1-D uint8 array).
        dtype: ``int64``, ``float32`` or ``string``.
        default_value: fills the elements the record does not have.
    """
    kind = _dtype(dtype)
    return Feature(kind, _default(kind, default_value), shape=_shape(shape, "FixedLenFeature shape"))


def VarLenFeature(*args: Any) -> Feature:
    """A feature of any length (``tf.io.VarLenFeature``): ``VarLenFeature(dtype, default_value)``
    or ``VarLenFeature(partial_shape, dtype, default_value)`` (reshaped to ``[-1, *partial_shape]``)."""
    if len(args) == 2:
        kind = _dtype(args[0])
        return Feature(kind, _default(kind, args[1]))
    if len(args) == 3:
        kind = _dtype(args[1])
        return Feature(kind, _default(kind, args[2]), partial_shape=_shape(args[0], "VarLenFeature partial_shape"))
    raise TypeError("VarLenFeature takes (dtype, default_value) or (partial_shape, dtype, default_value)")
