"""The fused ``resize`` + ``crop_mirror_normalize`` on the GPU: pass 1, then pass 2 with the normalize epilogue."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.resize_crop_mirror_normalize import ResizeCropMirrorNormalize
from .. import kernels as K
from ..context import GpuContext
from ..resample import plan_resample, queue_first_pass
from .crop_mirror_normalize import CMN_KIND, cmn_outputs, cmn_row
from .registry import register

__all__ = ["resize_crop_mirror_normalize_gpu"]


@register(ResizeCropMirrorNormalize)
def resize_crop_mirror_normalize_gpu(op: ResizeCropMirrorNormalize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    resize_chunk, cmn_chunk = op.split_chunk(chunk)
    cmn = op.cmn
    out: list[Any] = [None] * len(chunk)
    rows, jobs, tables, P_rows, shapes = [], [], [], [], []
    S = K.CMN_SLOTS
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = ctx.as_hwc(image)
            H, W, C = (int(v) for v in img.shape)
            size, roi = op.resize.plan_sample(resize_chunk, row, H, W)
            resize_dtype = np.dtype(op.resize.spec.dtype or img.dtype)
            if resize_dtype not in (np.dtype(np.uint8), np.dtype(np.float32)):
                raise SampleError(f"resize output dtype must be uint8 or float32, got {resize_dtype}")
            window = cmn.window_for(cmn_chunk, row, size[0], size[1]) or (0, 0, size[0], size[1])
            y0, x0, h, w = window
            # only the part of the crop window inside the resized image is resampled
            ry0, rx0 = max(y0, 0), max(x0, 0)
            rh, rw = max(0, min(y0 + h, size[0]) - ry0), max(0, min(x0 + w, size[1]) - rx0)
            if rh == 0 or rw == 0:  # nothing to resample: one pixel planned, never read
                ry0 = rx0 = 0
                region = (0, 0, 1, 1)
            else:
                region = (ry0, rx0, rh, rw)
            spec = op.resize.spec
            job = plan_resample(img, size, roi, region, spec.interp, spec.antialias, spec.mag_interp)
            P, table, shape = cmn_row(cmn, cmn_chunk, row, C, window)
            P[S["RY0"]], P[S["RX0"]], P[S["RH"]], P[S["RW"]] = ry0, rx0, rh, rw
            P[S["ROUND_U8"]] = int(resize_dtype == np.uint8)
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        rows.append(row)
        shapes.append(shape)
        jobs.append(job)
        tables.append(table)
        P_rows.append(P)
    if not rows:
        return [out]
    P2, keep = queue_first_pass(ctx, jobs)
    staged, addresses = ctx.stage(tables)
    P = np.stack(P_rows)
    geometry = [v for k, v in K.RESAMPLE_SLOTS.items() if k not in ("DST", "DST_STRIDE")]
    P[:, geometry] = P2[:, geometry]
    P[:, S["CHAN"]] = addresses
    results = cmn_outputs(ctx, cmn, shapes, P)
    ctx.launch(f"sf_resample_cmn_{CMN_KIND[np.dtype(cmn.out_dtype)]}", P, max(h for _, h, _ in shapes))
    del keep, staged
    for row, r in zip(rows, results):
        out[row] = r
    return [out]
