"""``gaussian_blur`` on the GPU: a horizontal and a vertical pass (``kernels/convolution.cu``).

The windows come from the CPU operator (``GaussianBlur.windows``) and the
passes repeat ``_native/filters.c``'s float32 arithmetic tap by tap, so the
outputs are bit-identical to the CPU's (and to DALI's CPU operator). Every
layout of the CPU operator works: a sample is viewed as planes of H x W x C.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.gaussian_blur import GaussianBlur
from ...ops.spatial import sample_layout
from .. import kernels as K
from ..context import GpuContext, param_rows
from .brightness_contrast import type_suffix
from .registry import register

__all__ = ["gaussian_blur_gpu", "planes_shape"]


def planes_shape(shape: tuple[int, ...], layout: str) -> tuple[int, int, int, int]:
    """(planes, H, W, C) of a C-contiguous sample of ``layout`` (see ``ops/spatial.py``)."""
    if layout == "HW":
        return 1, shape[0], shape[1], 1
    if layout == "HWC":
        return 1, shape[0], shape[1], shape[2]
    if layout in ("CHW", "FHW"):
        return shape[0], shape[1], shape[2], 1
    if layout == "FHWC":
        return shape[0], shape[1], shape[2], shape[3]
    return shape[0] * shape[1], shape[2], shape[3], 1  # FCHW


@register(GaussianBlur)
def gaussian_blur_gpu(op: GaussianBlur, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    out: list[Any] = [None] * len(chunk)
    items = []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            if not ctx.is_array(image):
                raise SampleError(f"gaussian_blur: expected an array on the device, got {type(image).__name__}")
            layout = sample_layout(op.layout(0), image.ndim, op.name)
            planes = planes_shape(tuple(image.shape), layout)
            if 0 in planes:
                raise SampleError(f"gaussian_blur: empty sample of shape {tuple(image.shape)}")
            if int(np.prod(planes, dtype=np.int64)) >= 2**31:
                raise SampleError(f"gaussian_blur: sample of shape {tuple(image.shape)} is too large for the GPU kernels")
            out_dtype = np.dtype(op.out_dtype or image.dtype)
            suffixes = (type_suffix(image.dtype, op.name), type_suffix(out_dtype, op.name))
            ky, kx = op.windows(chunk, row)
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        items.append((row, xp.ascontiguousarray(image), planes, out_dtype, suffixes, ky, kx))
    if not items:
        return [out]
    staged, addresses = ctx.stage([t for it in items for t in (it[5], it[6])])
    tmps = ctx.alloc([(int(np.prod(it[2], dtype=np.int64)),) for it in items], np.float32)
    S = K.CONV_SLOTS
    P = param_rows(len(items))
    outs: list[Any] = [None] * len(items)
    for j, (row, image, (p, h, w, c), out_dtype, _, ky, kx) in enumerate(items):
        outs[j] = xp.empty(image.shape, dtype=out_dtype)
        P[j, S["SRC"]], P[j, S["DST"]], P[j, S["TMP"]] = ctx.address(image), ctx.address(outs[j]), ctx.address(tmps[j])
        P[j, S["P"]], P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = p, h, w, c
        P[j, S["KY"]], P[j, S["NY"]] = addresses[2 * j], len(ky)
        P[j, S["KX"]], P[j, S["NX"]] = addresses[2 * j + 1], len(kx)
        out[row] = outs[j]
    for stage, which in (("h", 0), ("v", 1)):  # all horizontal passes, then all vertical ones (stream order)
        groups: dict[str, list[int]] = {}
        for j, it in enumerate(items):
            groups.setdefault(it[4][which], []).append(j)
        for suffix, members in groups.items():
            ctx.launch(f"sf_conv_{stage}_{suffix}", P[members], max(items[j][2][0] * items[j][2][1] for j in members))
    del staged
    return [out]
