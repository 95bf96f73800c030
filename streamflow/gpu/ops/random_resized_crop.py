"""``random_resized_crop`` on the GPU: the drawn window resampled straight from the source (a ``roi``).

The window is the CPU operator's draw (``RandomResizedCrop.roi_for``: a pure
function of seed, epoch and sample), and the two resampling passes are
``resize``'s kernels with the C planner's taps and weights: bit-identical to
the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.random_resized_crop import RandomResizedCrop
from ..context import GpuContext
from ..resample import OUT_KINDS, ResampleJob, plan_resample, resample_batch
from .registry import register

__all__ = ["random_resized_crop_gpu"]


@register(RandomResizedCrop)
def random_resized_crop_gpu(op: RandomResizedCrop, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    out: list[Any] = [None] * len(chunk)
    jobs: list[ResampleJob] = []
    rows: list[tuple[int, bool]] = []
    dtypes: list[np.dtype] = []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            if not ctx.is_array(image) or image.ndim not in (2, 3):
                raise SampleError(f"{op.name} expects an HWC image, got {getattr(image, 'shape', type(image).__name__)!r}")
            img = ctx.as_hwc(image)
            if np.dtype(img.dtype) not in OUT_KINDS:  # as on the CPU: other types are resampled as float32
                img = img.astype(np.float32)
            roi = op.roi_for(chunk, row, int(img.shape[0]), int(img.shape[1]))
            jobs.append(plan_resample(img, op.size, roi, (0, 0, *op.size), op.interp, op.antialias, op.mag_interp))
        except (SampleError, ValueError) as err:
            chunk.fail(row, err if isinstance(err, SampleError) else SampleError(str(err)))
            continue
        rows.append((row, image.ndim == 2))
        dtypes.append(np.dtype(op.dtype or img.dtype))
    for (row, was_2d), r in zip(rows, resample_batch(ctx, jobs, dtypes)):
        out[row] = r[:, :, 0] if was_2d else r
    return [out]
