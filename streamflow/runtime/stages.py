"""The work of each stage on one batch: reading (sources) and computing (operators).

A ``SourceStage`` asks every source for batch ``b`` of epoch ``e`` and joins
their outputs into a ``Work``. A ``ComputeStage`` splits a batch's rows into
chunks, runs its chain of operators on each chunk in a worker thread (one
thread call per chunk for the whole chain: decode -> resize -> normalize of
an image happen back to back while it is hot in cache), and joins the
chunks again. Failed samples are either raised as a ``PipelineError`` naming
stage, operator and file, or (``on_error="skip"``) counted and replaced.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PipelineError, SampleError
from ..graph import DataNode, OpNode
from ..io.pools import WorkerPool
from ..operator import Chunk, Source, SourceBatch
from ..stats import SkippedSample
from ..tensor import TensorList
from ..types import Device, ErrorPolicy
from .arena import BatchArena
from .plan import ExecutionPlan, StageKind, StagePlan
from .stats import StatsRecorder
from .work import Work

__all__ = [
    "ComputeStage",
    "SourceStage",
    "Stage",
    "StageContext",
    "StageFactory",
    "assemble_outputs",
    "run_chain",
    "run_isolated",
    "sample_failure",
]

# A replacement sample that fails is itself replaced; past this many failures
# in a row for one slot the data set is probably unreadable, so stop.
MAX_REPLACEMENT_ATTEMPTS = 64


Replacer = Callable[[int, int, int, StageKind], Awaitable["Work | None"]]
#: Makes the stage object of a ``mixed`` or ``gpu`` stage plan (see ``Engine``).
StageFactory = Callable[["StagePlan", "StageContext", "set[DataNode]"], "Stage"]


@dataclass
class StageContext:
    """What stages share: the plan, pools, counters and the error policy."""

    plan: ExecutionPlan
    workers: WorkerPool
    stats: StatsRecorder
    on_error: ErrorPolicy
    replace: Replacer  # (epoch, sample_id, attempt, up_to_stage) -> one-row Work
    chunks_per_batch: int


def sample_failure(stage: str, node: OpNode, error: SampleError) -> PipelineError:
    """The consumer-facing error for one failed sample."""
    where = f"file {error.source!r}" if error.source else "an unnamed sample"
    exc = PipelineError(
        f"stage {stage!r}, operator {node.name!r} failed on {where}: {error.reason}",
        stage=stage,
        operator=node.name,
        source=error.source,
    )
    exc.__cause__ = error
    return exc


def _join_source_batches(batches: list[SourceBatch], nodes: tuple[OpNode, ...]) -> tuple[Work, dict[int, tuple[OpNode, SampleError]]]:
    sizes = {len(b) for b in batches}
    if len(sizes) != 1:
        names = ", ".join(f"{n.name}: {len(b)}" for n, b in zip(nodes, batches))
        raise PipelineError(
            f"the pipeline's sources gave batches of different sizes ({names}); "
            "all sources must yield the same number of samples per batch",
            stage="read",
        )
    first = batches[0]
    sources = list(first.sources)
    for batch in batches[1:]:
        sources = [a if a is not None else b for a, b in zip(sources, batch.sources)]
    work = Work(epoch=0, batch_index=0, sample_ids=np.asarray(first.sample_ids, dtype=np.int64), sources=sources)
    failures: dict[int, tuple[OpNode, SampleError]] = {}
    for node, batch in zip(nodes, batches):
        for i, out in enumerate(node.outputs):
            work.values[out] = batch.outputs[i]
        for row, err in batch.failures.items():
            failures.setdefault(row, (node, err))
    return work, failures


class Stage:
    """One stage of a running pipeline: what the engine calls, batch after batch.

    The engine owns this interface; the CPU stages below implement it, and
    ``streamflow.gpu.stage.GpuStage`` implements it for the ``mixed`` and
    ``gpu`` stages (handed to the engine as a ``StageFactory``).

    Args:
        plan: the stage's operators.
        ctx: what the stages of a pipeline share.
        keep: the data nodes later stages (or the outputs) still need.
    """

    kind: StageKind

    def __init__(self, plan: StagePlan, ctx: StageContext, keep: set[DataNode]) -> None:
        self.plan = plan
        self.kind = plan.kind
        self.ctx = ctx
        self.keep = keep  # data nodes needed after this stage
        self.label = plan.kind.label

    async def process(self, work: Work, attempt: int = 0) -> Work:
        """Run the stage on one batch (``attempt`` > 0: a replacement sample)."""
        raise NotImplementedError

    async def assemble(self, work: Work) -> tuple[TensorList, ...]:
        """The batch's outputs as TensorLists (called on the last stage only)."""
        return await self.ctx.workers.call(assemble_outputs, self.ctx.plan, work)

    def close(self) -> None:
        """Release what the stage holds (called once, when the pipeline closes)."""

    def _check_attempt(self, attempt: int) -> None:
        """Stop replacing failed samples after MAX_REPLACEMENT_ATTEMPTS in a row."""
        if attempt > MAX_REPLACEMENT_ATTEMPTS:
            raise PipelineError(
                f"on_error='skip' gave up: {MAX_REPLACEMENT_ATTEMPTS} replacement samples in a "
                "row failed in this stage; see pipe.stats().skipped",
                stage=self.label,
            )

    def _drop_unneeded(self, work: Work) -> None:
        for key in [k for k in work.values if k not in self.keep]:
            del work.values[key]

    async def _handle_failures(
        self, work: Work, failures: dict[int, tuple[OpNode, SampleError]], attempt: int
    ) -> Work:
        """Raise for the first failure, or drop and replace the failed rows."""
        if not failures:
            return work
        if self.ctx.on_error is ErrorPolicy.RAISE:
            row = min(failures)
            node, err = failures[row]
            raise sample_failure(self.label, node, err)
        for row, (node, err) in sorted(failures.items()):
            self.ctx.stats.add_skip(SkippedSample(
                err.source, self.label, node.name, err.reason,
                sample_id=int(work.sample_ids[row]), epoch=work.epoch, batch_index=work.batch_index,
            ))
        failed = sorted(failures)
        kept = work.select([r for r in range(len(work)) if r not in failures])
        kept.epoch, kept.batch_index = work.epoch, work.batch_index
        dropped = 0  # rows whose source cannot replace them (user data): the batch shrinks
        for position in failed:
            replacement = await self.ctx.replace(work.epoch, int(work.sample_ids[position]), attempt + 1, self.kind)
            if replacement is None:
                dropped += 1
                kept.dropped.append((int(work.sample_ids[position]), failures[position][1]))
            else:
                kept.put_rows([position - dropped], replacement)
        return kept


