"""``reinterpret`` on the GPU: a view of the device array (shapes planned on the host, as on the CPU)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.reinterpret import Reinterpret
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["reinterpret_gpu"]


@register(Reinterpret)
def reinterpret_gpu(op: Reinterpret, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    if len(chunk.inputs) > 1:  # the shape input was copied to the device with the data: plan on the host
        chunk.inputs[1] = [None if s is None else ctx.to_host(s) for s in chunk.inputs[1]]

    def one(row: int, x: Any) -> Any:
        arr = xp.asarray(x, order="C")
        shape, dtype = op.target(chunk, row, arr)
        if op.layout(0) and len(shape) != len(op.layout(0)):
            raise SampleError(f"reinterpret: the layout {op.layout(0)!r} does not fit the {len(shape)}-D output "
                              f"shape {list(shape)}; give the output's layout (layout=...)")
        return arr.reshape(-1).view(np.uint8).view(dtype).reshape(shape)

    return [each_sample(chunk, ctx, one)]
