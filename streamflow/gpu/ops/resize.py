"""``resize`` on the GPU: two resampling passes per batch (one launch each).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.resize import Resize
from .. import kernels as K
from ..context import GpuContext, as_hwc
from ..resample import ResamplePlan, queue_first_pass
from .registry import register

__all__ = ["resize_gpu"]


@register(Resize)
def resize_gpu(op: Resize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    cp = ctx.cp
    out: list[Any] = [None] * len(chunk)
    plans, rows, dtypes = [], [], []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = as_hwc(cp, image)
            size, roi = op.plan_sample(chunk, row, img.shape[0], img.shape[1])
            plans.append(ResamplePlan(img, size, roi, (0, 0, size[0], size[1]), op.spec.interp, op.spec.antialias))
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        rows.append((row, image.ndim == 2))
        dtypes.append(np.dtype(op.spec.dtype or image.dtype))
    if not plans:
        return [out]
    out_dtype = dtypes[0] if all(d == dtypes[0] for d in dtypes) else np.dtype(np.float32)
    P2, tmps, _ = queue_first_pass(ctx, plans)
    shapes = [(p.window[2], p.window[3], p.C) for p in plans]
    results = ctx.alloc(shapes, out_dtype)
    S = K.RESAMPLE_SLOTS
    for i, r in enumerate(results):
        P2[i, S["DST"]], P2[i, S["DST_STRIDE"]] = r.data.ptr, r.shape[1] * r.shape[2]
    kind = "u8" if out_dtype == np.uint8 else "f32"
    ctx.launch(f"sf_resample_f32_{kind}", P2, max(s[0] * s[1] for s in shapes))
    for (row, was_2d), r in zip(rows, results):
        out[row] = r[:, :, 0] if was_2d else r
    return [out]
