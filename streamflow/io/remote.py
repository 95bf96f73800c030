"""Object storage and HTTP: every read of an ``s3://``, ``gs://``, ``http(s)://`` (or other fsspec) URL.

The readers name remote files by URL; this module is the only one that talks
to them. It uses ``fsspec``'s asynchronous file systems (``s3fs`` over
``aiobotocore``, ``gcsfs``, ``HTTPFileSystem`` over ``aiohttp``), whose
coroutines run on fsspec's own I/O event loop thread; the pipeline's read
stage awaits them from its loop. On that loop:

* **bounded concurrency**: at most ``STREAMFLOW_REMOTE_CONCURRENCY``
  requests (default 16) are in flight per reader;
* **read-ahead**: byte ranges are read as whole blocks
  (``STREAMFLOW_REMOTE_BLOCK_MB``, default 4 MiB) kept in an LRU cache
  (``STREAMFLOW_REMOTE_CACHE_MB``, default 256 MiB); reading a block starts
  the reads of the next ``STREAMFLOW_REMOTE_READ_AHEAD`` blocks (default 2)
  of the same file, so a shard is streamed while earlier batches are decoded;
* **retries**: transient failures (connection errors, time-outs, HTTP 408,
  429 and 5xx, throttling) are retried up to ``STREAMFLOW_REMOTE_RETRIES``
  times (default 5) with exponential back-off from
  ``STREAMFLOW_REMOTE_RETRY_DELAY`` seconds (default 0.2, doubling, at most
  10 s);
* **permanent failures** (missing object, access denied, other 4xx) fail at
  once with a :class:`~streamflow.errors.ReadError` naming the URL.

Credentials and endpoints are fsspec's: the usual environment
(``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL_S3``, ``GOOGLE_APPLICATION_CREDENTIALS``,
...), config files (``~/.aws/credentials``) or fsspec's configuration
(``~/.config/fsspec/*.json``, ``FSSPEC_S3_*`` variables, ``fsspec.config.conf``).
"""

from __future__ import annotations

import asyncio
import collections
import errno
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import MissingDependencyError, PipelineDefinitionError, ReadError

__all__ = [
    "RemoteSettings",
    "RemoteStore",
    "is_url",
    "join_url",
    "list_files_sync",
    "read_bytes_sync",
    "settings",
    "size_sync",
    "url_dirname",
]

T = TypeVar("T")

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


def is_url(path: str) -> bool:
    """Whether ``path`` names a remote object (``scheme://...``, except ``file://``)."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.lower() != "file" and _SCHEME.fullmatch(scheme) is not None


def local_path(path: str) -> str:
    """``file://`` URLs as local paths; other paths unchanged."""
    return path[len("file://") :] if path.startswith("file://") else path


def url_dirname(url: str) -> str:
    """The "folder" of a URL (everything before its last ``/``)."""
    return url.rsplit("/", 1)[0]


def join_url(base: str, relative: str) -> str:
    """``relative`` under ``base`` (a URL or a local folder); an absolute URL or path is kept."""
    if is_url(relative) or os.path.isabs(relative):
        return relative
    if is_url(base):
        return base.rstrip("/") + "/" + relative
    return os.path.join(base, relative)


@dataclass(frozen=True)
class RemoteSettings:
    """Tuning of remote reads (from the ``STREAMFLOW_REMOTE_*`` environment variables)."""

    concurrency: int = 16
    block_bytes: int = 4 << 20
    cache_bytes: int = 256 << 20
    read_ahead: int = 2
    retries: int = 5
    retry_delay: float = 0.2
    max_retry_delay: float = 10.0


