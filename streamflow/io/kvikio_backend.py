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
   ``get()`` (``read_ranges``: every issued future is waited for exactly once,
   even when one fails or issuing the next one fails, and only then is the
   file closed; a consumed future is never touched again, since after
   ``get()`` kvikio's future is invalid and even ``done()`` raises).
4. The region is gathered on the GPU (strided windows + one gather, byte
   swap for big-endian files, transpose for Fortran order, pad).

kvikio writes the buffer from its own threads, outside any CUDA stream order;
the caller makes sure nothing queued still uses memory the pool hands out
(the GPU stage synchronizes its stream first). ``read_npy_gpu`` (for
``io.read_npy(device="gpu")``) runs the same read on an executor thread on a
stream of its own and returns the finished array; if the awaiting task is
cancelled it still waits for that thread (kvikio reads cannot be stopped),
so no read is left writing into device memory, then re-raises. This is the
only module of streamflow that imports kvikio.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

from streamflow.errors import MissingDependencyError, ReadError
from streamflow.types import OutOfBoundsPolicy

from .npy_plan import ReadStats, assemble_region, count_read, open_file, prepare_read
from .roi import GDS_ALIGNMENT

__all__ = ["read_npy_gpu", "read_npy_gpu_sync", "read_ranges", "wait_all"]


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


def wait_all(futures: Sequence[Any], counts: list[int] | None = None) -> list[int]:
    """Wait (``get()``) for every kvikio ``IOFuture`` not waited for yet, each exactly once.

    A failed read does not stop the waiting: the file must outlive every
    read, so the first failure is raised only after all have been waited for.

    Args:
        futures: the ``IOFuture``s, in the order they were issued.
        counts: the byte counts of the futures already waited for, which are
            ``futures[:len(counts)]`` (extended in place as each one is
            waited for, ``-1`` for a failed read); ``None`` when none was.

    Returns:
        The byte count of each read (``counts``, completed).

    Raises:
        BaseException: the first error a ``get()`` of this call raised.
    """
    done = [] if counts is None else counts
    first_error: BaseException | None = None
    while len(done) < len(futures):
        fut = futures[len(done)]
        try:
            got = fut.get()
        except BaseException as err:  # the future is consumed even when its read failed
            done.append(-1)
            if first_error is None:
                first_error = err
        else:
            done.append(int(got))
    if first_error is not None:
        raise first_error
    return done


def read_ranges(kvikio: Any, path: str, buf: Any, reads: Sequence[tuple[int, int, int]]) -> list[int]:
    """Read ``(file_offset, length, buffer_position)`` ranges of ``path`` into ``buf`` with kvikio.

    Every read is issued at once; the file is closed only after every issued
    read has been waited for, whatever fails (a read, issuing a read, or an
    interrupt while waiting), and no future is waited for twice.

    Args:
        kvikio: the kvikio module (a seam for tests).
        path: the file.
        buf: the device buffer; ``buf[pos : pos + length]`` receives each range.
        reads: the planned ranges.

    Returns:
        The byte count of each read, in order (not checked against the lengths).

    Raises:
        ReadError: kvikio cannot open the file.
    """
    try:
        f = kvikio.CuFile(path, "r")
    except (OSError, RuntimeError) as err:
        raise ReadError(f"kvikio cannot open the file: {err}", path) from None
    futures: list[Any] = []
    counts: list[int] = []  # counts[i]: futures[i] was waited for (consumed)
    try:
        for off, length, pos in reads:
            futures.append(f.pread(buf[pos : pos + length], length, off))
        return wait_all(futures, counts)
    finally:
        # Reached with reads still pending only when something failed before or
        # during the waiting: wait for those (only those) before closing; the
        # error already on its way out is the one to report.
        try:
            if len(counts) < len(futures):
                with contextlib.suppress(Exception):
                    wait_all(futures, counts)
        finally:
            f.close()


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
        counts = read_ranges(kvikio, path, buf, plan.reads)
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

    kvikio reads cannot be stopped, so cancelling the awaiting task does not
    cut the read short: the task waits until the thread has waited for every
    issued read and closed the file (the result is dropped), then re-raises
    ``CancelledError``. A read the executor had not started yet is skipped.
    """
    loop = asyncio.get_running_loop()
    cancelled = threading.Event()

    def run() -> Any:
        if cancelled.is_set():  # cancelled while queued: read nothing
            return None
        return _read_on_own_stream(
            device_id, path=path, roi=roi, fill_value=fill_value, out_of_bounds_policy=out_of_bounds_policy,
            coalesce=coalesce, stats=stats,
        )

    work = loop.run_in_executor(executor, run)
    try:
        # shield: cancelling the caller must not detach it from the thread's reads
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        cancelled.set()
        while not work.done():
            with contextlib.suppress(asyncio.CancelledError):  # cancelled again: still wait
                await asyncio.wait((work,))
        if not work.cancelled():
            work.exception()  # retrieved: the caller asked for cancellation, not for this error
        raise
