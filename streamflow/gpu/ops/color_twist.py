"""``color_twist``, ``hue``, ``saturation`` and ``hsv`` on the GPU: one launch per (input, output) type.

The per-sample 3x3 matrix and offset come from the CPU operator
(``ColorTwist.twist_for``), and the kernel (``kernels/color.cu``) sums them in
the order of the CPU's C kernel, in float32 without fused multiply-adds, and
converts as it does: the outputs are bit-identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.color import ColorTwist
from .. import kernels as K
from ..context import GpuContext, float_bits, param_rows
from .brightness_contrast import type_suffix
from .registry import register

__all__ = ["color_twist_gpu"]


@register(ColorTwist)
def color_twist_gpu(op: ColorTwist, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    out: list[Any] = [None] * len(chunk)
    groups: dict[tuple[str, str], list[tuple[int, Any, np.ndarray, np.float32, np.dtype]]] = {}
    for row, image in enumerate(chunk.inputs[0]):
        try:
            if not ctx.is_array(image):
                raise SampleError(f"{op.name}: expected an array on the device, got {type(image).__name__}")
            if image.ndim < 1 or image.shape[-1] != 3:
                raise SampleError(f"{op.name} expects channels-last images with 3 channels (HWC), "
                                  f"got shape {tuple(image.shape)}")
            matrix, offset, out_dtype = op.twist_for(chunk, row, np.dtype(image.dtype))
            key = (type_suffix(image.dtype, op.name), type_suffix(out_dtype, op.name))
        except (SampleError, ValueError) as err:
            chunk.fail(row, err if isinstance(err, SampleError) else SampleError(str(err)))
            continue
        groups.setdefault(key, []).append((row, xp.ascontiguousarray(image), matrix, offset, out_dtype))
    S = K.CT_SLOTS
    for (src_t, dst_t), members in groups.items():
        outs = ctx.alloc([tuple(m[1].shape) for m in members], members[0][4])
        P = param_rows(len(members))
        for j, (row, image, matrix, offset, _) in enumerate(members):
            P[j, S["SRC"]], P[j, S["DST"]], P[j, S["N"]] = ctx.address(image), ctx.address(outs[j]), image.size // 3
            for k, value in enumerate(np.asarray(matrix, dtype=np.float32).reshape(9)):
                P[j, S[f"M{k}"]] = float_bits(value)
            P[j, S["OFFSET"]] = float_bits(offset)
            out[row] = outs[j]
        longest = max(m[1].size // 3 for m in members)
        ctx.launch(f"sf_color_twist_{src_t}_{dst_t}", P, -(-longest // K.CT_ROW))
    return [out]
