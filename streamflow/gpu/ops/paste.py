"""``paste`` on the GPU: the canvas is a constant-border region of the image (``slice.cu``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.paste import Paste, integer_fill
from ..context import GpuContext
from .registry import register
from .slice import launch_regions, plan_region

__all__ = ["paste_gpu"]


@register(Paste)
def paste_gpu(op: Paste, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    out: list[Any] = [None] * len(chunk)
    rows, jobs = [], []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            if not ctx.is_array(image) or image.ndim != 3 or image.dtype.kind not in "uif":
                raise SampleError(f"paste: expects numeric HWC images, got {getattr(image, 'shape', None)}")
            h, w, c = (int(v) for v in image.shape)
            ch, cw, y0, x0 = op.canvas(chunk, row, (h, w, c))
            fill = integer_fill(op.fill, np.dtype(image.dtype)).reshape(-1)
            jobs.append(plan_region(ctx, image, (-y0, -x0, 0), (ch - y0, cw - x0, c), "constant", fill, 2))
            rows.append(row)
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
    for row, result in zip(rows, launch_regions(ctx, jobs)):
        out[row] = result
    return [out]
