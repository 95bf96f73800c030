"""Thread pools: one for blocking file I/O, one for CPU operator work.

Reads and compute get separate pools so that a burst of reads for batch i+2
never queues behind the decoding of batch i+1. Both pools are owned by one
pipeline and shut down with it (no thread outlives ``close()``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import stat
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ReadError

__all__ = ["IOPool", "WorkerPool", "read_whole_file"]

T = TypeVar("T")

# Files larger than this are refused by the file reader: a data set of images
# has no sample this big, and reading one would exhaust memory.
MAX_FILE_BYTES = 1 << 31


def read_whole_file(path: str) -> bytes:
    """Read ``path`` entirely; failures become ``ReadError`` naming the file.

    Only regular files are read: a FIFO, socket or device under a data folder
    is refused at once (opening is non-blocking, so a FIFO with no writer
    cannot hang the reader thread), and so is a file over ``MAX_FILE_BYTES``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ReadError("file not found (deleted or moved since the file list was made)", path) from None
    except PermissionError:
        raise ReadError("permission denied", path) from None
    except IsADirectoryError:
        raise ReadError("is a directory, not a file", path) from None
    except OSError as e:
        raise ReadError(f"cannot open: {e.strerror or e}", path) from None
    except ValueError:  # os.open refuses a path with a NUL byte
        raise ReadError("the path contains a NUL byte", path) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ReadError("is a directory, not a file", path)
        if not stat.S_ISREG(st.st_mode):
            raise ReadError(f"is not a regular file (a {_file_kind(st.st_mode)}), refused", path)
        if st.st_size > MAX_FILE_BYTES:
            raise ReadError(f"file is {st.st_size} bytes, more than the limit of {MAX_FILE_BYTES}", path)
        with open(fd, "rb", buffering=0, closefd=False) as f:
            data = f.read()
    except ReadError:
        raise
    except OSError as e:
        raise ReadError(f"cannot read: {e.strerror or e}", path) from None
    finally:
        os.close(fd)
    return data


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


class _Pool:
    def __init__(self, threads: int, prefix: str) -> None:
        self.threads = threads
        self._executor = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix=prefix)

    @property
    def executor(self) -> concurrent.futures.Executor:
        """The underlying executor (for APIs that take one, such as ``read_npy``)."""
        return self._executor

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the pool and await its result."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, *args)

    def shutdown(self) -> None:
        """Wait for running jobs, drop queued ones, join the threads."""
        self._executor.shutdown(wait=True, cancel_futures=True)


class IOPool(_Pool):
    """Threads that do blocking reads (files, user callbacks)."""

    def __init__(self, threads: int = 4) -> None:
        super().__init__(threads, "streamflow-io")

    async def read_files(self, paths: list[str]) -> list[bytes | ReadError]:
        """Read every path concurrently; a failed read is returned as its error."""

        def read_or_error(path: str) -> bytes | ReadError:
            try:
                return read_whole_file(path)
            except ReadError as e:
                return e

        if not paths:
            return []
        # One job per few files: enough parallelism for the pool, few loop hops.
        per_job = max(1, len(paths) // (self.threads * 2))
        groups = [paths[i : i + per_job] for i in range(0, len(paths), per_job)]
        results = await asyncio.gather(
            *(self.call(lambda g=g: [read_or_error(p) for p in g]) for g in groups)
        )
        return [item for group in results for item in group]


class WorkerPool(_Pool):
    """``num_threads`` threads that run CPU operators (they release the GIL)."""

    def __init__(self, threads: int) -> None:
        super().__init__(threads, "streamflow-worker")