class SourceStage(Stage):
    """Reads one batch from every source of the pipeline."""

    @property
    def sources(self) -> list[Source]:
        return [node.op for node in self.plan.nodes]  # type: ignore[misc]

    def start_epoch(self, epoch: int) -> None:
        for source in self.sources:
            source.start_epoch(epoch)

    async def read(self, epoch: int, batch_index: int) -> Work | None:
        batches = [await source.read_batch(epoch, batch_index) for source in self.sources]
        ended = [b is None for b in batches]
        if all(ended):
            return None
        if any(ended):
            names = [n.name for n, e in zip(self.plan.nodes, ended) if e]
            raise PipelineError(
                f"sources {names} ended epoch {epoch} before the others; all sources must "
                "have epochs of the same length",
                stage=self.label,
            )
        work, failures = _join_source_batches(batches, self.plan.nodes)  # type: ignore[arg-type]
        work.epoch, work.batch_index = epoch, batch_index
        return await self._handle_failures(work, failures, 0)

    async def read_replacement(self, epoch: int, sample_id: int, attempt: int) -> Work | None:
        if attempt > MAX_REPLACEMENT_ATTEMPTS:
            raise PipelineError(
                f"on_error='skip' gave up: {MAX_REPLACEMENT_ATTEMPTS} replacement samples in a "
                "row failed; the data set looks unreadable (see pipe.stats().skipped)",
                stage=self.label,
            )
        replacements = [await source.read_replacement(epoch, sample_id, attempt) for source in self.sources]
        if any(r is None for r in replacements):
            return None
        batches: list[SourceBatch] = replacements  # type: ignore[assignment]
        work, failures = _join_source_batches(batches, self.plan.nodes)
        work.epoch = epoch
        return await self._handle_failures(work, failures, attempt)


