"""A ``.npy`` file already in memory (read whole from object storage) as an array or a region of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..types import OutOfBoundsPolicy
from .npy_header import parse_npy_header
from .npy_plan import convert_fill
from .roi import resolve_roi

__all__ = ["array_from_npy_bytes"]


def array_from_npy_bytes(data: bytes, source: str, roi: Mapping[str, Any] | None = None,
                         out_of_bounds_policy: OutOfBoundsPolicy = OutOfBoundsPolicy.ERROR,
                         fill_value: Any = 0) -> np.ndarray:
    """The array (or ROI) of the ``.npy`` bytes ``data``: C-order, native byte order.

    Same header checks, ROI arguments and out-of-bounds policies as
    :func:`streamflow.io.read_npy`; failures are ``ReadError``s naming ``source``.
    """
    header = parse_npy_header(data, source, len(data))
    flat = np.frombuffer(data, dtype=header.dtype, count=header.size, offset=header.data_offset)
    array = flat.reshape(header.shape, order="F" if header.fortran_order else "C")
    box = resolve_roi(header.shape, **dict(roi or {}), out_of_bounds_policy=out_of_bounds_policy, source=source)
    native = header.dtype.newbyteorder("=")
    inside = tuple(slice(lo, hi) for lo, hi in box.inside(header.shape))
    if box.is_full(header.shape):
        return np.ascontiguousarray(array, dtype=native)
    out = np.full(box.shape, convert_fill(fill_value, header.dtype), dtype=native)
    out[box.placement(header.shape)] = array[inside]
    return out
