"""The fused ``resize`` + ``crop_mirror_normalize`` on the GPU: pass 1, then pass 2 with the normalize epilogue.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.resize_crop_mirror_normalize import ResizeCropMirrorNormalize
from .. import kernels as K
from ..context import GpuContext, as_hwc
from ..resample import ResamplePlan, queue_first_pass
from .crop_mirror_normalize import CMN_KIND, cmn_outputs, cmn_params
from .registry import register

__all__ = ["resize_crop_mirror_normalize_gpu"]


@register(ResizeCropMirrorNormalize)
def resize_crop_mirror_normalize_gpu(op: ResizeCropMirrorNormalize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    """Resize + crop + mirror + normalize + layout: pass 1, then pass 2 with the CMN epilogue."""
    cp = ctx.cp
    resize_chunk, cmn_chunk = op.split_chunk(chunk)
    cmn = op.cmn
    out: list[Any] = [None] * len(chunk)
    rows, plans, P_rows, shapes = [], [], [], []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = as_hwc(cp, image)
            H, W, C = (int(v) for v in img.shape)
            size, roi = op.resize.plan_sample(resize_chunk, row, H, W)
            window = cmn.window_for(cmn_chunk, row, size[0], size[1]) or (0, 0, size[0], size[1])
            y0, x0, h, w = window
            # the part of the window inside the resized image is what gets resampled
            ry0, rx0 = max(y0, 0), max(x0, 0)
            ry1, rx1 = min(y0 + h, size[0]), min(x0 + w, size[1])
            rh, rw = max(0, ry1 - ry0), max(0, rx1 - rx0)
            if rh == 0 or rw == 0:
                ry0 = rx0 = rh = rw = 0
            plan = ResamplePlan(img, size, roi, (ry0, rx0, rh, rw), op.resize.spec.interp, op.resize.spec.antialias)
            P = np.zeros(K.NP, dtype=np.int64)
            shapes.append(cmn_params(cmn, cmn_chunk, row, C, P, window))
            S = K.CMN_SLOTS
            P[S["RY0"]], P[S["RX0"]], P[S["RH"]], P[S["RW"]] = ry0, rx0, rh, rw
            P[S["ROUND_U8"]] = int(np.dtype(op.resize.spec.dtype or img.dtype) == np.uint8)
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        rows.append(row)
        plans.append(plan)
        P_rows.append(P)
    if not rows:
        return [out]
    P2, tmps, _ = queue_first_pass(ctx, plans)
    P = np.stack(P_rows)
    # pass-2 geometry from the resampling plan, CMN slots from P
    geometry = [v for k, v in K.RESAMPLE_SLOTS.items() if k not in ("DST", "DST_STRIDE")]
    P[:, geometry] = P2[:, geometry]
    results = cmn_outputs(ctx, cmn, shapes, P)
    ctx.launch(f"sf_resample_cmn_{CMN_KIND[np.dtype(cmn.out_dtype)]}", P, max(h * w for _, h, w in shapes))
    for row, r in zip(rows, results):
        out[row] = r
    return [out]
