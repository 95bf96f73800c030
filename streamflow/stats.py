"""What ``Pipeline.stats()`` returns: frozen snapshots of the engine's counters.

``Pipeline.stats()`` returns a ``PipelineStats``: per stage (``read``,
``cpu``, ...) and for the consumer a ``StageStats``, per operator an
``OperatorStats``, and the samples skipped under ``on_error="skip"``.

How a stage's time is divided
-----------------------------
Every stage's wall time (since the engine was created; for the consumer,
since it first asked for a batch) is split into four parts that do not
overlap and add up to ``wall_time``. At each instant the stage is in the
first of these states that applies:

1. **busy** - at least one batch is being worked on. A compute stage works
   on up to two batches at once (``engine.BATCHES_PER_STAGE``); time with two
   batches in progress counts once, so ``busy_time <= wall_time``. The summed
   time of every batch (which can reach twice the wall time) is
   ``batch_time``. For the consumer, busy is the time between receiving a
   batch and asking for the next one (the training step).
2. **waiting for output space** - nothing is being worked on and a finished
   batch waits for room in the full output queue: something downstream is
   slower.
3. **waiting for input** - nothing is being worked on and the stage waits for
   a batch from the previous stage (or the consumer waits for the pipeline):
   something upstream is slower.
4. **other** - none of these (start-up, scheduling, end of data).

So ``busy_fraction + wait_output_fraction + wait_input_fraction +
other_fraction == 1`` and the stage with the highest ``busy_fraction`` is the
bottleneck (``streamflow.profile`` names it).

Counters are cumulative; ``PipelineStats.since(earlier)`` gives the
activity between two snapshots (what ``streamflow.profile`` reports, after its
warm-up batches).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

__all__ = ["OperatorStats", "PipelineStats", "QueueStats", "SkippedSample", "StageStats", "fraction"]


def fraction(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


@dataclass(frozen=True)
class QueueStats:
    """Occupancy of the bounded queue (channel) a stage feeds.

    Occupancy counts finished batches waiting in the queue for the next stage
    (or the consumer); a batch being put while the queue is full is not in it.

    Attributes:
        name: ``"<stage>-><next stage>"``, e.g. ``"read->cpu"``, ``"cpu->consumer"``.
        capacity: the most batches it holds (``prefetch_queue_depth``).
        occupancy: batches in it at the snapshot.
        max_occupancy: the most batches it held at once, since the engine
            started (not narrowed by ``PipelineStats.since``).
        mean_occupancy: time-weighted mean of the occupancy over the window
            (since the first put, or over the ``since`` window).
        puts: batches put into it (end-of-epoch markers included).
        occupancy_seconds: integral of the occupancy over time [batch * s]; the
            raw value behind ``mean_occupancy``.
        span: the time ``occupancy_seconds`` covers [s].
    """

    name: str
    capacity: int
    occupancy: int
    max_occupancy: int
    mean_occupancy: float
    puts: int
    occupancy_seconds: float = 0.0
    span: float = 0.0

    @property
    def mean_fill(self) -> float:
        """``mean_occupancy / capacity``: 1.0 means always full, 0.0 always empty."""
        return fraction(self.mean_occupancy, self.capacity)


@dataclass(frozen=True)
class OperatorStats:
    """Time spent in one operator node (a fused pair counts as one node).

    Operators run on chunks of a batch's rows in worker threads, several
    chunks at once; their times are summed over the threads, so
    ``busy_time`` is thread time (CPU seconds when the operator does not
    wait), and can exceed wall time.

    Attributes:
        name: the operator node's name, e.g. ``"decoders.image#0"``.
        batches: batches it processed.
        busy_time: summed wall time of its calls over all threads [s].
        calls: calls (one per chunk per batch, plus row-by-row reruns after an
            error).
        rows: rows (samples) it was called on.
        stage: the stage that runs it (``"cpu"``, ...); ``""`` when unknown.
        counts: events the operator counted, by key. The image decoders count
            the images each decoder produced: ``{"decoded_by:nvimgcodec": 510,
            "decoded_by:pillow": 2}`` (``PipelineStats.decoded_by`` sums them).
    """

    name: str
    batches: int
    busy_time: float
    calls: int = 0
    rows: int = 0
    stage: str = ""
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def time_per_batch(self) -> float:
        """Mean busy time per batch [s], summed over worker threads."""
        return self.busy_time / self.batches if self.batches else 0.0

    @property
    def time_per_sample(self) -> float:
        """Mean busy time per row [s]."""
        return self.busy_time / self.rows if self.rows else 0.0


@dataclass(frozen=True)
class StageStats:
    """Activity of one stage task, or of the consumer (``name == "consumer"``).

    The four times split ``wall_time`` without overlap; see the module
    docstring for the rule.

    Attributes:
        name: ``read``, ``cpu``, ``mixed``, ``gpu`` or ``consumer``.
        batches: batches it finished (for the consumer: batches received).
        samples: samples in those batches.
        busy_time: time with at least one batch in progress [s] (two batches
            in progress at once count once).
        wait_input_time: time with nothing in progress, waiting for a batch
            from the previous stage [s] (always 0 for ``read``).
        wait_output_time: time with nothing in progress, a finished batch
            waiting for room in the full output queue [s] (always 0 for the
            consumer).
        output_queue: the queue it feeds (None for the consumer).
        wall_time: the time these cover [s]: since the engine was created
            (the consumer: since its first request), or the ``since`` window.
        other_time: the rest of ``wall_time`` (start-up, scheduling) [s].
        batch_time: summed time of every batch from start to finish (batches
            in progress: up to the snapshot) [s]; up to
            ``max_in_progress * wall_time``. ``batch_time / batches`` is the
            latency of one batch in this stage.
        max_in_progress: the most batches it worked on at once.
        skipped: samples that failed in this stage and were skipped
            (``on_error="skip"``; replaced or dropped).
        errors: errors this stage raised (a raised error stops the pipeline,
            so 0 or 1).
    """

    name: str
    batches: int
    samples: int
    busy_time: float
    wait_input_time: float
    wait_output_time: float
    output_queue: QueueStats | None
    wall_time: float = 0.0
    other_time: float = 0.0
    batch_time: float = 0.0
    max_in_progress: int = 0
    skipped: int = 0
    errors: int = 0

    @property
    def busy_fraction(self) -> float:
        """``busy_time / wall_time`` (0 when no time passed)."""
        return fraction(self.busy_time, self.wall_time)

    @property
    def wait_input_fraction(self) -> float:
        """``wait_input_time / wall_time``."""
        return fraction(self.wait_input_time, self.wall_time)

    @property
    def wait_output_fraction(self) -> float:
        """``wait_output_time / wall_time``."""
        return fraction(self.wait_output_time, self.wall_time)

    @property
    def other_fraction(self) -> float:
        """``other_time / wall_time``."""
        return fraction(self.other_time, self.wall_time)

    @property
    def time_per_batch(self) -> float:
        """Mean time from start to finish of one batch in this stage [s]."""
        return self.batch_time / self.batches if self.batches else 0.0


@dataclass(frozen=True)
class SkippedSample:
    """A sample dropped under ``on_error="skip"``, with why."""

    source: str | None
    stage: str
    operator: str
    reason: str
    sample_id: int | None = None  # the slot it held in its epoch (external sources: row id)
    epoch: int | None = None
    batch_index: int | None = None


@dataclass(frozen=True)
class PipelineStats:
    """A snapshot of ``Pipeline.stats()`` (all times in seconds).

    Attributes:
        stages: per stage, in pipeline order.
        operators: per operator node, in execution order.
        batches_delivered: batches handed to the consumer.
        samples_delivered: samples handed to the consumer.
        skipped: samples dropped and replaced under ``on_error="skip"`` (the
            latest ``StatsRecorder.MAX_SKIPPED_KEPT`` of them; ``skipped_total``
            counts them all).
        consumer: the consumer as a stage: busy = time between receiving a
            batch and asking for the next; wait input = time waiting for the
            pipeline. None before the engine started.
        wall_time: time since the engine was created (or the ``since`` window).
        skipped_total: every skipped sample, also those beyond the kept list.
        error: the error that stopped the pipeline, if any (as text).
    """

    stages: tuple[StageStats, ...]
    operators: tuple[OperatorStats, ...]
    batches_delivered: int
    samples_delivered: int
    skipped: tuple[SkippedSample, ...] = field(default=())
    consumer: StageStats | None = None
    wall_time: float = 0.0
    skipped_total: int = 0
    error: str | None = None

    @property
    def skipped_count(self) -> int:
        """How many samples were skipped."""
        return max(self.skipped_total, len(self.skipped))

    @property
    def decoded_by(self) -> dict[str, int]:
        """Images decoded per decoder (``nvimgcodec``, ``nvimgcodec-gpu``, ``pillow``,
        ``tifffile``), summed over the image decoder operators."""
        total: dict[str, int] = {}
        for op in self.operators:
            for key, n in op.counts.items():
                if key.startswith("decoded_by:"):
                    decoder = key[len("decoded_by:"):]
                    total[decoder] = total.get(decoder, 0) + n
        return total

    def stage(self, name: str) -> StageStats:
        """The stage (or ``"consumer"``) called ``name``."""
        for s in self.all_stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage {name!r}; stages: {[s.name for s in self.all_stages]}")

    @property
    def all_stages(self) -> tuple[StageStats, ...]:
        """The stages followed by the consumer (when known)."""
        return self.stages + ((self.consumer,) if self.consumer is not None else ())

    def since(self, earlier: PipelineStats) -> PipelineStats:
        """The activity between ``earlier`` (a snapshot of the same pipeline) and this one.

        Counters and times are differences; queue occupancy now and the
        lifetime maxima are this snapshot's; mean occupancy is over the window.
        """
        before = {s.name: s for s in earlier.all_stages}
        ops_before = {o.name: o for o in earlier.operators}

        def stage_diff(s: StageStats) -> StageStats:
            b = before.get(s.name)
            if b is None:
                return s
            queue = s.output_queue
            if queue is not None and b.output_queue is not None:
                area = queue.occupancy_seconds - b.output_queue.occupancy_seconds
                span = queue.span - b.output_queue.span
                queue = replace(
                    queue,
                    puts=queue.puts - b.output_queue.puts,
                    occupancy_seconds=area,
                    span=span,
                    mean_occupancy=fraction(area, span),
                )
            return replace(
                s,
                batches=s.batches - b.batches,
                samples=s.samples - b.samples,
                busy_time=s.busy_time - b.busy_time,
                wait_input_time=s.wait_input_time - b.wait_input_time,
                wait_output_time=s.wait_output_time - b.wait_output_time,
                wall_time=s.wall_time - b.wall_time,
                other_time=s.other_time - b.other_time,
                batch_time=s.batch_time - b.batch_time,
                skipped=s.skipped - b.skipped,
                errors=s.errors - b.errors,
                output_queue=queue,
            )

        def op_diff(o: OperatorStats) -> OperatorStats:
            b = ops_before.get(o.name)
            if b is None:
                return o
            return replace(
                o,
                batches=o.batches - b.batches,
                busy_time=o.busy_time - b.busy_time,
                calls=o.calls - b.calls,
                rows=o.rows - b.rows,
                counts={k: n - b.counts.get(k, 0) for k, n in o.counts.items()},
            )

        return PipelineStats(
            stages=tuple(stage_diff(s) for s in self.stages),
            operators=tuple(op_diff(o) for o in self.operators),
            batches_delivered=self.batches_delivered - earlier.batches_delivered,
            samples_delivered=self.samples_delivered - earlier.samples_delivered,
            skipped=self.skipped[len(self.skipped) - min(len(self.skipped), self.skipped_total - earlier.skipped_total) :],
            consumer=stage_diff(self.consumer) if self.consumer is not None else None,
            wall_time=self.wall_time - earlier.wall_time,
            skipped_total=self.skipped_total - earlier.skipped_total,
            error=self.error,
        )
