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
import math
import mmap
import os
import threading
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from streamflow.errors import PipelineDefinitionError, ReadError
from streamflow.types import Device, OutOfBoundsPolicy, parse_device

from .npy_header import NpyHeader, npy_header_length, parse_npy_header
from .roi import (
    DEFAULT_MAX_GAP,
    DEFAULT_MAX_READS,
    DEFAULT_MAX_WASTE,
    ReadPlan,
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

#: First read of a file: enough for any header numpy writes.
_PREFIX_READ = 4096
#: Reads bigger than this are split so several threads can read at once.
_CHUNK = 8 * 1024 * 1024


@dataclass
class ReadStats:
    """Counters of the bytes this module reads (thread-safe).

    ``bytes_read / useful_bytes`` is the read amplification of the data
    (headers are counted apart, in ``header_bytes``).
    """

    files: int = 0
    reads: int = 0
    header_bytes: int = 0
    bytes_read: int = 0
    useful_bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(
        self,
        *,
        files: int = 0,
        reads: int = 0,
        header_bytes: int = 0,
        bytes_read: int = 0,
        useful_bytes: int = 0,
    ) -> None:
        with self._lock:
            self.files += files
            self.reads += reads
            self.header_bytes += header_bytes
            self.bytes_read += bytes_read
            self.useful_bytes += useful_bytes

    def reset(self) -> None:
        with self._lock:
            self.files = self.reads = self.header_bytes = self.bytes_read = 0
            self.useful_bytes = 0

    @property
    def amplification(self) -> float:
        """Data bytes read per useful byte (``nan`` before any useful byte)."""
        return self.bytes_read / self.useful_bytes if self.useful_bytes else math.nan

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {
                "files": self.files,
                "reads": self.reads,
                "header_bytes": self.header_bytes,
                "bytes_read": self.bytes_read,
                "useful_bytes": self.useful_bytes,
            }


#: Process-wide counters of every ``read_npy``/``read_npy_sync`` call.
read_stats = ReadStats()


def _stats_add(stats: ReadStats | None, **kw: int) -> None:
    read_stats.add(**kw)
    if stats is not None and stats is not read_stats:
        stats.add(**kw)


# --------------------------------------------------------------------------
# low-level reads


def _open(path: str) -> tuple[int, os.stat_result]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ReadError(f"cannot open: {e.strerror or e}", path) from e
    try:
        st = os.fstat(fd)
    except OSError as e:
        os.close(fd)
        raise ReadError(f"cannot stat: {e.strerror or e}", path) from e
    return fd, st


def _pread_into(fd: int, view: memoryview, offset: int, path: str) -> int:
    """Fill ``view`` from ``offset``; returns the number of read calls."""
    done = 0
    calls = 0
    n = len(view)
    while done < n:
        try:
            got = os.preadv(fd, [view[done:]], offset + done)
        except OSError as e:
            raise ReadError(f"read failed at byte {offset + done}: {e.strerror or e}", path) from e
        calls += 1
        if got == 0:
            raise ReadError(
                f"unexpected end of file at byte {offset + done} (expected {n - done} more "
                "bytes; was the file truncated while reading?)",
                path,
            )
        done += got
    return calls


def _read_header(fd: int, file_size: int, path: str, stats: ReadStats | None) -> NpyHeader:
    first = bytearray(min(file_size, _PREFIX_READ))
    calls = _pread_into(fd, memoryview(first), 0, path) if first else 0
    need = npy_header_length(bytes(first[:12]), path, file_size)
    if need > len(first):
        rest = bytearray(need - len(first))
        calls += _pread_into(fd, memoryview(rest), len(first), path)
        first += rest
    _stats_add(stats, files=1, reads=calls, header_bytes=len(first))
    return parse_npy_header(bytes(first), path, file_size)


def read_npy_header(path: str | os.PathLike[str]) -> NpyHeader:
    """Read and validate only the header of a ``.npy`` file."""
    path = os.fspath(path)
    fd, st = _open(path)
    try:
        return _read_header(fd, st.st_size, path, None)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------
# planning and assembly (shared with the GPU backend)


@dataclass(frozen=True)
class _Prepared:
    path: str
    stat: os.stat_result
    header: NpyHeader
    roi: Roi
    plan: ReadPlan


def _convert_fill(fill_value: Any, dtype: np.dtype) -> Any:
    """DALI's ``ConvertSat``: round and saturate to the output type."""
    native = dtype.newbyteorder("=")
    if dtype.kind == "b":
        return bool(fill_value)
    if dtype.kind in "iu":
        v = float(fill_value)
        if math.isnan(v):
            return native.type(0)
        info = np.iinfo(native)
        if math.isinf(v):
            return native.type(info.max if v > 0 else info.min)
        r = math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)
        return native.type(min(max(r, int(info.min)), int(info.max)))
    return native.type(fill_value)


def _prepare(
    fd: int,
    st: os.stat_result,
    path: str,
    roi: Any,
    policy: OutOfBoundsPolicy,
    alignment: int,
    coalesce: dict[str, Any],
    stats: ReadStats | None,
) -> _Prepared:
    header = _read_header(fd, st.st_size, path, stats)
    box = roi_from_argument(roi, header.shape, out_of_bounds_policy=policy, source=path)
    plan = plan_reads(header, box, alignment=alignment, file_size=st.st_size, **coalesce)
    return _Prepared(path, st, header, box, plan)