class ComputeStage(Stage):
    """Runs a chain of operators on the rows of each batch, chunk by chunk."""

    def __init__(self, plan: StagePlan, ctx: StageContext, keep: set[DataNode]) -> None:
        super().__init__(plan, ctx, keep)
        # Host outputs of the pipeline made here, each listed once: their
        # operators may write straight into the batch array.
        listed = list(ctx.plan.outputs)
        self._arena_outputs = [
            data for node in plan.nodes for data in node.outputs
            if sum(out is data for out in listed) == 1 and data.device is Device.CPU
        ]  # fmt: skip

    async def process(self, work: Work, attempt: int = 0) -> Work:
        self._check_attempt(attempt)
        n = len(work)
        if n == 0:
            return work
        for data in self._arena_outputs:
            work.arenas[data] = BatchArena(n)
        failures: dict[int, tuple[OpNode, SampleError]] = {}
        for nodes, whole in self._segments:
            parts = 1 if whole else min(n, self.ctx.chunks_per_batch)
            bounds = [round(i * n / parts) for i in range(parts + 1)]
            done = frozenset(failures)
            results = await asyncio.gather(*(
                self.ctx.workers.call(self._run_chain, nodes, work, bounds[i], bounds[i + 1], done)
                for i in range(parts)
            ))
            for values, chunk_failures in results:
                failures.update(chunk_failures)
                for key, column in values.items():
                    work.values.setdefault(key, []).extend(column)
            if failures and self.ctx.on_error is ErrorPolicy.RAISE:
                break
        self.ctx.stats.count_op_batch([node.name for node in self.plan.nodes])
        self._drop_unneeded(work)
        return await self._handle_failures(work, failures, attempt)

    @functools.cached_property
    def _segments(self) -> list[tuple[tuple[OpNode, ...], bool]]:
        """The stage's operators in runs: chunked ones, and whole-batch ones (one call per batch)."""
        segments: list[tuple[tuple[OpNode, ...], bool]] = []
        for node in self.plan.nodes:
            whole = bool(node.op.whole_batch)
            if segments and not whole and not segments[-1][1]:
                segments[-1] = ((*segments[-1][0], node), False)
            else:
                segments.append(((node,), whole))
        return segments

    def _run_chain(self, nodes: tuple[OpNode, ...], work: Work, start: int, stop: int,
                   failed: frozenset[int]) -> tuple[dict[DataNode, list[Any]], dict[int, tuple[OpNode, SampleError]]]:
        """Worker thread: ``nodes`` on rows [start, stop) but the ``failed`` ones."""
        return run_chain(
            self.ctx, self.label, nodes, work, start, stop, _run_isolated,
            stop_at_failure=self.ctx.on_error is ErrorPolicy.RAISE, failed=failed,
        )


Call = Callable[[OpNode, Chunk], list[list[Any]]]


def run_chain(
    ctx: StageContext,
    label: str,
    nodes: Sequence[OpNode],
    work: Work,
    start: int,
    stop: int,
    call: Call,
    *,
    stop_at_failure: bool = False,
    prepare_inputs: Callable[[OpNode, list[list[Any]]], list[list[Any]]] | None = None,
    prepare_arg: Callable[[Any], Any] | None = None,
    failed: frozenset[int] = frozenset(),
) -> tuple[dict[DataNode, list[Any]], dict[int, tuple[OpNode, SampleError]]]:
    """Run ``nodes`` in order on rows [start, stop) of ``work`` (on the calling thread).

    A row that fails leaves the chain; its outputs stay ``None``. Returns the
    new columns (full length, even if every row failed early) and the failures
    by row of ``work``. ``call`` runs one operator on a chunk (CPU: with
    per-row isolation; GPU: its device implementation), ``prepare_inputs`` and
    ``prepare_arg`` move data where the operator wants it. Rows of ``work`` in
    ``failed`` (failed in an earlier call) are left out.
    """
    size = stop - start
    local: dict[DataNode, list[Any]] = {data: [None] * size for node in nodes for data in node.outputs}
    failures: dict[int, tuple[OpNode, SampleError]] = {}
    alive = [r for r in range(size) if start + r not in failed]
    ids = work.sample_ids[start:stop]
    sources = work.sources[start:stop]

    def column(data: DataNode) -> list[Any]:
        col = local.get(data)
        return col if col is not None else work.values[data][start:stop]

    for node in nodes:
        if not alive:
            break
        rows = alive
        if node.guard:  # inside an `if` on pipeline data: only the rows of its branch
            rows, bad = _rows_in_branch(node, alive, column, sources)
            if bad:
                for r, err in bad.items():
                    failures[start + r] = (node, err)
                alive = [r for r in alive if r not in bad]
                rows = [r for r in rows if r not in bad]
                if stop_at_failure:
                    break
            if not rows:
                continue
        inputs = [[column(d)[r] for r in rows] for d in node.inputs]
        if prepare_inputs is not None:
            inputs = prepare_inputs(node, inputs)
        args = {name: [column(d)[r] for r in rows] for name, d in node.arg_inputs.items()}
        if prepare_arg is not None:
            args = {name: [prepare_arg(v) for v in values] for name, values in args.items()}
        chunk = Chunk(
            inputs=inputs,
            args=args,
            sample_ids=ids[rows],
            sources=[sources[r] for r in rows],
            epoch=work.epoch,
            key=ctx.plan.random_keys[id(node)],
            output_slots=_slots_for(node, work, start, rows),
        )
        began = ctx.stats.op_begin(node.name)  # instrumentation: NVTX push when on
        try:
            outputs = call(node, chunk)
        finally:  # instrumentation: op time, trace event, NVTX pop
            ctx.stats.op_end(node.name, began, len(chunk), work.epoch, work.batch_index, label)
        if chunk.counts:
            ctx.stats.add_counts(node.name, chunk.counts)
        for index, data in enumerate(node.outputs):
            col = local[data]
            for j, r in enumerate(rows):
                col[r] = outputs[index][j]
        if chunk.failures:
            failed_here = {rows[j] for j in chunk.failures}
            for j, err in chunk.failures.items():
                failures[start + rows[j]] = (node, err)
            alive = [r for r in alive if r not in failed_here]
            if stop_at_failure:
                break
    return local, failures


