"""``resize`` on the GPU: two resampling passes per batch, bit-identical to the CPU resampler."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.resize import Resize
from .. import kernels as K
from ..context import GpuContext
from ..resample import ResampleJob, plan_resample, queue_first_pass
from .registry import register

__all__ = ["resize_gpu"]

_KIND = {np.dtype(np.uint8): "u8", np.dtype(np.float32): "f32"}


@register(Resize)
def resize_gpu(op: Resize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    out: list[Any] = [None] * len(chunk)
    jobs: list[ResampleJob] = []
    rows: list[tuple[int, bool, np.dtype]] = []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = ctx.as_hwc(image)
            size, roi = op.plan_sample(chunk, row, img.shape[0], img.shape[1])
            job = plan_resample(img, size, roi, (0, 0, size[0], size[1]), op.spec.interp, op.spec.antialias,
                                op.spec.mag_interp)
            out_dtype = np.dtype(op.spec.dtype or img.dtype)
            if out_dtype not in _KIND:
                raise SampleError(f"resize output dtype must be uint8 or float32, got {out_dtype}")
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        jobs.append(job)
        rows.append((row, image.ndim == 2, out_dtype))
    if not jobs:
        return [out]
    P2, keep = queue_first_pass(ctx, jobs)
    S = K.RESAMPLE_SLOTS
    for dtype, kind in _KIND.items():  # one launch of pass 2 per output type
        members = [i for i, (_, _, d) in enumerate(rows) if d == dtype]
        if not members:
            continue
        shapes = [(jobs[i].window[2], jobs[i].window[3], jobs[i].image.shape[2]) for i in members]
        results = ctx.alloc(shapes, dtype)
        P = P2[members]
        for k, r in enumerate(results):
            P[k, S["DST"]], P[k, S["DST_STRIDE"]] = ctx.address(r), r.shape[1] * r.shape[2]
        ctx.launch(f"sf_resample_f32_{kind}", P, max(s[0] for s in shapes))
        for i, r in zip(members, results):
            row, was_2d, _ = rows[i]
            out[row] = r[:, :, 0] if was_2d else r
    del keep  # queued: the stream orders the reuse of these buffers
    return [out]