def _assemble(xp: Any, buf: Any, prep: _Prepared, fill_value: Any) -> Any:
    """Gather the region from the read buffer (``xp`` is numpy or cupy)."""
    header, plan, roi = prep.header, prep.plan, prep.roi
    dtype = header.dtype
    native = dtype.newbyteorder("=")
    itemsize = dtype.itemsize
    n = plan.run_positions.size
    inner_shape = tuple(hi - lo for lo, hi in roi.inside(header.shape))
    if n == 0:
        data = xp.empty(inner_shape, dtype=native)
    else:
        L = plan.run_length
        if n == 1:
            p = int(plan.run_positions[0])
            raw = buf[p : p + L].reshape(1, L)
        else:
            windows = xp.lib.stride_tricks.as_strided(
                buf, shape=(buf.size - L + 1, L), strides=(1, 1)
            )
            pos = plan.run_positions if xp is np else xp.asarray(plan.run_positions)
            raw = windows[pos]  # (n, L) copy of exactly the useful bytes
        if not dtype.isnative and itemsize > 1:
            unit = itemsize // 2 if dtype.kind == "c" else itemsize
            raw = xp.ascontiguousarray(raw.reshape(n, L // unit, unit)[:, :, ::-1])
        elif n == 1 and buf.size != L:
            raw = raw.copy()  # do not keep the bigger read buffer alive
        else:
            raw = xp.ascontiguousarray(raw)
        data = raw.view(native).reshape(plan.storage_shape)
        if header.fortran_order:
            data = xp.ascontiguousarray(data.T)
    if not roi.needs_padding(header.shape):
        return data
    out = xp.full(roi.shape, _convert_fill(fill_value, dtype), dtype=native)
    out[roi.placement(header.shape)] = data
    return out


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
        calls += _pread_into(fd, mv[pos : pos + length], off, path)
        nbytes += length
    _stats_add(stats, reads=calls, bytes_read=nbytes)


def _read_pieces_own_fd(
    prep: _Prepared,
    buf: np.ndarray,
    pieces: list[tuple[int, int, int]],
    stats: ReadStats | None,
) -> None:
    fd, st = _open(prep.path)
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


def _resident(mapped: mmap.mmap, begin: int, end: int) -> bool:
    """Whether every page of bytes ``[begin, end)`` of the mapping is in the page cache."""
    if _mincore is None or end <= begin:
        return False
    first = begin // _PAGE * _PAGE
    length = end - first
    view = np.frombuffer(mapped, dtype=np.uint8, count=length, offset=first)
    pages = np.zeros((length + _PAGE - 1) // _PAGE, dtype=np.uint8)
    status = _mincore(view.ctypes.data, length, pages.ctypes.data)
    del view
    return status == 0 and bool(np.all(pages & 1))


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
    corner_first = np.ravel_multi_index([lo for lo, _ in inside], header.shape, order=order)
    corner_last = np.ravel_multi_index([hi - 1 for _, hi in inside], header.shape, order=order)
    begin = header.data_offset + int(corner_first) * header.dtype.itemsize
    end = header.data_offset + (int(corner_last) + 1) * header.dtype.itemsize
    mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    try:
        if not _resident(mapped, begin, end):
            return None
        flat = np.frombuffer(mapped, dtype=header.dtype, count=count, offset=header.data_offset)
        window = tuple(slice(lo, hi) for lo, hi in inside)
        data = np.array(flat.reshape(header.shape, order=order)[window], dtype=native, order="C")
        del flat  # no view may outlive the mapping
    finally:
        mapped.close()
    # Only the region's bytes are copied, from cached pages: nothing comes from storage.
    _stats_add(stats, reads=1, bytes_read=data.nbytes, useful_bytes=data.nbytes)
    if not roi.needs_padding(header.shape):
        return data
    out = np.full(roi.shape, _convert_fill(fill_value, header.dtype), dtype=native)
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
) -> tuple[np.ndarray | None, _Prepared | None, np.ndarray | None, list]:
    """Open, parse, plan, read; assemble unless the reads should be split.

    Returns ``(result, prep, None, [])`` when done, or ``(None, prep, buf,
    groups)`` when the caller should read ``groups`` concurrently.
    """
    fd, st = _open(path)
    try:
        header = _read_header(fd, st.st_size, path, stats)
        box = roi_from_argument(roi, header.shape, out_of_bounds_policy=policy, source=path)
        inside = box.inside(header.shape)
        if all(hi > lo for lo, hi in inside) and _fragmented(header, inside):
            mapped = _read_mapped(fd, header, box, fill_value, stats)
            if mapped is not None:
                return mapped, None, None, []
        plan = plan_reads(header, box, alignment=1, file_size=st.st_size, **coalesce)
        prep = _Prepared(path, st, header, box, plan)
        _stats_add(stats, useful_bytes=plan.useful_bytes)
        buf = np.empty(prep.plan.buffer_size, dtype=np.uint8)
        big = prep.plan.buffer_size >= 2 * _CHUNK
        groups = _split_reads(prep.plan.reads, split) if split > 1 and big else []
        if len(groups) > 1:
            return None, prep, buf, groups
        _read_pieces(fd, buf, [(o, n, p) for o, n, p in prep.plan.reads], path, stats)
    finally:
        os.close(fd)
    return _assemble(np, buf, prep, fill_value), prep, None, []


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
            with kvikio/GPUDirect Storage).
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
        from . import kvikio_backend

        return await kvikio_backend.read_npy_gpu(
            path,
            roi=roi,
            fill_value=fill_value,
            out_of_bounds_policy=policy,
            executor=executor,
            coalesce=coalesce,
            stats=stats,
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
    return await loop.run_in_executor(executor, _assemble, np, buf, prep, fill_value)