def settings() -> RemoteSettings:
    """The settings in force (read from the environment at each reader's creation)."""

    def number(name: str, default: float, cast: Callable[[str], Any]) -> Any:
        raw = os.environ.get(f"STREAMFLOW_REMOTE_{name}")
        if raw is None:
            return default
        try:
            value = cast(raw)
        except ValueError:
            raise PipelineDefinitionError(f"STREAMFLOW_REMOTE_{name}={raw!r} is not a number") from None
        if value < 0:
            raise PipelineDefinitionError(f"STREAMFLOW_REMOTE_{name}={raw!r} must not be negative")
        return value

    base = RemoteSettings()
    return RemoteSettings(
        concurrency=max(1, number("CONCURRENCY", base.concurrency, int)),
        block_bytes=max(64 << 10, int(number("BLOCK_MB", base.block_bytes / 2**20, float) * 2**20)),
        cache_bytes=int(number("CACHE_MB", base.cache_bytes / 2**20, float) * 2**20),
        read_ahead=number("READ_AHEAD", base.read_ahead, int),
        retries=number("RETRIES", base.retries, int),
        retry_delay=number("RETRY_DELAY", base.retry_delay, float),
    )


# --- fsspec file systems ------------------------------------------------------------------
def _fsspec() -> Any:
    try:
        import fsspec
    except ImportError:
        raise MissingDependencyError("fsspec", "remote", "reading s3://, gs:// and http(s):// URLs") from None
    return fsspec


def filesystem(url: str) -> tuple[Any, str]:
    """(fsspec file system, path inside it) for ``url``; options come from fsspec's config."""
    fsspec = _fsspec()
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as e:
        scheme = url.split("://", 1)[0]
        package = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "http": "aiohttp", "https": "aiohttp"}
        raise MissingDependencyError(package.get(scheme, str(e)), "remote", f"reading {scheme}:// URLs") from None
    except ValueError as e:
        raise PipelineDefinitionError(f"cannot open {url!r}: {e}") from None


# --- errors and retries ---------------------------------------------------------------------
_TRANSIENT_ERRNOS = {errno.ECONNRESET, errno.ECONNREFUSED, errno.ECONNABORTED, errno.ETIMEDOUT, errno.EPIPE,
                     errno.EAGAIN, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EIO}
_THROTTLING = ("SlowDown", "Throttl", "RequestTimeout", "InternalError", "ServiceUnavailable", "503", "500")


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status", None) or getattr(error, "code", None)
    if isinstance(status, int):
        return status
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return int(code) if code else None
    return None


