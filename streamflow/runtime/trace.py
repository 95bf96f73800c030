"""Chrome traces of pipeline activity (Trace Event Format, JSON).

While a ``Tracer`` is active (``start()`` ... ``stop()``, or ``with
recording("out.json")``), every running pipeline records:

* an ``"X"`` (complete) event per batch per stage (``cat: "stage"``, name
  ``read``/``cpu``/...), on one lane per batch in progress at once
  (``cpu``, ``cpu #1``, ...), with the epoch, batch index and sample count;
* ``"X"`` events for the waits (``cat: "wait"``, ``wait input`` /
  ``wait output``) on a lane of their own per stage;
* an ``"X"`` event per operator call per chunk (``cat: "operator"``, name
  ``decoders.image#0``, ...) on the worker thread that ran it (``tid`` is the
  thread's native id), with the rows, epoch, batch and stage;
* a ``"C"`` (counter) event ``queue <stage>-><next>`` each time a queue's
  occupancy changes;
* ``"M"`` (metadata) events naming the process and every thread/lane.

Open the file in ``chrome://tracing`` or https://ui.perfetto.dev. Times are
microseconds since ``start()``.

Cost when off: the engine reads the module global ``ACTIVE`` and compares it
with None, a few times per batch and once per operator call.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["ACTIVE", "Tracer", "active", "recording", "start", "stop"]

#: The tracer recording now, or None (the engine checks this; keep it a plain global).
ACTIVE: Tracer | None = None

# Virtual thread ids for stage lanes, above any Linux thread id (pid_max <= 2**22).
_LANE_BASE = 1 << 23


class Tracer:
    """Collects trace events from the event loop and worker threads.

    Args:
        max_events: keep at most this many events; later ones are counted in
            ``dropped`` (bounds memory on long runs).
    """

    def __init__(self, max_events: int = 2_000_000) -> None:
        self.t0 = time.perf_counter()
        self.max_events = max_events
        self.dropped = 0
        # list.append is atomic under the GIL: worker threads append without a lock.
        self._events: list[tuple[Any, ...]] = []
        self._threads: dict[int, tuple[str, int]] = {}  # tid -> (name, sort index)
        self._lanes: dict[tuple[int, int], int] = {}
        self._lock = threading.Lock()
        self.pid = os.getpid()

    # --- recording ------------------------------------------------------------
    def complete(self, name: str, cat: str, began: float, ended: float, tid: int, args: dict[str, Any]) -> None:
        """An "X" event from ``began`` to ``ended`` (``time.perf_counter`` seconds)."""
        if len(self._events) >= self.max_events:
            self.dropped += 1
            return
        self._events.append(("X", name, cat, began, ended, tid, args))

    def counter(self, name: str, at: float, values: dict[str, float], series: int = 0) -> None:
        """A "C" event: the counter ``name`` has ``values`` from ``at`` on."""
        if len(self._events) >= self.max_events:
            self.dropped += 1
            return
        self._events.append(("C", name, series, at, values))

    def current_thread(self) -> int:
        """The calling thread's id, named in the trace on first sight."""
        tid = threading.get_native_id()
        if tid not in self._threads:
            self._threads[tid] = (threading.current_thread().name, 1000 + len(self._threads))
        return tid

    def lane(self, group: int, key: int, name: str) -> int:
        """A virtual thread id for ``(group, key)``, named ``name`` on first use."""
        tid = self._lanes.get((group, key))
        if tid is None:
            with self._lock:
                tid = self._lanes.get((group, key))
                if tid is None:
                    tid = _LANE_BASE + group * 1000 + key
                    self._lanes[(group, key)] = tid
                    self._threads[tid] = (name, group * 1000 + key)
        return tid

    # --- output ---------------------------------------------------------------------
    def _us(self, t: float) -> float:
        return round(max(0.0, t - self.t0) * 1e6, 3)

    def events(self) -> list[dict[str, Any]]:
        """The events in Trace Event Format (metadata first, then by time)."""
        pid = self.pid
        out: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": f"streamflow (pid {pid})"}},
            {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": 0}},
        ]
        for tid, (name, order) in sorted(self._threads.items()):
            out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
            out.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": order}})
        timed: list[dict[str, Any]] = []
        for event in list(self._events):
            if event[0] == "X":
                _, name, cat, began, ended, tid, args = event
                ts = self._us(began)
                timed.append({
                    "name": name, "cat": cat, "ph": "X", "ts": ts,
                    "dur": max(0.0, round(self._us(ended) - ts, 3)),
                    "pid": pid, "tid": tid, "args": args,
                })
            else:
                _, name, series, at, values = event
                timed.append({"name": name, "ph": "C", "ts": self._us(at), "pid": pid, "tid": 0,
                              "id": series, "args": values})
        timed.sort(key=lambda e: e["ts"])
        return out + timed

    def to_json(self) -> dict[str, Any]:
        """``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``."""
        return {
            "traceEvents": self.events(),
            "displayTimeUnit": "ms",
            "otherData": {"producer": "streamflow", "dropped_events": self.dropped},
        }

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the trace as JSON to ``path``; returns it."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(self.to_json(), separators=(",", ":")))
        return out

    def __len__(self) -> int:
        return len(self._events)


def active() -> Tracer | None:
    """The tracer recording now, or None."""
    return ACTIVE


def start(max_events: int = 2_000_000) -> Tracer:
    """Start recording every pipeline of this process into a new ``Tracer``.

    Raises:
        RuntimeError: a tracer is already recording.
    """
    global ACTIVE
    if ACTIVE is not None:
        raise RuntimeError("a streamflow trace is already recording; stop() it first")
    ACTIVE = Tracer(max_events)
    return ACTIVE


def stop() -> Tracer | None:
    """Stop recording; returns the tracer that was recording (or None)."""
    global ACTIVE
    tracer, ACTIVE = ACTIVE, None
    return tracer


@contextmanager
def recording(path: str | os.PathLike[str] | None = None, max_events: int = 2_000_000) -> Iterator[Tracer]:
    """Record a trace for the ``with`` block; write it to ``path`` when given."""
    tracer = start(max_events)
    try:
        yield tracer
    finally:
        stop()
        if path is not None:
            tracer.write(path)
