"""GPU reads of ``.npy`` files (or regions of them): kvikio (GPUDirect Storage) into CuPy.

kvikio cannot read at all without the CUDA driver (``libcuda``), compat mode
included; the CPU path (``io/npy.py``) needs no GPU.

How a read goes (``read_npy_gpu_sync``, in the calling thread, with the
device and stream it is given current):

1. The header is read on the host with ``os.pread`` (a few hundred bytes).
2. The region's byte ranges are widened to 4 KiB boundaries (GDS reads
   aligned blocks directly) and merged where they touch (``npy_plan``).
3. One ``cupy.empty`` buffer receives them: ``CuFile.pread`` per range, all
   issued at once; each returns an ``IOFuture`` that is waited for with
   ``get()`` (``wait_all``: every future is waited for exactly once, even when
   one fails, so the file is never closed under a pending read and a consumed
   future is never touched again: after ``get()`` kvikio's future is invalid).
4. The region is gathered on the GPU (strided windows + one gather, byte
   swap for big-endian files, transpose for Fortran order, pad).

kvikio writes the buffer from its own threads, outside any CUDA stream order;
the caller makes sure nothing queued still uses memory the pool hands out
(the GPU stage synchronizes its stream first). ``read_npy_gpu`` (for
``io.read_npy(device="gpu")``) runs the same read on an executor thread on a
stream of its own and returns the finished array. This is the only module of
streamflow that imports kvikio.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

from streamflow.errors import MissingDependencyError, ReadError
from streamflow.types import OutOfBoundsPolicy

from .npy_plan import ReadStats, assemble_region, count_read, open_file, prepare_read
from .roi import GDS_ALIGNMENT

__all__ = ["read_npy_gpu", "read_npy_gpu_sync", "wait_all"]


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


def wait_all(futures: Sequence[Any]) -> list[int]:
    """``get()`` every kvikio ``IOFuture`` exactly once; the first failure is raised after all are waited for.

    Returns:
        The byte count of each read.
    """
    counts: list[int] = []
    first_error: BaseException | None = None
    for fut in futures:
        try:
            counts.append(int(fut.get()))
        except BaseException as err:  # keep waiting: the file must outlive every read
            counts.append(-1)
            if first_error is None:
                first_error = err
    if first_error is not None:
        raise first_error
    return counts


def _check_read_sizes(reads: Sequence[tuple[int, int, int]], counts: Sequence[int], path: str) -> None:
    """Every planned read must return all its bytes (a file can shrink meanwhile)."""
    for (off, length, _), got in zip(reads, counts):
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
    stats: ReadStats | None,
) -> Any:
    """Read (a region of) a ``.npy`` file into a C-order, native-endian ``cupy.ndarray`` (blocking).

    Runs on the calling thread's current device and stream (a GPU stage's, in
    a pipeline); the result is queued on that stream.
    """
    cupy, kvikio = _import()
    fd, st = open_file(path)
    try:
        prep = prepare_read(fd, st, path, roi, out_of_bounds_policy, GDS_ALIGNMENT, coalesce, stats)
    finally:
        os.close(fd)
    plan = prep.plan
    count_read(stats, useful_bytes=plan.useful_bytes)
    buf = cupy.empty(plan.buffer_size, dtype=cupy.uint8)
    if plan.reads:
        try:
            f = kvikio.CuFile(path, "r")
        except (OSError, RuntimeError) as err:
            raise ReadError(f"kvikio cannot open the file: {err}", path) from None
        try:
            futures = [f.pread(buf[pos : pos + length], length, off) for off, length, pos in plan.reads]
            counts = wait_all(futures)
        finally:
            f.close()
        _check_read_sizes(plan.reads, counts, path)
        count_read(stats, reads=len(plan.reads), bytes_read=plan.buffer_size)
    return assemble_region(cupy, buf, prep, fill_value)


def _read_on_own_stream(device_id: int, **kw: Any) -> Any:
    cupy, _ = _import()
    with cupy.cuda.Device(device_id):
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            out = read_npy_gpu_sync(**kw)
        stream.synchronize()  # the caller gets a finished array, usable from any stream
    return out


async def read_npy_gpu(
    path: str,
    *,
    roi: Any,
    fill_value: Any,
    out_of_bounds_policy: OutOfBoundsPolicy,
    executor: Executor | None,
    coalesce: dict[str, Any],
    stats: ReadStats | None,
    device_id: int = 0,
) -> Any:
    """``read_npy_gpu_sync`` on an executor thread, on GPU ``device_id`` and a stream of its own.

    Cancelling the awaiting task does not cut the read short: the thread
    finishes it (waiting for every kvikio future) and the result is dropped.
    """
    loop = asyncio.get_running_loop()

    def run() -> Any:
        return _read_on_own_stream(
            device_id, path=path, roi=roi, fill_value=fill_value, out_of_bounds_policy=out_of_bounds_policy,
            coalesce=coalesce, stats=stats,
        )

    return await loop.run_in_executor(executor, run)
