"""CUDA streams, events and pinned staging for the GPU stages (cupy, imported lazily).

Rules this module is built on:

* cupy's current stream is thread-local. A stage's work runs in one worker
  thread call inside ``with device, stream:`` with no ``await`` inside; the
  event loop never holds a ``with stream:``.
* A stage records an event after queuing a batch; the next stage makes *its*
  stream wait on it (``Stream.wait_event``: device side, the host never blocks).
* The pipeline's output is awaited without blocking the event loop:
  ``wait_event`` polls ``Event.done`` with a growing back-off, or, with
  ``use_host_func``, a host function queued on the stream wakes the loop
  through ``call_soon_threadsafe`` (the callback makes no CUDA call).
* Memory that another stream still reads is held (``DeferredRelease``) until
  that stream's event has completed: cupy's pool is stream-ordered only for
  the stream that allocated a block.
* Stage streams are never destroyed: nvImageCodec frees the buffers it
  decoded into with ``cudaFreeAsync`` on the stream it decoded on, possibly
  long after the pipeline closed (the user may still hold the images). A
  closed pipeline returns its streams to a per-device pool for the next one.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from typing import Any

__all__ = [
    "DeferredRelease",
    "PinnedRing",
    "StageStream",
    "configure_memory_pool",
    "new_event",
    "release_stream",
    "wait_event",
]


def _cupy() -> Any:
    import cupy

    return cupy


def new_event(timing: bool = False) -> Any:
    """A non-blocking event (timing off unless asked: cheaper to record and wait on)."""
    return _cupy().cuda.Event(block=False, disable_timing=not timing)


class StageStream:
    """The non-blocking stream one GPU stage owns on one device (from the stream pool)."""

    def __init__(self, device_id: int) -> None:
        cp = _cupy()
        self.device_id = device_id
        self.device = cp.cuda.Device(device_id)
        self.stream = _acquire_stream(device_id)

    @property
    def ptr(self) -> int:
        """The ``cudaStream_t`` as an int (for nvImageCodec's ``cuda_stream=``)."""
        return int(self.stream.ptr)

    def wait(self, event: Any) -> None:
        """Make this stream wait for ``event`` (device side; returns at once)."""
        if event is not None:
            self.stream.wait_event(event)

    def record(self, timing: bool = False) -> Any:
        """Record a new event on this stream after everything queued so far."""
        with self.device:
            event = new_event(timing)
            event.record(self.stream)
        return event

    def close(self) -> None:
        """Give the stream back to the pool (it is never destroyed; see the module docstring)."""
        release_stream(self.device_id, self.stream)


_free_streams: dict[int, list[Any]] = collections.defaultdict(list)
_streams_lock = threading.Lock()


def _acquire_stream(device_id: int) -> Any:
    with _streams_lock:
        if _free_streams[device_id]:
            return _free_streams[device_id].pop()
    cp = _cupy()
    with cp.cuda.Device(device_id):
        stream = cp.cuda.Stream(non_blocking=True)
    _keep_forever.append(stream)
    return stream


def release_stream(device_id: int, stream: Any) -> None:
    """Return a stage stream to the pool of ``device_id`` for the next pipeline."""
    with _streams_lock:
        if stream not in _free_streams[device_id]:
            _free_streams[device_id].append(stream)


#: Every stage stream ever made: referenced for the life of the process.
_keep_forever: list[Any] = []

#: Cached bytes the driver's default memory pool keeps after a synchronize.
RELEASE_THRESHOLD_ENV = "STREAMFLOW_MEMPOOL_RELEASE_THRESHOLD"
_configured: set[int] = set()


def configure_memory_pool(device_id: int) -> int:
    """Let the device's default memory pool keep freed memory (once per device).

    nvImageCodec allocates decode buffers with ``cudaMallocAsync`` from the
    default pool, whose release threshold is 0: every synchronize would hand
    the freed buffers back to the driver and the next batch would allocate
    them again. Keep up to an eighth of the device memory (at most 2 GiB, or
    ``STREAMFLOW_MEMPOOL_RELEASE_THRESHOLD`` bytes) cached instead.

    Returns:
        The threshold set [bytes].
    """
    import os

    cp = _cupy()
    rt = cp.cuda.runtime
    with _streams_lock:
        if device_id in _configured:
            return -1
        _configured.add(device_id)
    env = os.environ.get(RELEASE_THRESHOLD_ENV)
    if env is not None:
        threshold = int(env)
    else:
        total = int(rt.getDeviceProperties(device_id)["totalGlobalMem"])
        threshold = min(total // 8, 2 << 30)
    pool = rt.deviceGetDefaultMemPool(device_id)
    rt.memPoolSetAttribute(pool, rt.cudaMemPoolAttrReleaseThreshold, threshold)
    return threshold


async def wait_event(
    event: Any,
    *,
    stream: Any = None,
    device_id: int = 0,
    use_host_func: bool = False,
    first_delay: float = 2e-5,
    max_delay: float = 1e-3,
) -> None:
    """Wait until ``event`` has completed without blocking the event loop.

    Args:
        event: a cupy ``Event`` already recorded.
        stream: with ``use_host_func``, the stream the event was recorded on.
        device_id: that stream's device (made current to queue the host function).
        use_host_func: queue a host function on ``stream`` that wakes the loop
            (``Stream.launch_host_func`` + ``loop.call_soon_threadsafe``)
            instead of polling ``Event.done``.
        first_delay: first polling interval [s]; doubles up to ``max_delay`` [s].
    """
    if event.done:
        return
    if use_host_func and stream is not None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()

        def resolve() -> None:
            if not fut.done():
                fut.set_result(None)

        def wake(_arg: Any) -> None:  # runs on a CUDA driver thread: no CUDA calls here
            try:
                loop.call_soon_threadsafe(resolve)
            except RuntimeError:
                pass  # the loop is closed: nobody waits any more

        with _cupy().cuda.Device(device_id):
            stream.launch_host_func(wake, None)
        await fut
        return
    delay = first_delay
    while not event.done:
        await asyncio.sleep(delay)
        delay = min(max_delay, delay * 2)


class DeferredRelease:
    """Holds references to device memory until an event says its readers are done.

    ``hold(event, refs)`` after queuing kernels that read ``refs`` on some
    stream; ``collect()`` drops the references whose event has completed
    (non-blocking queries), so their memory returns to the pool only then.
    """

    def __init__(self) -> None:
        self._held: collections.deque[tuple[Any, Any]] = collections.deque()
        self._lock = threading.Lock()

    def hold(self, event: Any, refs: Any) -> None:
        with self._lock:
            self._held.append((event, refs))

    def collect(self) -> int:
        """Release what is no longer read; returns how many entries are still held."""
        with self._lock:
            while self._held and self._held[0][0].done:
                self._held.popleft()
            return len(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()


class PinnedRing:
    """Reusable pinned host buffers for asynchronous host-to-device copies.

    A buffer is handed out again only when the event recorded after its last
    copy has completed; when none is free a new one is allocated (up to
    ``max_buffers``; past that the oldest is waited for, which only happens
    when the device is far behind the host).
    """

    def __init__(self, max_buffers: int = 16) -> None:
        self.max_buffers = max_buffers
        self._buffers: list[tuple[Any, Any]] = []  # (pinned uint8 array, event or None)
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> Any:
        """A pinned uint8 numpy array of at least ``nbytes`` not in use by a copy."""
        import cupyx

        with self._lock:
            for i, (buf, event) in enumerate(self._buffers):
                if buf.nbytes >= nbytes and (event is None or event.done):
                    self._buffers.pop(i)
                    return buf
            if len(self._buffers) >= self.max_buffers:
                buf, event = self._buffers.pop(0)
                if event is not None:
                    event.synchronize()  # rare: the device is far behind
                if buf.nbytes >= nbytes:
                    return buf
        size = max(int(nbytes), 1 << 16)
        size = 1 << (size - 1).bit_length()  # powers of two: fewer distinct sizes
        return cupyx.empty_pinned((size,), dtype="uint8")

    def give_back(self, buf: Any, event: Any) -> None:
        """Return ``buf``; it is reusable once ``event`` (recorded after its copy) is done."""
        with self._lock:
            self._buffers.append((buf, event))
