"""``crop`` on the GPU: one launch per element size, any channel count."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.crop import Crop
from .. import kernels as K
from ..context import GpuContext, element_bits, group_by_dtype, param_rows
from .registry import register

__all__ = ["crop_gpu"]


@register(Crop)
def crop_gpu(op: Crop, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    out: list[Any] = [None] * len(chunk)
    rows, imgs, wins, fills = [], [], [], []
    fill = np.asarray(op.spec.fill_values, dtype=np.float64).reshape(-1)
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = ctx.as_hwc(image)
            window = op.window_for(chunk, row, img.shape[0], img.shape[1])
            C = img.shape[2]
            if img.itemsize not in (1, 2, 4, 8):
                raise SampleError(f"crop on the GPU: unsupported dtype {img.dtype}")
            if fill.size not in (1, C):
                raise SampleError(f"crop: fill_values must have 1 or {C} values, got {fill.size}")
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        rows.append((row, image.ndim == 2))
        imgs.append(img)
        wins.append(window)
        fills.append(element_bits(np.broadcast_to(fill, (C,)), np.dtype(img.dtype)))
    if not rows:
        return [out]
    staged, addresses = ctx.stage(fills)
    results: list[Any] = [None] * len(imgs)
    S = K.CROP_SLOTS
    for dtype, members in group_by_dtype(imgs).items():  # one launch per element type
        shapes = [(wins[i][2], wins[i][3], imgs[i].shape[2]) for i in members]
        outs = ctx.alloc(shapes, dtype)
        P = param_rows(len(members))
        for j, i in enumerate(members):
            img, (y0, x0, h, w) = imgs[i], wins[i]
            P[j, S["SRC"]], P[j, S["SRC_STRIDE"]] = ctx.address(img), img.strides[0] // img.itemsize
            P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = img.shape[0], img.shape[1], img.shape[2]
            P[j, S["DST"]], P[j, S["OH"]], P[j, S["OW"]] = ctx.address(outs[j]), h, w
            P[j, S["Y0"]], P[j, S["X0"]], P[j, S["FILL"]] = y0, x0, addresses[i]
            results[i] = outs[j]
        ctx.launch(f"sf_crop_b{dtype.itemsize}", P, max(s[0] for s in shapes))
    del staged
    for (row, was_2d), r in zip(rows, results):
        out[row] = r[:, :, 0] if was_2d else r
    return [out]