def classify(error: BaseException) -> str | None:
    """``None`` for a transient error (worth retrying), else the permanent reason in words."""
    cause = error.__cause__
    if isinstance(error, FileNotFoundError) and cause is not None and _status(cause) not in (None, 404, 410):
        return classify(cause)  # fsspec's HTTP info() reports any failed HEAD/GET as "not found"
    if isinstance(error, FileNotFoundError):
        return "not found (no such object or file)"
    if isinstance(error, PermissionError):
        return "access denied (check the credentials and the bucket's permissions)"
    if isinstance(error, IsADirectoryError):
        return "is a directory, not a file"
    status = _status(error)
    if status is not None and 400 <= status < 600:
        if status in (408, 429) or status >= 500:
            return None
        if status == 404:
            return "not found (HTTP 404)"
        if status in (401, 403):
            return f"access denied (HTTP {status}; check the credentials)"
        return f"HTTP {status}: {error}"
    if isinstance(error, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return None
    name = type(error).__name__
    if "Timeout" in name or "Connection" in name or "Disconnected" in name or "Payload" in name:
        return None
    text = str(error)
    if any(t in text for t in _THROTTLING):
        return None
    if isinstance(error, OSError) and (error.errno is None or error.errno in _TRANSIENT_ERRNOS):
        return None  # s3fs reports unknown service errors as plain OSError
    return f"{name}: {error}"


def _retry_delay(url: str, conf: RemoteSettings, error: Exception, attempt: int) -> float:
    """The back-off before retrying a transient ``error`` (0-based ``attempt``); the final ``ReadError`` otherwise."""
    if classify(error) is not None or attempt >= conf.retries:
        raise _final_error(url, error, attempt + 1) from None
    return float(min(conf.max_retry_delay, conf.retry_delay * 2**attempt))


def _final_error(url: str, error: BaseException, attempts: int) -> ReadError:
    reason = classify(error)
    if reason is None:
        detail = f"{type(error).__name__}: {error}".rstrip(": ")
        return ReadError(f"failed after {attempts} attempts (transient errors; last: {detail})", url)
    return ReadError(reason, url)


async def retrying(url: str, conf: RemoteSettings, call: Callable[[], Awaitable[T]]) -> T:
    """``await call()``, retrying transient failures with back-off; a ``ReadError`` naming ``url`` otherwise."""
    attempt = 0
    while True:
        try:
            return await call()
        except asyncio.CancelledError:
            raise
        except ReadError:
            raise
        except Exception as e:
            await asyncio.sleep(_retry_delay(url, conf, e, attempt))
            attempt += 1


def retrying_sync(url: str, conf: RemoteSettings, call: Callable[[], T]) -> T:
    """The blocking twin of :func:`retrying` (definition-time reads: index files, listings)."""
    attempt = 0
    while True:
        try:
            return call()
        except ReadError:
            raise
        except Exception as e:
            time.sleep(_retry_delay(url, conf, e, attempt))
            attempt += 1


# --- blocking helpers (pipeline definition time) ---------------------------------------------
def read_bytes_sync(url: str, start: int | None = None, end: int | None = None) -> bytes:
    """The bytes of ``url`` (or of ``[start, end)``), with retries."""
    fs, path = filesystem(url)
    return retrying_sync(url, settings(), lambda: bytes(fs.cat_file(path, start=start, end=end)))


def size_sync(url: str) -> int:
    """The size of ``url`` in bytes."""
    fs, path = filesystem(url)
    return int(retrying_sync(url, settings(), lambda: fs.size(path)))


def list_files_sync(url: str) -> list[str]:
    """Every file under the "folder" ``url`` (recursive), as full URLs, sorted."""
    fs, path = filesystem(url)
    found = retrying_sync(url, settings(), lambda: fs.find(path))
    return sorted(fs.unstrip_protocol(p) for p in found)


def list_dirs_sync(url: str) -> list[str]:
    """Names of the immediate sub-folders of ``url``, sorted."""
    fs, path = filesystem(url)
    entries = retrying_sync(url, settings(), lambda: fs.ls(path, detail=True))
    return sorted(e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == "directory")


class RangeFile:
    """Blocking ``read(offset, n)`` over a remote file with read-ahead (scanning headers)."""

    def __init__(self, url: str) -> None:
        fs, path = filesystem(url)
        self.url = url
        conf = settings()
        self._file = retrying_sync(
            url, conf, lambda: fs.open(path, "rb", block_size=conf.block_bytes, cache_type="readahead")
        )
        self.size = int(self._file.size)
        self._conf = conf

    def read(self, offset: int, n: int) -> bytes:
        def once() -> bytes:
            self._file.seek(offset)
            return bytes(self._file.read(n))

        return retrying_sync(self.url, self._conf, once)

    def close(self) -> None:
        self._file.close()


# --- the asynchronous store ----------------------------------------------------------------
class RemoteStore:
    """Remote reads of one reader: whole objects and byte ranges, on fsspec's I/O loop.

    Thread-safe and loop-agnostic: the public coroutines may be awaited from
    any event loop (the pipeline's); the work, the block cache and the
    concurrency limit live on fsspec's loop.
    """

    def __init__(self, conf: RemoteSettings | None = None) -> None:
        self.conf = conf or settings()
        self._extents: dict[str, int] = {}
        self._blocks: collections.OrderedDict[tuple[str, int], asyncio.Task[bytes]] = collections.OrderedDict()
        self._cached_bytes = 0
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._lock = threading.Lock()
        self._closed = False
        #: requests sent (for tests and benchmarks)
        self.requests = 0

    def set_extent(self, url: str, end: int) -> None:
        """Reads of ``url`` never go past byte ``end`` (the end of its last record)."""
        with self._lock:
            self._extents[url] = max(end, self._extents.get(url, 0))

    # -- plumbing -------------------------------------------------------------------------
    async def _run(self, url: str, make: Callable[[Any, str], Awaitable[T]]) -> T:
        """Run ``make(fs, path)`` on the file system's loop and await it from the caller's loop."""
        fs, path = filesystem(url)
        if not getattr(fs, "async_impl", False):  # a blocking fsspec file system: reads on threads
            return await make(fs, path)
        future: Future[T] = asyncio.run_coroutine_threadsafe(make(fs, path), fs.loop)  # type: ignore[arg-type]
        return await asyncio.wrap_future(future)

    def _semaphore(self) -> asyncio.Semaphore:
        loop_id = id(asyncio.get_running_loop())
        sem = self._semaphores.get(loop_id)
        if sem is None:
            sem = self._semaphores[loop_id] = asyncio.Semaphore(self.conf.concurrency)
        return sem

    async def _fetch(self, fs: Any, url: str, path: str, start: int | None, end: int | None) -> bytes:
        async def once() -> bytes:
            async with self._semaphore():
                self.requests += 1
                if not getattr(fs, "async_impl", False):
                    return bytes(await asyncio.to_thread(fs.cat_file, path, start=start, end=end))
                return bytes(await fs._cat_file(path, start=start, end=end))

        return await retrying(url, self.conf, once)

    # -- whole objects --------------------------------------------------------------------
    async def read_file(self, url: str) -> bytes:
        """All bytes of ``url`` (a ``ReadError`` naming it on failure)."""
        return await self._run(url, lambda fs, path: self._fetch(fs, url, path, None, None))

    # -- byte ranges through the block cache ------------------------------------------------
    async def read_range(self, url: str, offset: int, size: int) -> bytes:
        """``size`` bytes of ``url`` from ``offset`` (served by cached blocks; reads ahead)."""
        return await self._run(url, lambda fs, path: self._range(fs, url, path, offset, size))

    def _block(self, fs: Any, url: str, path: str, index: int) -> asyncio.Task[bytes]:
        key = (url, index)
        task = self._blocks.get(key)
        if task is not None:
            self._blocks.move_to_end(key)
            return task
        bs = self.conf.block_bytes
        start = index * bs
        end = start + bs
        extent = self._extents.get(url)
        if extent is not None:
            end = min(end, extent)
        task = asyncio.ensure_future(self._fetch(fs, url, path, start, end))
        task.add_done_callback(_retrieve)  # a failed read-ahead nobody awaits is not an unhandled error
        self._blocks[key] = task
        self._cached_bytes += end - start
        while self._cached_bytes > self.conf.cache_bytes and len(self._blocks) > 1:
            # Dropped, not cancelled: a reader may be awaiting it.
            self._forget(next(iter(self._blocks)))
        return task

    async def _range(self, fs: Any, url: str, path: str, offset: int, size: int) -> bytes:
        if self._closed:
            raise ReadError("the reader was closed", url)
        bs = self.conf.block_bytes
        if size <= 0:
            return b""
        first, last = offset // bs, (offset + size - 1) // bs
        tasks = [self._block(fs, url, path, i) for i in range(first, last + 1)]
        extent = self._extents.get(url)
        if extent is not None:  # without a known end, reading ahead could run past the object
            for ahead in range(last + 1, last + 1 + self.conf.read_ahead):
                if ahead * bs >= extent:
                    break
                self._block(fs, url, path, ahead)
        try:
            blocks = await asyncio.gather(*(asyncio.shield(t) for t in tasks))
        except ReadError:
            for i, t in zip(range(first, last + 1), tasks):  # a failed block is retried next time
                if t.done() and (t.cancelled() or t.exception() is not None):
                    self._forget((url, i))
            raise
        data = b"".join(blocks)
        begin = offset - first * bs
        piece = data[begin : begin + size]
        if len(piece) < size:
            raise ReadError(f"the object ends before byte {offset + size} (truncated, or a wrong index)", url)
        return piece

    def _forget(self, key: tuple[str, int]) -> None:
        task = self._blocks.pop(key, None)
        if task is not None:
            url, index = key
            end = (index + 1) * self.conf.block_bytes
            extent = self._extents.get(url)
            self._cached_bytes -= (min(end, extent) if extent is not None else end) - index * self.conf.block_bytes

    def close(self) -> None:
        """Drop cached blocks and cancel reads ahead (the file systems stay: fsspec shares them)."""
        self._closed = True
        blocks = list(self._blocks.values())
        self._blocks.clear()
        self._cached_bytes = 0
        for task in blocks:
            loop = task.get_loop()
            if not loop.is_closed():
                loop.call_soon_threadsafe(task.cancel)


def _retrieve(task: asyncio.Task[bytes]) -> None:
    if not task.cancelled():
        task.exception()
