"""``resize`` on the GPU: two resampling passes per batch, bit-identical to the CPU resampler."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.resize import Resize
from ..context import GpuContext
from ..resample import OUT_KINDS, ResampleJob, plan_resample, resample_batch
from .registry import register

__all__ = ["resize_gpu"]


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
            if out_dtype not in OUT_KINDS:
                raise SampleError(f"resize output dtype must be uint8 or float32, got {out_dtype}")
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        jobs.append(job)
        rows.append((row, image.ndim == 2, out_dtype))
    for (row, was_2d, _), r in zip(rows, resample_batch(ctx, jobs, [d for _, _, d in rows])):
        out[row] = r[:, :, 0] if was_2d else r
    return [out]
