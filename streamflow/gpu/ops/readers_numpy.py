"""``readers.numpy`` with ``device="gpu"``: each sample's region read with kvikio into device memory.

Runs in the gpu stage, on its device and stream: the stage's worker thread
issues the reads (GPUDirect Storage, or kvikio's compat mode) and waits for
them; the region is then gathered on the stage's stream. kvikio writes the
buffers from its own threads, outside any stream order, so the stage's stream
is synchronized first: a buffer the pool hands out again may still be in use
by queued work of the same stream.
"""

from __future__ import annotations

from typing import Any

from ...io import kvikio_backend
from ...operator import Chunk
from ...ops.readers.numpy import COALESCE, NumpyRegionRead
from ..context import GpuContext
from .registry import register

__all__ = ["read_numpy_gpu"]


@register(NumpyRegionRead)
def read_numpy_gpu(op: NumpyRegionRead, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    ctx.synchronize()

    def read(path: str, roi: dict[str, Any]) -> Any:
        return kvikio_backend.read_npy_gpu_sync(
            path, roi=roi, fill_value=op.fill_value, out_of_bounds_policy=op.policy,
            coalesce=dict(COALESCE), stats=op.stats,
        )

    return [op.read_each(chunk, read)]
