"""What the CPU and GPU ``.npy`` readers share: opening, the header, the read plan, counting, assembly.

``io/npy.py`` (CPU reads into host memory) and ``io/kvikio_backend.py`` (kvikio
reads into device memory) both plan a region's reads here
(``prepare_read``: header, region, coalesced byte ranges) and gather the
region from the read buffer with ``assemble_region`` (``xp`` is numpy or
cupy).
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from streamflow.errors import ReadError
from streamflow.types import OutOfBoundsPolicy

from .npy_header import NpyHeader, npy_header_length, parse_npy_header
from .roi import ReadPlan, Roi, plan_reads, roi_from_argument

__all__ = [
    "PREFIX_READ",
    "PreparedRead",
    "ReadStats",
    "assemble_region",
    "convert_fill",
    "count_read",
    "open_file",
    "pread_into",
    "prepare_read",
    "read_header",
    "read_stats",
]


#: First read of a file: enough for any header numpy writes.
PREFIX_READ = 4096


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


def count_read(stats: ReadStats | None, **kw: int) -> None:
    """Add to the module-wide counters and to ``stats``."""
    read_stats.add(**kw)
    if stats is not None and stats is not read_stats:
        stats.add(**kw)


def open_file(path: str) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only; failures are ``ReadError``s naming it."""
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


def pread_into(fd: int, view: memoryview, offset: int, path: str) -> int:
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


def read_header(fd: int, file_size: int, path: str, stats: ReadStats | None) -> NpyHeader:
    """Read and parse the header of an open ``.npy`` file."""
    first = bytearray(min(file_size, PREFIX_READ))
    calls = pread_into(fd, memoryview(first), 0, path) if first else 0
    need = npy_header_length(bytes(first[:12]), path, file_size)
    if need > len(first):
        rest = bytearray(need - len(first))
        calls += pread_into(fd, memoryview(rest), len(first), path)
        first += rest
    count_read(stats, files=1, reads=calls, header_bytes=len(first))
    return parse_npy_header(bytes(first), path, file_size)


@dataclass(frozen=True)
class PreparedRead:
    """A region's read, planned: the open file's stat, its header, the region and the byte ranges."""

    path: str
    stat: os.stat_result
    header: NpyHeader
    roi: Roi
    plan: ReadPlan


def convert_fill(fill_value: Any, dtype: np.dtype) -> Any:
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


def prepare_read(
    fd: int,
    st: os.stat_result,
    path: str,
    roi: Any,
    policy: OutOfBoundsPolicy,
    alignment: int,
    coalesce: dict[str, Any],
    stats: ReadStats | None,
) -> PreparedRead:
    """Read the header and plan the reads of ``roi`` (offsets aligned to ``alignment``)."""
    header = read_header(fd, st.st_size, path, stats)
    box = roi_from_argument(roi, header.shape, out_of_bounds_policy=policy, source=path)
    plan = plan_reads(header, box, alignment=alignment, file_size=st.st_size, **coalesce)
    return PreparedRead(path, st, header, box, plan)


def assemble_region(xp: Any, buf: Any, prep: PreparedRead, fill_value: Any) -> Any:
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
            # complex: each of the two parts is swapped on its own
            unit = itemsize // 2 if dtype.kind == "c" else itemsize
            raw = xp.ascontiguousarray(raw.reshape(n, L // unit, unit)[:, :, ::-1]).reshape(n, L)
        elif n == 1 and buf.size != L:
            raw = raw.copy()  # do not keep the bigger read buffer alive
        else:
            raw = xp.ascontiguousarray(raw)
        data = raw.view(native).reshape(plan.storage_shape)
        if header.fortran_order:
            data = xp.ascontiguousarray(data.T)
    if not roi.needs_padding(header.shape):
        return data
    out = xp.full(roi.shape, convert_fill(fill_value, dtype), dtype=native)
    out[roi.placement(header.shape)] = data
    return out

