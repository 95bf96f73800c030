"""Read ``.npy`` files, or regions of them, with a few positioned reads.

CPU path: ``os.pread``/``os.preadv`` of the coalesced byte ranges of the
region (see :mod:`streamflow.io.roi`) into one host buffer, then one
vectorized gather into the output; a small region of a big file reads
little more than the region. Never ``np.load``, never pickle.

GPU path (``device="gpu"``): :mod:`streamflow.io.kvikio_backend`.

The result has the logical shape of the region (Fortran-order files come
back as the same values as ``np.load(path)[region]``), in native byte order
(a big-endian file gives a native-endian array of the same values).
"""

from __future__ import annotations

import asyncio
import ctypes
import mmap
import os
from concurrent.futures import Executor
from typing import Any, Literal

import numpy as np

from streamflow.errors import PipelineDefinitionError, ReadError
from streamflow.types import Device, OutOfBoundsPolicy, parse_device

from . import kvikio_backend
from .npy_header import NpyHeader
from .npy_plan import (
    PreparedRead,
    ReadStats,
    assemble_region,
    convert_fill,
    count_read,
    open_file,
    pread_into,
    read_header,
    read_stats,
)
from .roi import (
    DEFAULT_MAX_GAP,
    DEFAULT_MAX_READS,
    DEFAULT_MAX_WASTE,
    Roi,
    parse_out_of_bounds_policy,
    plan_reads,
    roi_from_argument,
)

__all__ = [
    "ReadStats",
    "read_npy",
    "read_npy_header",
    "read_npy_sync",
    "read_stats",
]

#: Reads bigger than this are split so several threads can read at once.
_CHUNK = 8 * 1024 * 1024


# --------------------------------------------------------------------------
# low-level reads


def read_npy_header(path: str | os.PathLike[str]) -> NpyHeader:
    """Read and validate only the header of a ``.npy`` file."""
    path = os.fspath(path)
    fd, st = open_file(path)
    try:
        return read_header(fd, st.st_size, path, None)
    finally:
        os.close(fd)


