"""Counters the engine keeps while it runs; ``Pipeline.stats()`` freezes them into
``streamflow.stats`` snapshots (whose module docstring says how a stage's time is divided).
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from typing import Any

from ..stats import OperatorStats, QueueStats, SkippedSample, StageStats, fraction
from . import nvtx as _nvtx
from . import trace as _trace

__all__ = ["StageClock", "StatsRecorder"]

_perf = time.perf_counter


_engine_ids = itertools.count(1)


class StatsRecorder:
    """Mutable counters shared by the engine's tasks and worker threads.

    Args:
        nvtx: emit NVTX ranges around operator calls and stage batches
            (``runtime.nvtx.wanted``); off by default.
    """

    # Keep the first N skipped samples by name; beyond that only count them.
    MAX_SKIPPED_KEPT = 1_000

    def __init__(self, nvtx: bool = False) -> None:
        self._lock = threading.Lock()
        self.op_time: dict[str, float] = {}
        self.op_batches: dict[str, int] = {}
        self.op_calls: dict[str, int] = {}
        self.op_rows: dict[str, int] = {}
        self.op_counts: dict[str, dict[str, int]] = {}
        self.skipped: collections.deque[SkippedSample] = collections.deque(maxlen=self.MAX_SKIPPED_KEPT)
        self.skipped_total = 0
        self.skipped_by_stage: dict[str, int] = {}
        self.batches_delivered = 0
        self.samples_delivered = 0
        self.nvtx = _nvtx.backend() if nvtx else None
        self.engine_id = next(_engine_ids)  # tells pipelines apart in a trace
        self.created = _perf()

    # --- operator calls (worker threads) ------------------------------------
    def add_op_time(self, name: str, seconds: float, rows: int = 0) -> None:
        with self._lock:
            self.op_time[name] = self.op_time.get(name, 0.0) + seconds
            self.op_calls[name] = self.op_calls.get(name, 0) + 1
            self.op_rows[name] = self.op_rows.get(name, 0) + rows

    def add_counts(self, name: str, counts: dict[str, int]) -> None:
        """Add an operator call's event counts (``Chunk.count``)."""
        with self._lock:
            mine = self.op_counts.setdefault(name, {})
            for key, n in counts.items():
                mine[key] = mine.get(key, 0) + n

    def op_begin(self, name: str) -> float:
        """Before an operator call on a worker thread: its start time (and an NVTX push)."""
        if self.nvtx is not None:
            self.nvtx.push(name)
        return _perf()

    def op_end(self, name: str, began: float, rows: int, epoch: int, batch: int, stage: str) -> None:
        """After an operator call: count its time; trace it and pop NVTX when on."""
        ended = _perf()
        self.add_op_time(name, ended - began, rows)
        tracer = _trace.ACTIVE
        if tracer is not None:
            tracer.complete(
                name, "operator", began, ended, tracer.current_thread(),
                {"rows": rows, "epoch": epoch, "batch": batch, "stage": stage},
            )
        if self.nvtx is not None:
            self.nvtx.pop()

    def count_op_batch(self, names: list[str]) -> None:
        with self._lock:
            for name in names:
                self.op_batches[name] = self.op_batches.get(name, 0) + 1

    def add_skip(self, sample: SkippedSample) -> None:
        with self._lock:
            self.skipped_total += 1
            self.skipped_by_stage[sample.stage] = self.skipped_by_stage.get(sample.stage, 0) + 1
            self.skipped.append(sample)  # a deque: a long-running server keeps the latest

    def operators(self, stage_of: dict[str, str] | None = None) -> tuple[OperatorStats, ...]:
        """Per operator, in ``stage_of``'s order (then any others), with its stage."""
        stage_of = stage_of or {}
        with self._lock:
            names = [n for n in stage_of if n in self.op_time or n in self.op_batches]
            names += [n for n in self.op_time if n not in stage_of]
            return tuple(
                OperatorStats(
                    name,
                    self.op_batches.get(name, 0),
                    self.op_time.get(name, 0.0),
                    calls=self.op_calls.get(name, 0),
                    rows=self.op_rows.get(name, 0),
                    stage=stage_of.get(name, ""),
                    counts=dict(self.op_counts.get(name, {})),
                )
                for name in names
            )


