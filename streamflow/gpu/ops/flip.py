"""``flip`` on the GPU: one launch per element size."""

from __future__ import annotations

from typing import Any

from ...errors import SampleError
from ...operator import Chunk
from ...ops.flip import Flip
from .. import kernels as K
from ..context import GpuContext, group_by_dtype, param_rows
from .registry import register

__all__ = ["flip_gpu"]


@register(Flip)
def flip_gpu(op: Flip, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    out: list[Any] = [None] * len(chunk)
    rows, imgs = [], []
    for row, image in enumerate(chunk.inputs[0]):
        if not ctx.is_array(image) or image.ndim not in (2, 3) or image.itemsize not in (1, 2, 4, 8) or 0 in image.shape:
            chunk.fail(row, SampleError(f"flip expects a non-empty HW or HWC image, got shape {getattr(image, 'shape', None)}"))
            continue
        rows.append(row)
        imgs.append(xp.ascontiguousarray(image))
    if not rows:
        return [out]
    S = K.FLIP_SLOTS
    results: list[Any] = [None] * len(imgs)
    chw = op.layout(0).upper() == "CHW"
    for dtype, members in group_by_dtype(imgs).items():
        outs = ctx.alloc([tuple(imgs[i].shape) for i in members], dtype)
        P = param_rows(len(members))
        row_counts = []
        for j, i in enumerate(members):
            img, row = imgs[i], rows[i]
            if img.ndim == 3 and chw:
                planes, H, W, C = img.shape[0], img.shape[1], img.shape[2], 1
            else:
                planes, H, W = 1, img.shape[0], img.shape[1]
                C = img.shape[2] if img.ndim == 3 else 1
            P[j, S["SRC"]], P[j, S["DST"]] = ctx.address(img), ctx.address(outs[j])
            P[j, S["P"]], P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = planes, H, W, C
            P[j, S["HFLIP"]] = int(bool(int(chunk.arg("horizontal", row, op.horizontal))))
            P[j, S["VFLIP"]] = int(bool(int(chunk.arg("vertical", row, op.vertical))))
            row_counts.append(planes * H)
            results[i] = outs[j]
        ctx.launch(f"sf_flip_b{dtype.itemsize}", P, max(row_counts))
    for row, r in zip(rows, results):
        out[row] = r
    return [out]