def _split_reads(
    reads: tuple[tuple[int, int, int], ...], groups: int
) -> list[list[tuple[int, int, int]]]:
    """Cut reads into pieces of at most _CHUNK bytes, dealt into balanced groups."""
    pieces: list[tuple[int, int, int]] = []
    for off, length, pos in reads:
        for s in range(0, length, _CHUNK):
            n = min(_CHUNK, length - s)
            pieces.append((off + s, n, pos + s))
    total = sum(p[1] for p in pieces)
    groups = max(1, min(groups, len(pieces)))
    out: list[list[tuple[int, int, int]]] = [[] for _ in range(groups)]
    acc = 0
    for p in pieces:  # contiguous, balanced by bytes
        g = min(groups - 1, acc * groups // max(total, 1))
        out[g].append(p)
        acc += p[1]
    return [g for g in out if g]


def _read_pieces(
    fd: int,
    buf: np.ndarray,
    pieces: list[tuple[int, int, int]],
    path: str,
    stats: ReadStats | None,
) -> None:
    mv = buf.data.cast("B")
    calls = 0
    nbytes = 0
    for off, length, pos in pieces:
        calls += pread_into(fd, mv[pos : pos + length], off, path)
        nbytes += length
    count_read(stats, reads=calls, bytes_read=nbytes)


def _read_pieces_own_fd(
    prep: PreparedRead,
    buf: np.ndarray,
    pieces: list[tuple[int, int, int]],
    stats: ReadStats | None,
) -> None:
    fd, st = open_file(prep.path)
    try:
        old = prep.stat
        if (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns) != (
            old.st_ino,
            old.st_dev,
            old.st_size,
            old.st_mtime_ns,
        ):
            raise ReadError("the file changed while it was being read", prep.path)
        _read_pieces(fd, buf, pieces, prep.path, stats)
    finally:
        os.close(fd)


# A region that needs more separate reads than this, and whose pages are all
# in the page cache, is copied out of a memory map instead: thousands of small
# preads cost a system call each, while a mapping of cached pages is read at
# memory speed (about 10x faster for a 1% cube of a warm 256 MiB array). Cold
# regions keep the coalesced preads, which fetch less from storage than the
# page faults of a mapping (measured: 13x vs 25x the region for a 1% cube).
MMAP_MIN_READS = 64
_PAGE = mmap.PAGESIZE
try:
    _mincore: Any = ctypes.CDLL(None, use_errno=True).mincore
    _mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    _mincore.restype = ctypes.c_int
except (OSError, AttributeError):  # not Linux/BSD: always use preads
    _mincore = None


#: Pages checked to decide whether a region is cached: a whole-span check of a
#: cube costs a page-cache lookup per page of the span (0.8 ms for a 1% cube
#: of a 256 MiB array, more than the copy), a spread sample of 16 ~60 us.
RESIDENCY_SAMPLES = 16


def _sample_pages(header: NpyHeader, inside: tuple[tuple[int, int], ...], order: Literal["C", "F"]) -> np.ndarray:
    """File offsets of the pages holding up to RESIDENCY_SAMPLES elements spread evenly over the region
    (its first and last element included)."""
    extents = [hi - lo for lo, hi in inside]
    n = int(np.prod(extents, dtype=np.int64))
    picks = np.unique(np.linspace(0, n - 1, num=min(n, RESIDENCY_SAMPLES)).astype(np.int64))
    coords = [c + lo for c, (lo, _) in zip(np.unravel_index(picks, extents), inside)]
    elements = np.ravel_multi_index(coords, header.shape, order=order)
    offsets = header.data_offset + elements.astype(np.int64) * header.dtype.itemsize
    return np.unique(offsets // _PAGE * _PAGE)


def _resident(mapped: mmap.mmap, pages: np.ndarray) -> bool:
    """Whether every page of the mapping starting at ``pages`` (file offsets) is in the page cache.

    A sample of the region's pages stands for all of them: a region that is
    only partly cached is then copied out of the map, and the page faults
    fetch the rest (slower than preads, still correct)."""
    if _mincore is None or len(pages) == 0:
        return False
    view = np.frombuffer(mapped, dtype=np.uint8)
    base = view.ctypes.data
    status = (ctypes.c_ubyte * 1)()
    try:
        for page in pages.tolist():
            if _mincore(base + page, 1, status) != 0 or not status[0] & 1:
                return False
        return True
    finally:
        del view


def _fragmented(header: NpyHeader, inside: tuple[tuple[int, int], ...]) -> bool:
    """Whether the region is stored as more than MMAP_MIN_READS separate runs."""
    extents = [hi - lo for lo, hi in inside]
    full = list(header.shape)
    if header.fortran_order:  # storage order is the reverse
        extents, full = extents[::-1], full[::-1]
    axis = len(full) - 1
    while axis >= 0 and extents[axis] == full[axis]:  # trailing whole axes join runs
        axis -= 1
    return axis > 0 and int(np.prod(extents[:axis], dtype=np.int64)) > MMAP_MIN_READS


def _read_mapped(fd: int, header: NpyHeader, roi: Roi, fill_value: Any, stats: ReadStats | None) -> np.ndarray | None:
    """The region copied from a memory map of the file, or None when its pages are not all cached."""
    native = header.dtype.newbyteorder("=")
    inside = roi.inside(header.shape)
    order: Literal["C", "F"] = "F" if header.fortran_order else "C"
    count = int(np.prod(header.shape, dtype=np.int64))
    mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    try:
        if not _resident(mapped, _sample_pages(header, inside, order)):
            return None
        flat = np.frombuffer(mapped, dtype=header.dtype, count=count, offset=header.data_offset)
        window = tuple(slice(lo, hi) for lo, hi in inside)
        data = np.array(flat.reshape(header.shape, order=order)[window], dtype=native, order="C")
        del flat  # no view may outlive the mapping
    finally:
        mapped.close()
    # Only the region's bytes are copied, from cached pages: nothing comes from storage.
    count_read(stats, reads=1, bytes_read=data.nbytes, useful_bytes=data.nbytes)
    if not roi.needs_padding(header.shape):
        return data
    out = np.full(roi.shape, convert_fill(fill_value, header.dtype), dtype=native)
    out[roi.placement(header.shape)] = data
    return out


def _coalesce_args(max_gap: int, max_waste: float, max_reads: int) -> dict[str, Any]:
    if max_gap < 0 or max_waste < 0 or max_reads < 1:
        raise PipelineDefinitionError(
            "max_gap and max_waste must be >= 0 and max_reads >= 1, got "
            f"{max_gap}, {max_waste}, {max_reads}"
        )
    return {"max_gap": int(max_gap), "max_waste": float(max_waste), "max_reads": int(max_reads)}


def _cpu_all(
    path: str,
    roi: Any,
    policy: OutOfBoundsPolicy,
    fill_value: Any,
    coalesce: dict[str, Any],
    stats: ReadStats | None,
    split: int,
) -> tuple[np.ndarray | None, PreparedRead | None, np.ndarray | None, list]:
    """Open, parse, plan, read; assemble unless the reads should be split.

    Returns ``(result, prep, None, [])`` when done, or ``(None, prep, buf,
    groups)`` when the caller should read ``groups`` concurrently.
    """
    fd, st = open_file(path)
    try:
        header = read_header(fd, st.st_size, path, stats)
        box = roi_from_argument(roi, header.shape, out_of_bounds_policy=policy, source=path)
        inside = box.inside(header.shape)
        if all(hi > lo for lo, hi in inside) and _fragmented(header, inside):
            mapped = _read_mapped(fd, header, box, fill_value, stats)
            if mapped is not None:
                return mapped, None, None, []
        plan = plan_reads(header, box, alignment=1, file_size=st.st_size, **coalesce)
        prep = PreparedRead(path, st, header, box, plan)
        count_read(stats, useful_bytes=plan.useful_bytes)
        buf = np.empty(prep.plan.buffer_size, dtype=np.uint8)
        big = prep.plan.buffer_size >= 2 * _CHUNK
        groups = _split_reads(prep.plan.reads, split) if split > 1 and big else []
        if len(groups) > 1:
            return None, prep, buf, groups
        _read_pieces(fd, buf, [(o, n, p) for o, n, p in prep.plan.reads], path, stats)
    finally:
        os.close(fd)
    return assemble_region(np, buf, prep, fill_value), prep, None, []


# --------------------------------------------------------------------------
# public API


def read_npy_sync(
    path: str | os.PathLike[str],
    *,
    roi: Any = None,
    fill_value: Any = 0,
    out_of_bounds_policy: str | OutOfBoundsPolicy = OutOfBoundsPolicy.ERROR,
    max_gap: int = DEFAULT_MAX_GAP,
    max_waste: float = DEFAULT_MAX_WASTE,
    max_reads: int = DEFAULT_MAX_READS,
    stats: ReadStats | None = None,
) -> np.ndarray:
    """Read a ``.npy`` file, or a region of it, into a numpy array (blocking; CPU only).

    Arguments as :func:`read_npy`.
    """
    path = os.fspath(path)
    policy = parse_out_of_bounds_policy(out_of_bounds_policy)
    coalesce = _coalesce_args(max_gap, max_waste, max_reads)
    result, _, _, _ = _cpu_all(path, roi, policy, fill_value, coalesce, stats, 1)
    assert result is not None
    return result


async def read_npy(
    path: str | os.PathLike[str],
    *,
    roi: Any = None,
    fill_value: Any = 0,
    device: str | Device = "cpu",
    device_id: int = 0,
    out_of_bounds_policy: str | OutOfBoundsPolicy = OutOfBoundsPolicy.ERROR,
    executor: Executor | None = None,
    max_concurrency: int = 4,
    max_gap: int = DEFAULT_MAX_GAP,
    max_waste: float = DEFAULT_MAX_WASTE,
    max_reads: int = DEFAULT_MAX_READS,
    stats: ReadStats | None = None,
) -> Any:
    """Read a ``.npy`` file, or a region of it, without blocking the event loop.

    Args:
        path: the ``.npy`` file.
        roi: ``None`` (the whole array); a dict of DALI ROI arguments
            (``roi_start``, ``rel_roi_start``, ``roi_end``, ``rel_roi_end``,
            ``roi_shape``, ``rel_roi_shape``, ``roi_axes``; see
            :func:`streamflow.io.roi.resolve_roi`); or a tuple of slices
            (literal half-open coordinates, no negative wrap-around, step 1).
        fill_value: value of the elements outside the array under ``pad``
            (rounded and saturated to the dtype, as DALI does).
        device: ``"cpu"`` (numpy result) or ``"gpu"`` (cupy result, read
            with kvikio/GPUDirect Storage on an executor thread, on a stream
            of its own; the array is finished when returned).
        device_id: the GPU for ``device="gpu"``.
        out_of_bounds_policy: ``"error"`` (default), ``"pad"`` or ``"trim_to_shape"``.
        executor: where the blocking reads run (default: the loop's default executor).
        max_concurrency: large reads are split into up to this many
            concurrent groups (CPU path).
        max_gap, max_waste, max_reads: how ranges are coalesced (see
            :func:`streamflow.io.roi.byte_ranges`).
        stats: optional :class:`ReadStats` to count into (the module-wide
            :data:`read_stats` always counts).

    Returns:
        ``np.ndarray`` (or ``cupy.ndarray`` for ``device="gpu"``) of the
        region's shape, in C order and native byte order.

    Raises:
        ReadError: the file is missing, unreadable, not a valid numeric
            ``.npy`` file, or (``RoiError``) the region does not fit it;
            the message names the file.
        PipelineDefinitionError: contradictory or malformed arguments.
        MissingDependencyError: ``device="gpu"`` without cupy/kvikio.
    """
    path = os.fspath(path)
    dev = parse_device(device)
    policy = parse_out_of_bounds_policy(out_of_bounds_policy)
    coalesce = _coalesce_args(max_gap, max_waste, max_reads)
    loop = asyncio.get_running_loop()
    if dev is Device.GPU:
        return await kvikio_backend.read_npy_gpu(
            path,
            roi=roi,
            fill_value=fill_value,
            out_of_bounds_policy=policy,
            executor=executor,
            coalesce=coalesce,
            stats=stats,
            device_id=device_id,
        )
    if dev is not Device.CPU:
        raise PipelineDefinitionError(f"read_npy reads to 'cpu' or 'gpu', not {device!r}")
    result, prep, buf, groups = await loop.run_in_executor(
        executor, _cpu_all, path, roi, policy, fill_value, coalesce, stats, max(1, max_concurrency)
    )
    if result is not None:
        return result
    assert buf is not None and prep is not None
    # Each group opens its own descriptor, so a cancelled read never leaves a
    # thread reading through a closed (or reused) descriptor.
    await asyncio.gather(
        *(loop.run_in_executor(executor, _read_pieces_own_fd, prep, buf, g, stats) for g in groups)
    )
    return await loop.run_in_executor(executor, assemble_region, np, buf, prep, fill_value)