def _rows_in_branch(
    node: OpNode, alive: list[int], column: Callable[[DataNode], list[Any]], sources: list[str | None]
) -> tuple[list[int], dict[int, SampleError]]:
    """The rows of ``alive`` that meet ``node``'s branch conditions, and rows whose condition is not a scalar."""
    rows: list[int] = []
    bad: dict[int, SampleError] = {}
    for r in alive:
        inside = True
        for predicate, expected in node.guard:
            value = column(predicate)[r]
            size = getattr(value, "size", 1)
            if size != 1:
                bad[r] = SampleError(
                    f"the condition {predicate.name} of an `if` must be one value per sample, got "
                    f"shape {tuple(getattr(value, 'shape', ()))}", sources[r],
                )
                inside = False
                break
            if bool(value.item() if hasattr(value, "item") else value) is not expected:
                inside = False
                break
        if inside:
            rows.append(r)
    return rows, bad


def _slots_for(
    node: OpNode, work: Work, start: int, alive: list[int]
) -> Callable[[int, int, tuple[int, ...], Any], Any] | None:
    """``Chunk.output_slots`` for ``node``: its outputs' rows in the batch arenas, if any."""
    arenas = [work.arenas.get(data) for data in node.outputs]
    if not any(arenas):
        return None

    def slot(output: int, row: int, shape: tuple[int, ...], dtype: Any) -> Any:
        arena = arenas[output] if 0 <= output < len(arenas) else None
        if arena is None or not 0 <= row < len(alive):
            return None
        return arena.slot(start + alive[row], shape, dtype)

    return slot


def _run_isolated(node: OpNode, chunk: Chunk) -> list[list[Any]]:
    """Run the operator; if it raises, rerun row by row to find the culprit(s)."""
    try:
        outputs = node.op.run(chunk)
    except Exception as whole_error:
        if len(chunk) == 1 or node.op.whole_batch:
            # a whole-batch step (python_function(batch_processing=True)...) must not be rerun on single
            # samples: its result depends on the batch, so every row fails with the batch's error
            for row in range(len(chunk)):
                chunk.fail(row, whole_error)
            return [[None] * len(chunk) for _ in node.outputs]
        outputs = [[None] * len(chunk) for _ in node.outputs]
        for row in range(len(chunk)):
            single = Chunk(
                inputs=[[col[row]] for col in chunk.inputs],
                args={k: [v[row]] for k, v in chunk.args.items()},
                sample_ids=chunk.sample_ids[row : row + 1],
                sources=[chunk.sources[row]],
                epoch=chunk.epoch,
                key=chunk.key,
            )
            try:
                result = node.op.run(single)
            except Exception as e:
                single.fail(0, e)
            for key, n in single.counts.items():
                chunk.count(key, n)
            if single.failures:
                chunk.failures[row] = single.failures[0]
                continue
            for index in range(len(node.outputs)):
                outputs[index][row] = result[index][0]
        return outputs
    if len(outputs) != len(node.outputs) or any(len(col) != len(chunk) for col in outputs):
        raise PipelineError(
            f"operator {node.name!r} returned {len(outputs)} outputs of lengths "
            f"{[len(c) for c in outputs]}, expected {len(node.outputs)} of {len(chunk)}",
            operator=node.name,
        )
    return outputs


def assemble_outputs(plan: ExecutionPlan, work: Work) -> tuple[TensorList, ...]:
    """Worker thread: turn the output columns into TensorLists (dense when possible)."""
    result = []
    for data in plan.outputs:
        layout = data.producer.op.layout(data.index)
        samples = work.values[data]
        arena = work.arenas.get(data)
        dense = arena.take(samples) if arena is not None else None
        if dense is not None:  # written in place: no copy
            result.append(TensorList(dense, layout=layout, device=data.device))
        else:
            result.append(TensorList.from_samples(samples, layout=layout, device=data.device))
    return tuple(result)


#: The engine's way to run one operator on a chunk (row by row when it raises), for dynamic mode.
run_isolated = _run_isolated
