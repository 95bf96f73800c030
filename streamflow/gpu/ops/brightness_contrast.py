"""``brightness_contrast``, ``brightness`` and ``contrast`` on the GPU: one launch per (input, output) type.

The per-sample multiplier and addend come from the CPU operator
(``BrightnessContrast.coefficients``), so both sides compute
``in * multiplier + addend`` in float32 from the same two numbers and convert
alike (``kernels/convert.cuh``): the outputs are bit-identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.color import BrightnessContrast
from .. import kernels as K
from ..context import GpuContext, float_bits, param_rows
from .registry import register

__all__ = ["brightness_contrast_gpu", "type_suffix"]

_SUFFIX: dict[np.dtype, str] = {np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16", np.dtype(np.int16): "i16", np.dtype(np.float32): "f32"}


def type_suffix(dtype: Any, what: str) -> str:
    """The kernels' name suffix of ``dtype`` (uint8, uint16, int16, float32), or a SampleError."""
    try:
        return _SUFFIX[np.dtype(dtype)]
    except KeyError:
        names = ", ".join(d.name for d in _SUFFIX)
        raise SampleError(f"{what} on the GPU supports {names}; got {np.dtype(dtype).name}") from None


@register(BrightnessContrast)
def brightness_contrast_gpu(op: BrightnessContrast, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    out: list[Any] = [None] * len(chunk)
    groups: dict[tuple[str, str], list[tuple[int, Any, float, float, np.dtype]]] = {}
    multiplier: Any
    addend: Any
    for row, image in enumerate(chunk.inputs[0]):
        try:
            if not ctx.is_array(image):
                raise SampleError(f"{op.name}: expected an array on the device, got {type(image).__name__}")
            multiplier, addend, out_dtype = op.coefficients(chunk, row, np.dtype(image.dtype))
            key = (type_suffix(image.dtype, op.name), type_suffix(out_dtype, op.name))
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        groups.setdefault(key, []).append((row, xp.ascontiguousarray(image), float(multiplier), float(addend), out_dtype))
    S = K.BC_SLOTS
    for (src_t, dst_t), members in groups.items():
        outs = ctx.alloc([tuple(m[1].shape) for m in members], members[0][4])
        P = param_rows(len(members))
        for j, (row, image, multiplier, addend, _) in enumerate(members):
            P[j, S["SRC"]], P[j, S["DST"]], P[j, S["N"]] = ctx.address(image), ctx.address(outs[j]), image.size
            P[j, S["MUL"]], P[j, S["ADD"]] = float_bits(multiplier), float_bits(addend)
            out[row] = outs[j]
        longest = max(m[1].size for m in members)
        ctx.launch(f"sf_brightness_contrast_{src_t}_{dst_t}", P, -(-longest // K.BC_ROW))
    return [out]
