"""``paste`` on the GPU: the canvas is a constant-border region of the image (``slice.cu``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.paste import Paste, integer_fill, paste_geometry
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
            if len(op.fill) != 1 and c != len(op.fill):
                raise SampleError(f"paste: the image has {c} channels but fill_value has {len(op.fill)} values "
                                  f"(n_channels={op.n_channels}); give one fill value or one per channel")
            values = {k: float(np.asarray(chunk.arg(k, row, getattr(op, k))).reshape(-1)[0])
                      for k in ("ratio", "paste_x", "paste_y", "min_canvas_size")}
            if not values["ratio"] >= 1:
                raise SampleError(f"paste: ratio must be >= 1, got {values['ratio']}")
            if not (0 <= values["paste_x"] <= 1 and 0 <= values["paste_y"] <= 1):
                raise SampleError("paste: paste_x and paste_y must be in [0, 1]")
            ch, cw, y0, x0 = paste_geometry(h, w, values["ratio"], values["paste_y"], values["paste_x"],
                                            values["min_canvas_size"])
            fill = integer_fill(op.fill, np.dtype(image.dtype)).reshape(-1)
            jobs.append(plan_region(ctx, image, (-y0, -x0, 0), (ch - y0, cw - x0, c), "constant", fill, 2))
            rows.append(row)
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
    for row, result in zip(rows, launch_regions(ctx, jobs)):
        out[row] = result
    return [out]
