"""Where a reader's bytes come from: local files (``pread`` on the I/O pool) or URLs (``remote``).

Readers name their files by path or URL and never branch on which: a
:class:`Storage` reads whole files and byte ranges of either, and the
``*_sync`` helpers read index files, sizes and listings when a pipeline is
defined. Every failure is a :class:`~streamflow.errors.ReadError` naming the
file (and the byte offset, for a range).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import defaultdict
from typing import Protocol

from ..errors import PipelineDefinitionError, ReadError
from . import remote
from .pools import IOPool, read_whole_file

__all__ = [
    "RangeReader",
    "Storage",
    "file_size",
    "is_url",
    "open_range_reader",
    "read_bytes",
    "read_text",
    "where",
]

is_url = remote.is_url


def where(path: str, offset: int) -> str:
    """How errors and ``Batch.sources`` name a record: ``"<file> at byte <offset>"``."""
    return f"{path} at byte {offset}"


class RangeReader(Protocol):
    """A blocking reader of byte ranges of one file (for scanning headers)."""

    size: int

    def read(self, offset: int, n: int) -> bytes: ...

    def close(self) -> None: ...


class _LocalRangeReader:
    def __init__(self, path: str) -> None:
        self._file = open(path, "rb")
        self.size = os.fstat(self._file.fileno()).st_size

    def read(self, offset: int, n: int) -> bytes:
        return os.pread(self._file.fileno(), n, offset)

    def close(self) -> None:
        self._file.close()


def _definition_error(what: str, path: str, error: BaseException) -> PipelineDefinitionError:
    if isinstance(error, ReadError):
        return PipelineDefinitionError(f"{what} {path!r}: {error.reason}")
    if isinstance(error, OSError):
        return PipelineDefinitionError(f"{what} {path!r}: {error.strerror or error}")
    return PipelineDefinitionError(f"{what} {path!r}: {error}")


def open_range_reader(path: str, what: str = "cannot open") -> RangeReader:
    """A :class:`RangeReader` over ``path`` (local or URL)."""
    try:
        if is_url(path):
            return remote.RangeFile(path)
        return _LocalRangeReader(remote.local_path(path))
    except (OSError, ReadError) as e:
        raise _definition_error(what, path, e) from None


def read_bytes(path: str, what: str = "cannot read") -> bytes:
    """All bytes of ``path`` (local or URL), at definition time."""
    try:
        if is_url(path):
            return remote.read_bytes_sync(path)
        with open(remote.local_path(path), "rb") as f:
            return f.read()
    except (OSError, ReadError) as e:
        raise _definition_error(what, path, e) from None


def read_text(path: str, what: str = "cannot read") -> str:
    """``path`` as UTF-8 text (undecodable bytes kept as surrogates), at definition time."""
    return read_bytes(path, what).decode("utf-8", "surrogateescape")


def file_size(path: str, what: str = "cannot open") -> int:
    """The size of ``path`` in bytes, at definition time."""
    try:
        if is_url(path):
            return remote.size_sync(path)
        return os.stat(remote.local_path(path)).st_size
    except (OSError, ReadError) as e:
        raise _definition_error(what, path, e) from None


class Storage:
    """Reads of one reader: whole files and byte ranges, local or remote, concurrently.

    Local files are read with ``pread`` on the pipeline's I/O threads (file
    descriptors are kept open until :meth:`close`); URLs go through one
    :class:`~streamflow.io.remote.RemoteStore` (bounded concurrency,
    read-ahead, retries).
    """

    def __init__(self) -> None:
        self._remote: remote.RemoteStore | None = None
        self._fds: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def remote(self) -> remote.RemoteStore:
        if self._remote is None:
            self._remote = remote.RemoteStore()
        return self._remote

    def set_extent(self, path: str, end: int) -> None:
        """Reads ahead of ``path`` stop at byte ``end`` (remote files only)."""
        if is_url(path):
            self.remote.set_extent(path, end)

    # -- local ------------------------------------------------------------------------------
    def _fd(self, path: str) -> int:
        with self._lock:
            fd = self._fds.get(path)
            if fd is None:
                try:
                    fd = os.open(remote.local_path(path), os.O_RDONLY | os.O_CLOEXEC)
                except FileNotFoundError:
                    raise ReadError("file not found", path) from None
                except PermissionError:
                    raise ReadError("permission denied", path) from None
                except OSError as e:
                    raise ReadError(f"cannot open: {e.strerror or e}", path) from None
                self._fds[path] = fd
            return fd

    def _pread(self, path: str, offset: int, size: int) -> bytes | ReadError:
        try:
            data = os.pread(self._fd(path), size, offset)
        except ReadError as e:
            return e
        except OSError as e:
            return ReadError(f"cannot read: {e.strerror or e}", where(path, offset))
        if len(data) < size:
            return ReadError(
                f"the file ends {len(data)} bytes into a {size}-byte record (truncated file, or a wrong index)",
                where(path, offset),
            )
        return data

    # -- the readers' interface ----------------------------------------------------------------
    async def read_ranges(self, io: IOPool, requests: list[tuple[str, int, int]]) -> list[bytes | ReadError]:
        """The bytes of each ``(path, offset, size)``, concurrently; a failure is returned as its error."""
        results: list[bytes | ReadError | None] = [None] * len(requests)
        local: dict[str, list[int]] = defaultdict(list)
        remote_rows = []
        for row, (path, _, _) in enumerate(requests):
            if is_url(path):
                remote_rows.append(row)
            else:
                local[path].append(row)

        def read_group(rows: list[int]) -> None:
            for row in sorted(rows, key=lambda r: requests[r][1]):  # ascending offsets: read-ahead friendly
                results[row] = self._pread(*requests[row])

        async def fetch(row: int) -> None:
            path, offset, size = requests[row]
            try:
                results[row] = await self.remote.read_range(path, offset, size)
            except ReadError as e:
                results[row] = ReadError(e.reason, where(path, offset)) if e.source == path else e

        jobs = []
        per_job = max(1, len(requests) // max(1, io.threads * 2))
        for rows in local.values():
            for i in range(0, len(rows), per_job):
                jobs.append(io.call(read_group, rows[i : i + per_job]))
        jobs.extend(fetch(row) for row in remote_rows)
        await asyncio.gather(*jobs)
        return results  # type: ignore[return-value]

    async def read_files(self, io: IOPool, paths: list[str]) -> list[bytes | ReadError]:
        """Whole files (local or URLs), concurrently; a failure is returned as its error."""
        local_rows = [i for i, p in enumerate(paths) if not is_url(p)]
        results: list[bytes | ReadError | None] = [None] * len(paths)
        if local_rows:
            contents = await io.read_files([remote.local_path(paths[i]) for i in local_rows])
            for row, content in zip(local_rows, contents):
                results[row] = content

        async def fetch(row: int) -> None:
            try:
                results[row] = await self.remote.read_file(paths[row])
            except ReadError as e:
                results[row] = e

        await asyncio.gather(*(fetch(i) for i, p in enumerate(paths) if is_url(p)))
        return results  # type: ignore[return-value]

    def close(self) -> None:
        """Close the kept file descriptors and drop remote caches."""
        with self._lock:
            fds, self._fds = list(self._fds.values()), {}
        for fd in fds:
            os.close(fd)
        if self._remote is not None:
            self._remote.close()
            self._remote = None


def read_whole(path: str) -> bytes:
    """All bytes of one file or URL, blocking (a ``ReadError`` naming it on failure)."""
    if is_url(path):
        return remote.read_bytes_sync(path)
    return read_whole_file(remote.local_path(path))

