"""``cast`` on the GPU: one launch per (input, output) type for the image types, cupy otherwise.

uint8, int8, uint16, int16, float16 and float32, both ways, go through
``kernels/cast.cu`` (float32 holds every value of these types exactly, and
the store rounds and saturates as ``cast_array``). Other types (32- and 64-bit
integers, float64, bool) run ``cast_array`` itself over the array module:
the same operations on the device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.cast import Cast, cast_array
from .. import kernels as K
from ..context import GpuContext, param_rows
from .registry import register

__all__ = ["cast_gpu", "cast_kernel_suffix"]

_SUFFIX = {np.dtype(np.uint8): "u8", np.dtype(np.int8): "i8", np.dtype(np.uint16): "u16", np.dtype(np.int16): "i16",
           np.dtype(np.float16): "f16", np.dtype(np.float32): "f32"}


def cast_kernel_suffix(dtype: Any) -> str | None:
    """The cast kernels' name suffix of ``dtype``, or None when no kernel takes it."""
    return _SUFFIX.get(np.dtype(dtype))


@register(Cast)
def cast_gpu(op: Cast, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    out: list[Any] = [None] * len(chunk)
    dst_t = cast_kernel_suffix(op.out_dtype)
    groups: dict[str, list[tuple[int, Any]]] = {}
    for row, value in enumerate(chunk.inputs[0]):
        if not ctx.is_array(value) or value.dtype.kind not in "uifb":
            what = getattr(value, "dtype", type(value).__name__)
            chunk.fail(row, SampleError(f"cast: input must be a numeric array on the device, got {what}"))
            continue
        src_t = cast_kernel_suffix(value.dtype)
        if src_t is None or dst_t is None or value.size == 0:
            out[row] = xp.asarray(cast_array(value, op.out_dtype, xp), order="C")
            continue
        # asarray(order="C"), not ascontiguousarray: that one makes 0-d samples 1-d
        groups.setdefault(src_t, []).append((row, xp.asarray(value, order="C")))
    S = K.CAST_SLOTS
    for src_t, members in groups.items():
        outs = ctx.alloc([tuple(m[1].shape) for m in members], op.out_dtype)
        P = param_rows(len(members))
        for j, (row, value) in enumerate(members):
            P[j, S["SRC"]], P[j, S["DST"]], P[j, S["N"]] = ctx.address(value), ctx.address(outs[j]), value.size
            out[row] = outs[j]
        longest = max(m[1].size for m in members)
        ctx.launch(f"sf_cast_{src_t}_{dst_t}", P, -(-longest // K.BC_ROW))
    return [out]
