"""Handing GPU batches to the consumer without a memory-reuse race.

A GPU batch lives in memory from cupy's pool (or nvImageCodec's stream-ordered
allocations) on a stage's stream. When the consumer (a training step in torch,
say) drops the batch, that memory goes back to the pool at once, ordered only
on the stage's stream, while kernels of the consumer's own stream that read it
may still be queued: the next batch could overwrite it under them.

The rule, correct whatever the consumer's stream: **each time the consumer
asks for a new batch, an event is recorded on the consumer's current stream,
and the batches handed out before are released only once that event has
completed** (``Handoff``). Work the consumer queued on a batch before asking
for the next one is thereby always finished before its memory is reused. To
keep a batch longer than one step, keep a reference (or a copy) and use it on
the stream that was current when the next batch was asked for.

The consumer's stream is cupy's current stream in the thread that asks, or
what the framework iterator names (``Pipeline.consumer_stream``: the torch
iterator passes ``torch.cuda.current_stream()``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .streams import DeferredRelease, new_event

__all__ = ["Handoff", "current_cupy_stream"]


def current_cupy_stream() -> int:
    """The ``cudaStream_t`` of cupy's current stream in the calling thread."""
    import cupy

    return int(cupy.cuda.get_current_stream().ptr)


class Handoff:
    """Holds the batches handed to the consumer until the consumer's stream is past them.

    Args:
        device_id: the GPU the batches live on.
        consumer_stream: returns the consumer's current stream pointer
            (default: cupy's current stream of the calling thread).
    """

    def __init__(self, device_id: int, consumer_stream: Callable[[], int] | None = None) -> None:
        self.device_id = device_id
        self.consumer_stream = consumer_stream or current_cupy_stream
        self._handed: list[Any] = []
        self._released = DeferredRelease()
        self._lock = threading.Lock()

    def handed_out(self, outputs: Any) -> None:
        """``outputs`` now belong to the consumer: hold them until a later ``next_requested``."""
        with self._lock:
            self._handed.append(outputs)

    def next_requested(self) -> None:
        """The consumer asks for a new batch (call in its thread): release the earlier ones after its stream."""
        with self._lock:
            handed, self._handed = self._handed, []
        if handed:
            import cupy

            with cupy.cuda.Device(self.device_id):
                stream = cupy.cuda.ExternalStream(self.consumer_stream(), self.device_id)
                event = new_event()
                event.record(stream)
            self._released.hold(event, handed)
        self._released.collect()

    def held(self) -> int:
        """Batches still referenced (handed out, or waiting for the consumer's event)."""
        with self._lock:
            return len(self._handed) + len(self._released)

    def close(self) -> None:
        """Release everything once the device is idle (the pipeline is closing).

        The consumer's stream is not known in the closing thread, so the whole
        device is waited for: at close, not per batch.
        """
        with self._lock:
            handed, self._handed = self._handed, []
        if handed or len(self._released):
            import cupy

            cupy.cuda.Device(self.device_id).synchronize()  # before the last references go
        handed.clear()
        self._released.clear()
