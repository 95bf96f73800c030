"""GPU path of :func:`streamflow.io.read_npy`: kvikio (GPUDirect Storage) into CuPy.

UNTESTED HERE: the machines this was written on have no GPU, and kvikio
cannot read at all without ``libcuda`` (see shared/GPU-NOTES.md). The I/O
calls follow kvikio's documented API; the planning and the gather are the
same code the tested CPU path uses (:func:`streamflow.io.roi.plan_reads`
and ``npy._assemble`` with ``xp=cupy``).

How it reads:

1. The header is read on the host with ``os.pread`` (a few hundred bytes).
2. The region's byte ranges are widened to 4 KiB boundaries (GDS reads
   aligned blocks directly) and merged where they touch.
3. One ``cupy.empty`` buffer receives them: ``CuFile.pread(buf[pos:pos+n],
   n, file_offset)`` per range, all issued at once; each returns an
   ``IOFuture`` (not awaitable), awaited with
   ``loop.run_in_executor(None, future.get)`` so the event loop never blocks.
4. The region is gathered on the GPU (strided windows + one gather,
   byte swap if the file is big-endian, transpose for Fortran order, pad).

This is the only module of streamflow that imports kvikio or cupy, and only
when a GPU read is asked for.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import Executor
from typing import Any

from streamflow.errors import MissingDependencyError, ReadError
from streamflow.types import OutOfBoundsPolicy

from .roi import GDS_ALIGNMENT

__all__ = ["read_npy_gpu", "read_npy_gpu_sync"]


def _import() -> tuple[Any, Any]:
    try:
        import cupy
    except ImportError as e:
        raise MissingDependencyError("cupy", "gpu", "reading .npy files to the GPU") from e
    try:
        import kvikio
    except ImportError as e:
        raise MissingDependencyError("kvikio", "gpu", "reading .npy files to the GPU") from e
    return cupy, kvikio


async def read_npy_gpu(
    path: str,
    *,
    roi: Any,
    fill_value: Any,
    out_of_bounds_policy: OutOfBoundsPolicy,
    executor: Executor | None,
    coalesce: dict[str, Any],
    stats: Any,
) -> Any:
    """Read (a region of) a ``.npy`` file into a C-order, native-endian ``cupy.ndarray``."""
    from . import npy  # circular at import time only

    cupy, kvikio = _import()
    loop = asyncio.get_running_loop()

    def prepare() -> npy._Prepared:
        fd, st = npy._open(path)
        try:
            return npy._prepare(
                fd, st, path, roi, out_of_bounds_policy, GDS_ALIGNMENT, coalesce, stats
            )
        finally:
            os.close(fd)

    prep = await loop.run_in_executor(executor, prepare)
    plan = prep.plan
    npy._stats_add(stats, useful_bytes=plan.useful_bytes)
    buf = cupy.empty(plan.buffer_size, dtype=cupy.uint8)
    if plan.reads:
        f = kvikio.CuFile(path, "r")
        futures = []
        try:
            for off, length, pos in plan.reads:
                futures.append(f.pread(buf[pos : pos + length], length, off))
            counts = await asyncio.gather(*(loop.run_in_executor(None, fut.get) for fut in futures))
        finally:
            # never close the file under a pending read (e.g. when cancelled)
            for fut in futures:
                if not fut.done():
                    await loop.run_in_executor(None, fut.get)
            f.close()
        _check_read_sizes(plan, counts, path)
        npy._stats_add(stats, reads=len(plan.reads), bytes_read=plan.buffer_size)
    return npy._assemble(cupy, buf, prep, fill_value)


def _check_read_sizes(plan: Any, counts: list[int], path: str) -> None:
    """Every planned read must return all its bytes (a file can shrink meanwhile)."""
    for (off, length, _), got in zip(plan.reads, counts):
        if got != length:
            raise ReadError(
                f"short GPU read at byte {off}: got {got} of {length} bytes "
                "(file truncated while reading?)",
                path,
            )


def read_npy_gpu_sync(
    path: str,
    *,
    roi: Any,
    fill_value: Any,
    out_of_bounds_policy: OutOfBoundsPolicy,
    coalesce: dict[str, Any],
    stats: Any,
) -> Any:
    """Blocking twin of :func:`read_npy_gpu`, for operator worker threads.

    Used by ``fn.readers.numpy(device="gpu")`` with per-sample ROI arguments,
    whose reads run inside ``Operator.run`` on a worker thread (no event loop
    there): the ``IOFuture``s are waited for with ``get()`` directly.
    UNTESTED HERE (no GPU), like the rest of this module.
    """
    from . import npy  # circular at import time only

    cupy, kvikio = _import()
    fd, st = npy._open(path)
    try:
        prep = npy._prepare(fd, st, path, roi, out_of_bounds_policy, GDS_ALIGNMENT, coalesce, stats)
    finally:
        os.close(fd)
    plan = prep.plan
    npy._stats_add(stats, useful_bytes=plan.useful_bytes)
    buf = cupy.empty(plan.buffer_size, dtype=cupy.uint8)
    if plan.reads:
        f = kvikio.CuFile(path, "r")
        futures = []
        try:
            for off, length, pos in plan.reads:
                futures.append(f.pread(buf[pos : pos + length], length, off))
            counts = [fut.get() for fut in futures]
        finally:
            for fut in futures:  # never close the file under a pending read
                if not fut.done():
                    fut.get()
            f.close()
        _check_read_sizes(plan, counts, path)
        npy._stats_add(stats, reads=len(plan.reads), bytes_read=plan.buffer_size)
    return npy._assemble(cupy, buf, prep, fill_value)
