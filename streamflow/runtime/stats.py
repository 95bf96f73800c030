"""Counters the engine keeps while it runs, and their frozen snapshots."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .channel import ChannelStats

__all__ = ["StageStats", "OperatorStats", "SkippedSample", "PipelineStats", "StatsRecorder"]


@dataclass(frozen=True)
class OperatorStats:
    """Time spent in one operator.

    Attributes:
        name: the operator node's name.
        batches: batches it processed.
        busy_time: summed wall time of its calls over all threads [s].
    """

    name: str
    batches: int
    busy_time: float

    @property
    def time_per_batch(self) -> float:
        """Mean busy time per batch [s] (summed over worker threads)."""
        return self.busy_time / self.batches if self.batches else 0.0


@dataclass(frozen=True)
class StageStats:
    """Activity of one stage task.

    Attributes:
        name: ``read``, ``cpu``, ``mixed`` or ``gpu``.
        batches: batches it finished.
        samples: samples it finished.
        busy_time: time spent working on batches [s].
        wait_input_time: time spent waiting for the previous stage [s].
        wait_output_time: time spent waiting for room in the next queue [s].
        output_queue: the queue it feeds.
    """

    name: str
    batches: int
    samples: int
    busy_time: float
    wait_input_time: float
    wait_output_time: float
    output_queue: ChannelStats | None


@dataclass(frozen=True)
class SkippedSample:
    """A sample dropped under ``on_error="skip"``, with why."""

    source: str | None
    stage: str
    operator: str
    reason: str


@dataclass(frozen=True)
class PipelineStats:
    """A snapshot of ``Pipeline.stats()``.

    Attributes:
        stages: per stage, in pipeline order.
        operators: per operator node.
        batches_delivered: batches handed to the consumer.
        samples_delivered: samples handed to the consumer.
        skipped: samples dropped and replaced under ``on_error="skip"``.
    """

    stages: tuple[StageStats, ...]
    operators: tuple[OperatorStats, ...]
    batches_delivered: int
    samples_delivered: int
    skipped: tuple[SkippedSample, ...] = field(default=())

    @property
    def skipped_count(self) -> int:
        """How many samples were skipped."""
        return len(self.skipped)


class StatsRecorder:
    """Mutable counters shared by the engine's tasks and worker threads."""

    # Keep the first N skipped samples by name; beyond that only count them.
    MAX_SKIPPED_KEPT = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.op_time: dict[str, float] = {}
        self.op_batches: dict[str, int] = {}
        self.skipped: list[SkippedSample] = []
        self.skipped_total = 0
        self.batches_delivered = 0
        self.samples_delivered = 0

    def add_op_time(self, name: str, seconds: float) -> None:
        with self._lock:
            self.op_time[name] = self.op_time.get(name, 0.0) + seconds

    def count_op_batch(self, names: list[str]) -> None:
        with self._lock:
            for name in names:
                self.op_batches[name] = self.op_batches.get(name, 0) + 1

    def add_skip(self, sample: SkippedSample) -> None:
        with self._lock:
            self.skipped_total += 1
            if len(self.skipped) < self.MAX_SKIPPED_KEPT:
                self.skipped.append(sample)

    def operators(self) -> tuple[OperatorStats, ...]:
        with self._lock:
            return tuple(
                OperatorStats(name, self.op_batches.get(name, 0), t) for name, t in self.op_time.items()
            )
