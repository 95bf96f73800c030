"""``crop`` on the GPU: one launch per element size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import PipelineDefinitionError, SampleError
from ...operator import Chunk
from ...ops.crop import Crop
from .. import kernels as K
from ..context import GpuContext, as_hwc, element_bits, param_rows
from .registry import register

__all__ = ["crop_gpu"]


@register(Crop)
def crop_gpu(op: Crop, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    cp = ctx.cp
    out: list[Any] = [None] * len(chunk)
    rows, imgs, wins = [], [], []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = as_hwc(cp, image)
            window = op.window_for(chunk, row, img.shape[0], img.shape[1])
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        if img.itemsize not in (1, 2, 4, 8) or img.shape[2] > K.MAX_CHANNELS:
            chunk.fail(row, SampleError(f"crop on the GPU: unsupported dtype {img.dtype} or channels {img.shape[2]}"))
            continue
        rows.append((row, image.ndim == 2))
        imgs.append(img)
        wins.append(window)
    if not rows:
        return [out]
    groups: dict[np.dtype, list[int]] = {}
    for i, img in enumerate(imgs):
        groups.setdefault(np.dtype(img.dtype), []).append(i)
    results: list[Any] = [None] * len(imgs)
    S = K.CROP_SLOTS
    fill = np.asarray(op.spec.fill_values, dtype=np.float64).reshape(-1)
    for dtype, members in groups.items():
        shapes = [(wins[i][2], wins[i][3], imgs[i].shape[2]) for i in members]
        outs = ctx.alloc(shapes, dtype)
        P = param_rows(len(members))
        for j, i in enumerate(members):
            img, (y0, x0, h, w) = imgs[i], wins[i]
            C = img.shape[2]
            if fill.size not in (1, C):
                raise PipelineDefinitionError(f"crop: fill_values must have 1 or {C} values, got {fill.size}")
            bits = element_bits(np.broadcast_to(fill, (C,)), dtype)
            P[j, S["SRC"]], P[j, S["SRC_STRIDE"]] = img.data.ptr, img.strides[0] // img.itemsize
            P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = img.shape[0], img.shape[1], C
            P[j, S["DST"]], P[j, S["OH"]], P[j, S["OW"]] = outs[j].data.ptr, h, w
            P[j, S["Y0"]], P[j, S["X0"]] = y0, x0
            for c in range(C):
                P[j, S["FILL"] + c] = np.int64(np.uint64(bits[c]).view(np.int64))
            results[i] = outs[j]
        ctx.launch(f"sf_crop_b{dtype.itemsize}", P, max(s[0] * s[1] * s[2] for s in shapes))
    for (row, was_2d), r in zip(rows, results):
        out[row] = r[:, :, 0] if was_2d else r
    return [out]
