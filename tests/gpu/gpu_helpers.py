"""GPU test helpers: run one operator on the GPU and on the CPU reference."""

from __future__ import annotations

from typing import Any

import numpy as np
from helpers import BROKEN_JPEGS, GOOD_JPEGS, make_chunk, odd_images

__all__ = ["BROKEN_JPEGS", "GOOD_JPEGS", "gpu_ctx", "odd_images", "run_both"]

_CTX: list[Any] = []


def gpu_ctx() -> Any:
    """One GpuContext (stream, staging, tables) shared by the operator tests."""
    if not _CTX:
        from streamflow.gpu.context import GpuContext

        _CTX.append(GpuContext(0))
    return _CTX[0]


def run_both(op: Any, images: list[np.ndarray], args: dict[str, list[Any]] | None = None):
    """(gpu outputs as numpy, cpu outputs, gpu failures, cpu failures) of one operator on one batch."""
    import cupy as cp

    from streamflow.gpu.ops import find_impl

    ctx = gpu_ctx()
    cpu_chunk = make_chunk(images, args)
    cpu = op.run(cpu_chunk)[0]
    impl = find_impl(op)
    assert impl is not None, f"no GPU implementation for {op.name}"
    with ctx.stream.device, ctx.stream.stream:
        gpu_chunk = make_chunk([cp.asarray(i) for i in images], args)
        out = impl(op, gpu_chunk, ctx)[0]
    ctx.stream.stream.synchronize()
    gpu = [None if o is None else cp.asnumpy(o) for o in out]
    return gpu, cpu, gpu_chunk.failures, cpu_chunk.failures