class StageClock:
    """One stage's (or the consumer's) time accounting, kept on the event loop.

    The engine calls ``work_begin``/``work_end`` around each batch, the
    ``wait_*`` pairs around waiting on a channel, and ``queue_changed`` after
    each put/get on the stage's output channel. Every call first charges the
    time since the previous call to the state the stage was in (see the
    module docstring). Not thread-safe: only the loop thread mutates it;
    ``snapshot`` only reads. When a tracer is active (``runtime.trace``) the
    same calls record Chrome trace events; when NVTX is on, a range per batch.

    Args:
        name: the stage's label (``"consumer"`` for the consumer).
        index: its position (for trace lane ids).
        recorder: the engine's recorder (engine id, NVTX backend, skips).
        queue_name: name of the output queue (``"read->cpu"``); "" for none.
        capacity: that queue's capacity.
        start: when its wall time starts; ``None``: at the first call.
    """

    def __init__(
        self,
        name: str,
        index: int,
        recorder: StatsRecorder,
        queue_name: str = "",
        capacity: int = 0,
        start: float | None = None,
    ) -> None:
        self.name = name
        self.index = index
        self.recorder = recorder
        self.batches = 0
        self.samples = 0
        self.busy = 0.0
        self.wait_in = 0.0
        self.wait_out = 0.0
        self.other = 0.0
        self.batch_time = 0.0
        self.errors = 0
        self.in_progress = 0
        self.max_in_progress = 0
        self.waiting_in = 0
        self.waiting_out = 0
        self.started = start
        self.last = start if start is not None else 0.0
        self._open_sum = 0.0  # sum of the start times of the batches in progress
        self._lanes: list[bool] = []  # trace lanes, one per batch in progress at once
        self._held: Any = None  # consumer: the token of the batch it holds
        # output queue
        self.queue_name = queue_name
        self.capacity = capacity
        self.queue_level = 0
        self.queue_max = 0
        self.queue_puts = 0
        self.queue_area = 0.0
        self.queue_first = 0.0
        self.queue_last = 0.0

    # --- time accounting ----------------------------------------------------
    def _advance(self, now: float) -> None:
        if self.started is None:
            self.started = self.last = now
            return
        dt = now - self.last
        if dt > 0:
            self.busy, self.wait_in, self.wait_out, self.other = self._charged(dt)
        self.last = now

    def _charged(self, dt: float) -> tuple[float, float, float, float]:
        """(busy, wait_in, wait_out, other) with ``dt`` more of the current state (a batch in
        progress counts as busy, then waiting for output, then waiting for input)."""
        busy, wait_in, wait_out, other = self.busy, self.wait_in, self.wait_out, self.other
        if self.in_progress:
            busy += dt
        elif self.waiting_out:
            wait_out += dt
        elif self.waiting_in:
            wait_in += dt
        else:
            other += dt
        return busy, wait_in, wait_out, other

    def work_begin(self) -> tuple[float, int, Any]:
        """A batch starts; returns the token for ``work_end``."""
        now = _perf()
        self._advance(now)
        self.in_progress += 1
        self._open_sum += now
        self.max_in_progress = max(self.max_in_progress, self.in_progress)
        lanes = self._lanes
        try:
            lane = lanes.index(False)
            lanes[lane] = True
        except ValueError:
            lane = len(lanes)
            lanes.append(True)
        nvtx = self.recorder.nvtx
        handle = nvtx.range_start(f"{self.name} batch") if nvtx is not None else None
        return now, lane, handle

    def work_end(self, token: tuple[float, int, Any], work: Any, count: bool = True) -> None:
        """The batch of ``token`` is done; ``work`` is it (None: there was none).

        ``count=False``: the batch was already counted (the consumer counts on receipt).
        """
        now = _perf()
        self._advance(now)
        self.in_progress -= 1
        began, lane, handle = token
        self.batch_time += now - began
        self._open_sum -= began
        if work is not None and count:
            self.batches += 1
            self.samples += len(work)
        self._lanes[lane] = False
        tracer = _trace.ACTIVE
        if tracer is not None:
            args = {} if work is None else {
                "epoch": work.epoch, "batch": work.batch_index, "samples": len(work)}
            tracer.complete(self.name, "stage", began, now, self._lane_tid(tracer, lane), args)
        if handle is not None:
            self.recorder.nvtx.range_end(handle)  # type: ignore[union-attr]

    def wait_in_begin(self) -> float:
        now = _perf()
        self._advance(now)
        self.waiting_in += 1
        return now

    def wait_in_end(self, began: float) -> None:
        now = _perf()
        self._advance(now)
        self.waiting_in -= 1
        self._trace_wait("wait input", -1, began, now)

    def wait_out_begin(self) -> float:
        now = _perf()
        self._advance(now)
        self.waiting_out += 1
        return now

    def wait_out_end(self, began: float) -> None:
        now = _perf()
        self._advance(now)
        self.waiting_out -= 1
        self._trace_wait("wait output", -2, began, now)

    def _trace_wait(self, what: str, lane: int, began: float, now: float) -> None:
        """The wait as a span on its lane (``_lane_tid``) of the active trace, if any."""
        tracer = _trace.ACTIVE
        if tracer is not None:
            tracer.complete(what, "wait", began, now, self._lane_tid(tracer, lane), {})

    # --- the consumer ---------------------------------------------------------
    def consumer_request(self) -> float:
        """The consumer asks for the next batch: it is done with the one it held."""
        if self._held is not None:
            token, work = self._held
            self._held = None
            self.work_end(token, work, count=False)
        return self.wait_in_begin()

    def consumer_receive(self, began: float, work: Any) -> None:
        """The consumer got a batch (``work``; it now holds it) or, with None, an end-of-epoch marker."""
        self.wait_in_end(began)
        if work is not None:
            self.batches += 1
            self.samples += len(work)
            self._held = (self.work_begin(), work)

    # --- the output queue -------------------------------------------------------
    def queue_changed(self, level: int, put: bool = False) -> None:
        """The output queue now holds ``level`` batches (after a put or a get)."""
        now = _perf()
        if self.queue_first:
            self.queue_area += self.queue_level * (now - self.queue_last)
        else:
            self.queue_first = now
        self.queue_last = now
        self.queue_level = level
        self.queue_max = max(self.queue_max, level)
        if put:
            self.queue_puts += 1
        tracer = _trace.ACTIVE
        if tracer is not None:
            tracer.counter(f"queue {self.queue_name}", now, {"batches": level}, self.recorder.engine_id)

    # --- snapshots ----------------------------------------------------------------
    def snapshot(self, skipped: int = 0, now: float | None = None) -> StageStats:
        """The counters as ``StageStats``, the current state charged up to ``now``."""
        now = _perf() if now is None else now
        busy, wait_in, wait_out, other = self.busy, self.wait_in, self.wait_out, self.other
        wall = 0.0
        if self.started is not None:
            busy, wait_in, wait_out, other = self._charged(max(0.0, now - self.last))
            wall = busy + wait_in + wait_out + other
        queue = None
        if self.queue_name:
            area, span = self.queue_area, 0.0
            if self.queue_first:
                area += self.queue_level * max(0.0, now - self.queue_last)
                span = now - self.queue_first
            queue = QueueStats(
                name=self.queue_name,
                capacity=self.capacity,
                occupancy=self.queue_level,
                max_occupancy=self.queue_max,
                mean_occupancy=fraction(area, span),
                puts=self.queue_puts,
                occupancy_seconds=area,
                span=span,
            )
        return StageStats(
            name=self.name,
            batches=self.batches,
            samples=self.samples,
            busy_time=busy,
            wait_input_time=wait_in,
            wait_output_time=wait_out,
            output_queue=queue,
            wall_time=wall,
            other_time=other,
            batch_time=self.batch_time + (self.in_progress * now - self._open_sum if self.in_progress else 0.0),
            max_in_progress=self.max_in_progress,
            skipped=skipped,
            errors=self.errors,
        )

    # --- trace lanes --------------------------------------------------------------
    def _lane_tid(self, tracer: _trace.Tracer, lane: int) -> int:
        """A virtual thread id per (pipeline, stage, lane); -1: input waits, -2: output waits."""
        if lane == -1:
            label, slot = f"{self.name} (wait input)", 8
        elif lane == -2:
            label, slot = f"{self.name} (wait output)", 9
        else:
            label, slot = (f"{self.name} #{lane}" if lane else self.name), lane
        engine = self.recorder.engine_id
        if engine > 1:
            label = f"pipeline {engine}: {label}"
        return tracer.lane(engine, self.index * 10 + slot, label)
