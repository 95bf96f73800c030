"""The running engine: one asyncio task per stage, joined by bounded channels.

::

    SourceStage --ch--> ComputeStage(cpu) --ch--> ... --ch--> consumer
       (read)                                       last stage builds TensorLists

Every channel holds at most ``prefetch_queue_depth`` batches, so at most
``stages * (depth + 1)`` batches exist at once, whatever the consumer does.
A stage that fails closes every channel with its error: the consumer gets
that one error, the other tasks are cancelled, and ``aclose`` joins the pools.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import PipelineClosedError, PipelineError
from ..graph import DataNode
from ..io.pools import IOPool, WorkerPool
from ..stats import PipelineStats
from ..tensor import Batch
from ..types import ErrorPolicy
from . import nvtx as _nvtx
from .channel import Channel, EndOfStream
from .plan import ExecutionPlan, StageKind, StagePlan
from .stages import ComputeStage, SourceStage, Stage, StageContext, StageFactory, assemble_outputs
from .stats import StageClock, StatsRecorder
from .work import EndOfEpoch, StageFailure, Work

__all__ = ["BATCHES_PER_STAGE", "Engine"]

# Batches a compute stage works on at once (see Engine._run_compute).
BATCHES_PER_STAGE = 2


def _forget(alive: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    """Done-callback: drop the task from ``alive`` and mark its exception as seen.

    A batch task can fail after the stage stopped waiting for it (shutdown, an
    earlier failure); its error was already reported or no longer matters.
    """

    def done(task: asyncio.Task[Any]) -> None:
        alive.discard(task)
        if not task.cancelled():
            task.exception()

    return done


def _needed_after(plan: ExecutionPlan) -> list[set[DataNode]]:
    """For each stage, the data nodes that later stages or the outputs read."""
    keep: list[set[DataNode]] = []
    for i in range(len(plan.stages)):
        needed = set(plan.outputs)
        for later in plan.stages[i + 1 :]:
            for node in later.nodes:
                needed.update(node.upstream)
        keep.append(needed)
    return keep


class Engine:
    """Runs an ``ExecutionPlan`` on the current event loop.

    Args:
        plan: what to run.
        batch_size: samples per batch.
        num_threads: worker threads for CPU operators.
        prefetch_queue_depth: capacity of each channel between stages.
        on_error: ``raise`` or ``skip``.
        seed: the pipeline's seed (sources derive their orders from it).
        start_epoch: the first epoch to produce (for resuming).
        start_batch: the first batch of ``start_epoch`` to produce.
        stage_factories: how to make the stages of other kinds than
            ``read`` and ``cpu`` (the pipeline passes the GPU stage's factory
            for ``mixed`` and ``gpu``).
    """

    def __init__(
        self,
        plan: ExecutionPlan,
        *,
        batch_size: int,
        num_threads: int,
        prefetch_queue_depth: int,
        on_error: ErrorPolicy,
        seed: int,
        start_epoch: int = 0,
        start_batch: int = 0,
        stage_factories: Mapping[StageKind, StageFactory] | None = None,
    ) -> None:
        self.plan = plan
        self.stats_recorder = StatsRecorder(nvtx=_nvtx.wanted(plan))  # instrumentation (issue 9)
        self.workers = WorkerPool(num_threads)
        self.io = IOPool(max(4, 2 * num_threads))
        self._ctx = StageContext(
            plan=plan,
            workers=self.workers,
            stats=self.stats_recorder,
            on_error=on_error,
            replace=self._replace,
            chunks_per_batch=max(1, 4 * num_threads),
        )
        keep = _needed_after(plan)
        stages = list(plan.stages)
        self.source_stage = SourceStage(stages[0], self._ctx, keep[0])
        self.compute_stages = [
            self._make_stage(s, keep[i + 1], stage_factories or {}) for i, s in enumerate(stages[1:])
        ]
        for node in plan.sources:
            node.op.prepare(batch_size, seed, self.io)  # type: ignore[attr-defined]
        names = [s.label for s in [self.source_stage, *self.compute_stages]]
        self.channels: list[Channel[Any]] = [
            Channel(prefetch_queue_depth, name=f"{name}->next") for name in names
        ]
        # --- instrumentation (issue 9): per-stage time accounting, trace, NVTX ---
        self._times = [
            StageClock(name, i, self.stats_recorder, f"{name}->{(names[i + 1:] or ['consumer'])[0]}",
                       prefetch_queue_depth, start=self.stats_recorder.created)
            for i, name in enumerate(names)
        ]
        self._consumer = StageClock("consumer", len(names), self.stats_recorder)
        # --- end instrumentation ---
        self._tasks: list[asyncio.Task[None]] = []
        self._error: BaseException | None = None
        self._closed = False
        self._start_epoch = start_epoch
        self._start_batch = start_batch
        self.loop: asyncio.AbstractEventLoop | None = None

    def _make_stage(self, plan: StagePlan, keep: set[DataNode], factories: Mapping[StageKind, StageFactory]) -> Stage:
        """A ComputeStage for ``cpu``; the given factory's stage for the other kinds."""
        if plan.kind is StageKind.CPU:
            return ComputeStage(plan, self._ctx, keep)
        factory = factories.get(plan.kind)
        if factory is None:
            raise PipelineError(f"no stage implementation for the {plan.kind.label} stage", stage=plan.kind.label)
        return factory(plan, self._ctx, keep)

    # --- life cycle -------------------------------------------------------
    def start(self) -> None:
        """Create the stage tasks on the running loop."""
        self.loop = asyncio.get_running_loop()
        self._tasks.append(asyncio.create_task(self._guard(0, self._run_source()), name="streamflow:read"))
        for i, stage in enumerate(self.compute_stages, start=1):
            task = asyncio.create_task(self._guard(i, self._run_compute(i, stage)), name=f"streamflow:{stage.label}")
            self._tasks.append(task)

    async def aclose(self) -> None:
        """Cancel the stages, wait for them, release threads and sources."""
        if self._closed:
            return
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for ch in self.channels:
            await ch.close(PipelineClosedError("the pipeline was closed"))
            ch.discard()
        self.release_threads()

    def release_threads(self) -> None:
        """Join the thread pools and close the sources (idempotent, synchronous).

        Also used when the engine's event loop is gone (``asyncio.run`` ended
        without ``aclose``): its tasks died with the loop, its threads did not.
        Joining takes at most one chunk of work; no default-executor thread is used.
        """
        self._closed = True
        self.workers.shutdown()
        self.io.shutdown()
        for node in self.plan.sources:
            node.op.close()  # type: ignore[attr-defined]
        for stage in self.compute_stages:  # GPU stages drop the device memory they hold
            stage.close()

    def _label(self, index: int) -> str:
        return ([self.source_stage.label] + [s.label for s in self.compute_stages])[index]

    def _as_pipeline_error(self, index: int, exc: BaseException) -> PipelineError:
        label = self._label(index)
        if not isinstance(exc, PipelineError):
            wrapped = PipelineError(f"stage {label!r} failed: {type(exc).__name__}: {exc}", stage=label)
            wrapped.__cause__ = exc
            return wrapped
        if exc.stage is None:
            exc.stage = label
            exc.args = (f"stage {label!r}: {exc.args[0]}",)
        return exc

    async def _guard(self, index: int, body: Any) -> None:
        """Run a stage loop; a failure is sent downstream in order, then the stage stops."""
        try:
            await body
        except asyncio.CancelledError:
            raise
        except EndOfStream:
            pass
        except BaseException as exc:
            self._times[index].errors += 1  # instrumentation (issue 9)
            try:
                await self.channels[index].put(StageFailure(self._as_pipeline_error(index, exc)))
            except (EndOfStream, PipelineClosedError):
                pass  # closed meanwhile: nobody is left to tell

    async def _stop_after_failure(self, error: BaseException) -> None:
        """The consumer saw a failure: stop every stage, keep raising ``error``."""
        self._error = error
        for task in self._tasks:
            task.cancel()
        for ch in self.channels:
            await ch.close(error)

    # --- stage loops --------------------------------------------------------
    async def _put(self, index: int, item: Any) -> None:
        clock = self._times[index]
        began = clock.wait_out_begin()  # instrumentation
        await self.channels[index].put(item)
        clock.wait_out_end(began)  # instrumentation
        clock.queue_changed(len(self.channels[index]), put=True)  # instrumentation

    async def _run_source(self) -> None:
        stage, times = self.source_stage, self._times[0]
        epoch, first_batch = self._start_epoch, self._start_batch
        while True:
            stage.start_epoch(epoch)
            batch_index = first_batch
            while True:
                token = times.work_begin()  # instrumentation
                work = await stage.read(epoch, batch_index)
                if work is None:
                    times.work_end(token, None)  # instrumentation
                    break
                if not self.compute_stages:
                    work.outputs = await self.workers.call(assemble_outputs, self.plan, work)
                times.work_end(token, work)  # instrumentation: batches, samples, busy time
                await self._put(0, work)
                batch_index += 1
            await self._put(0, EndOfEpoch(epoch, batch_index))
            epoch, first_batch = epoch + 1, 0

    async def _run_compute(self, index: int, stage: Stage) -> None:
        """Process batches in order, with up to BATCHES_PER_STAGE of them at once.

        Two batches in progress keep the worker pool busy: chunks of batch i+1
        are queued while the last chunks and the output assembly of batch i
        run, instead of threads idling at every batch boundary.
        """
        source, times = self.channels[index - 1], self._times[index]
        last = index == len(self.compute_stages)
        started: asyncio.Queue[asyncio.Task[Any]] = asyncio.Queue(maxsize=BATCHES_PER_STAGE - 1)

        async def handle(item: Any) -> Any:
            if isinstance(item, Work):
                token = times.work_begin()  # instrumentation
                item = await stage.process(item)
                if last:
                    item.outputs = await stage.assemble(item)
                times.work_end(token, item)  # instrumentation: batches, samples, busy time
            return item

        alive: set[asyncio.Task[Any]] = set()  # every handle() task, to cancel on exit

        async def start_batches() -> None:
            while True:
                began = times.wait_in_begin()  # instrumentation
                item = await source.get()
                times.wait_in_end(began)  # instrumentation
                self._times[index - 1].queue_changed(len(source))  # instrumentation
                task = asyncio.create_task(handle(item))
                alive.add(task)
                task.add_done_callback(_forget(alive))
                await started.put(task)

        starter = asyncio.create_task(start_batches())
        current: asyncio.Task[Any] | None = None
        waiting: asyncio.Task[Any] | None = None
        try:
            while True:
                waiting = asyncio.create_task(started.get())
                await asyncio.wait({waiting, starter}, return_when=asyncio.FIRST_COMPLETED)
                if not waiting.done():
                    starter.result()  # the input ended or failed: re-raise that
                current, waiting = waiting.result(), None
                try:
                    item = await current
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    times.errors += 1  # instrumentation (issue 9)
                    item = StageFailure(self._as_pipeline_error(index, exc))
                current = None
                await self._put(index, item)
                if isinstance(item, StageFailure):
                    return
        finally:
            queued = [started.get_nowait() for _ in range(started.qsize())]
            leftovers = [starter, *alive, *queued, *(t for t in (current, waiting) if t is not None)]
            for task in leftovers:
                task.cancel()
            await asyncio.gather(*leftovers, return_exceptions=True)

    async def _replace(self, epoch: int, sample_id: int, attempt: int, up_to: StageKind) -> Work | None:
        work = await self.source_stage.read_replacement(epoch, sample_id, attempt)
        if work is None:
            return None
        for stage in self.compute_stages:
            if stage.kind > up_to:
                break
            work = await stage.process(work, attempt)
        return work

    # --- consumer side ------------------------------------------------------
    async def next_item(self) -> Work | EndOfEpoch:
        """The next finished batch or end-of-epoch marker."""
        if self._closed:
            raise PipelineClosedError("the pipeline was closed")
        if self._error is not None:
            raise self._error
        began = self._consumer.consumer_request()  # instrumentation: the consumer as a stage
        item = await self.channels[-1].get()
        self._consumer.consumer_receive(began, item if isinstance(item, Work) else None)  # instrumentation
        self._times[-1].queue_changed(len(self.channels[-1]))  # instrumentation
        if isinstance(item, StageFailure):
            await self._stop_after_failure(item.error)
            raise item.error
        if isinstance(item, Work):
            self.stats_recorder.batches_delivered += 1
            self.stats_recorder.samples_delivered += len(item)
        return item

    @staticmethod
    def to_batch(work: Work) -> Batch:
        batch = Batch(work.outputs or ())
        batch.epoch = work.epoch
        batch.batch_index = work.batch_index
        batch.sources = work.sources
        batch.sample_ids = work.sample_ids
        batch.dropped = work.dropped
        return batch

    def stats(self) -> PipelineStats:
        """A snapshot of the counters (see ``runtime/stats.py`` for what they mean)."""
        rec = self.stats_recorder
        now = time.perf_counter()
        stages = tuple(
            clock.snapshot(rec.skipped_by_stage.get(clock.name, 0), now) for clock in self._times
        )
        stage_of = {node.name: s.label for s in self.compute_stages for node in s.plan.nodes}
        return PipelineStats(
            stages=stages,
            operators=rec.operators(stage_of),
            batches_delivered=rec.batches_delivered,
            samples_delivered=rec.samples_delivered,
            skipped=tuple(rec.skipped),
            consumer=self._consumer.snapshot(0, now),
            wall_time=now - rec.created,
            skipped_total=rec.skipped_total,
            error=None if self._error is None else str(self._error),
        )
