"""Debug pipelines (``pipeline_def(debug=True)``): the definition runs operator by operator on real data.

DALI's debug mode: for every batch the pipeline definition is called again
and each ``fn`` call computes at once, so the definition can ``print`` or
inspect what operators give (``print(images)``, ``images.get()``,
``np.asarray(labels.get())``). The values are the pipeline's own:

* the definition is first traced as for a normal pipeline (the same
  ``Pipeline`` object checks the arguments, places the devices and warns
  about a CPU fallback), which gives every operator its position in the
  graph's stable order and so its random key;
* the k-th ``fn`` call of every later run of the definition is the k-th
  node of that trace (a definition that makes other operators on a later
  batch is an error) and takes that node's key;
* the sources of the trace are read as a pipeline's read stage reads them
  (``reader.SourceDriver``), the other operators run through
  ``executor.run_node`` (the engine's operator contract).

So a debug pipeline yields the batches of the same pipeline without
``debug`` (the tests compare them). It runs on the calling thread, batch by
batch, without prefetching: it is for looking, not for speed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from ..errors import PipelineDefinitionError
from ..graph import DataNode, OpNode, node_hook, topological_order
from ..operator import Operator, Source
from ..rng import RandomKey
from ..tensor import Batch, TensorList
from ..types import ErrorPolicy
from .executor import EagerNode, Value, run_node
from .reader import SourceDriver

__all__ = ["DebugPipeline", "PipelineSettings"]


class PipelineSettings(Protocol):
    """What a debug pipeline takes from the ``Pipeline`` made for its definition (checked arguments)."""

    batch_size: int
    seed: int
    num_threads: int
    device_id: int | str | None
    on_error: ErrorPolicy

    def build(self) -> None: ...

    def close(self) -> None: ...


class _Recorder:
    """Tracing hook: records the nodes in the order the definition makes them."""

    def __init__(self) -> None:
        self.nodes: list[OpNode] = []
        self.outputs: tuple[DataNode, ...] = ()

    def device(self, op: Operator, device: Any) -> Any:
        return device

    def added(self, node: OpNode) -> tuple[DataNode, ...]:
        self.nodes.append(node)
        return node.outputs

    def capture(self, definition: Callable[..., Any]) -> Callable[..., Any]:
        """``definition``, noting the outputs it returns."""

        def traced(*args: Any, **kwargs: Any) -> Any:
            result = definition(*args, **kwargs)
            self.outputs = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            return result

        return traced


class _EagerHook:
    """Hook of one run of the definition: the k-th node takes the trace's k-th key (and source data)."""

    def __init__(self, pipe: DebugPipeline, source_values: dict[int, list[Value]]) -> None:
        self.pipe = pipe
        self.source_values = source_values
        # Operators without batch inputs (random ones) draw for the batch's samples, as in the pipeline.
        self.origin = next(iter(source_values.values()))[0].origin
        self.count = 0

    def device(self, op: Operator, device: Any) -> Any:
        return device

    def added(self, node: OpNode) -> tuple[DataNode, ...]:
        seq = self.count
        self.count += 1
        traced = self.pipe.trace_node(seq, node)
        if node.op.device is not traced.op.device:  # device_id="auto" without a GPU: the trace moved it
            node.op.run_on(traced.op.device)
        node.outputs = tuple(EagerNode(node, i, traced.outputs[i].device, d.name, d.channels)
                             for i, d in enumerate(node.outputs))
        if isinstance(node.op, Source):
            node.op.close()  # the trace's source is the one read; this copy is never used
            values = self.source_values[seq]
        else:
            values = run_node(node, self.pipe.key_of(seq), origin=self.origin)
        for data, value in zip(node.outputs, values):
            data.value = value  # type: ignore[attr-defined]
        return node.outputs


class DebugPipeline:
    """A pipeline run eagerly, operator by operator (``@pipeline_def(debug=True)``).

    Iterate it like a ``Pipeline``: ``run()`` (DALI's: readers wrap around,
    every batch full), ``next_batch()``, ``iter()`` / ``for batch in pipe``
    (one epoch), and their async twins. Inside the definition every ``fn``
    result holds its data: ``print(node)``, ``node.get()`` (a ``TensorList``).
    """

    debug = True

    def __init__(self, make_pipeline: Callable[[Callable[..., Any]], PipelineSettings],
                 definition: Callable[..., Any], args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None
                 ) -> None:
        recorder = _Recorder()
        with node_hook(recorder):
            settings = make_pipeline(recorder.capture(definition))
        self._settings = settings
        if settings.on_error is not ErrorPolicy.RAISE:
            settings.close()
            raise PipelineDefinitionError("debug mode runs with on_error='raise' (it stops at the first bad sample)")
        settings.build()  # devices placed (and the CPU fallback made, with its warning) as in the pipeline
        self.batch_size = settings.batch_size
        self.seed = settings.seed
        self.num_threads = settings.num_threads
        self.device_id = settings.device_id
        self._definition, self._args, self._kwargs = definition, tuple(args), dict(kwargs or {})
        self._nodes = recorder.nodes
        order = topological_order(recorder.outputs)
        position = {id(node): i for i, node in enumerate(order)}
        # A node the outputs do not need never runs in a pipeline; here it does, with a key of its own.
        self._keys = [RandomKey(self.seed, position.get(id(n), len(order) + k)) for k, n in enumerate(self._nodes)]
        self._sources = [k for k, n in enumerate(self._nodes) if isinstance(n.op, Source)]
        if not self._sources:
            raise PipelineDefinitionError("the pipeline has no source: use fn.readers.* or fn.external_source to feed it")
        self._driver = SourceDriver([self._nodes[k] for k in self._sources])
        self._driver.prepare(self.batch_size, self.seed)
        self._epoch, self._batch = 0, 0
        self._epoch_open = False
        self._carry: tuple[Batch, int] | None = None
        self._closed = False

    # --- the trace ------------------------------------------------------------------------
    def trace_node(self, seq: int, node: OpNode) -> OpNode:
        """The traced node matching the ``seq``-th call of a run (checking it is the same operator)."""
        if seq >= len(self._nodes) or self._nodes[seq].op.name != node.op.name:
            was = self._nodes[seq].op.name if seq < len(self._nodes) else "nothing"
            raise PipelineDefinitionError(
                f"debug mode: the pipeline definition made a different graph on this batch (its operator "
                f"#{seq} is {node.op.name}, it was {was} when traced); the definition must make the same "
                "operators in the same order every time"
            )
        return self._nodes[seq]

    def key_of(self, seq: int) -> RandomKey:
        return self._keys[seq]

    # --- one batch ------------------------------------------------------------------------
    def _compute(self, epoch: int, batch_index: int) -> Batch | None:
        batches = self._driver.read(epoch, batch_index, prefetch=False)
        if batches is None:
            return None
        values = {seq: self._driver.values(self._nodes[seq], b, epoch) for seq, b in zip(self._sources, batches)}
        hook = _EagerHook(self, values)
        with node_hook(hook):
            result = self._definition(*self._args, **self._kwargs)
        outputs = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        if hook.count != len(self._nodes):
            raise PipelineDefinitionError(
                f"debug mode: the pipeline definition made {hook.count} operators on this batch and "
                f"{len(self._nodes)} when traced; it must make the same operators every time"
            )
        columns = []
        for i, out in enumerate(outputs):
            value = out.value if isinstance(out, EagerNode) else None
            if value is None:
                raise PipelineDefinitionError(f"pipeline output {i} must be the result of an fn.* function, "
                                              f"got {type(out).__name__}")
            columns.append(TensorList.from_samples(value.samples, layout=value.layout, device=value.device))
        first = batches[0]
        batch = Batch(columns)
        batch.epoch, batch.batch_index = epoch, batch_index
        batch.sample_ids, batch.sources, batch.dropped = np.asarray(first.sample_ids), list(first.sources), []
        return batch

    # --- iterating --------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise PipelineDefinitionError("the pipeline is closed; create a new one to read again")

    def next_batch(self) -> Batch | None:
        """The next batch of the current epoch, or ``None`` at its end (the next call starts the next epoch)."""
        self._check_open()
        if not self._epoch_open:
            self._driver.start_epoch(self._epoch)
            self._epoch_open, self._batch = True, 0
        batch = self._compute(self._epoch, self._batch)
        if batch is None:
            self._epoch_open = False
            self._epoch += 1
            return None
        self._batch += 1
        return batch

    def iter(self) -> Iterator[Batch]:
        """One epoch, batch by batch."""
        while True:
            batch = self.next_batch()
            if batch is None:
                return
            yield batch

    def __iter__(self) -> Iterator[Batch]:
        return self.iter()

    def _wraps_around(self) -> bool:
        return all(self._nodes[k].op.epoch_info() is not None for k in self._sources)  # type: ignore[attr-defined]

    def run(self) -> Batch:
        """The next batch, as DALI's ``run()`` and ``Pipeline.run()``: readers wrap around, every batch full.

        Raises:
            StopIteration: an external source ran out (the next call starts it again).
        """
        parts: list[tuple[Batch, int, int]] = []
        need = self.batch_size
        empty = 0
        while need > 0:
            if self._carry is None:
                batch = self.next_batch()
                if batch is None:
                    empty += 1
                    if self._wraps_around() and empty < 2:
                        continue
                    break
                empty = 0
                self._carry = (batch, 0)
            batch, start = self._carry
            take = min(need, len(batch.sample_ids) - start)
            if take > 0:
                parts.append((batch, start, start + take))
            need -= take
            self._carry = (batch, start + take) if take and start + take < len(batch.sample_ids) else None
        if not parts:
            raise StopIteration("the external source ran out; call run() again to restart it")
        return _join(parts)

    async def arun(self) -> Batch:
        """``run()`` on a worker thread (the event loop goes on meanwhile)."""
        try:
            return await asyncio.to_thread(self.run)
        except StopIteration:
            raise StopAsyncIteration("the external source ran out") from None

    async def anext_batch(self) -> Batch | None:
        """``next_batch()`` on a worker thread."""
        return await asyncio.to_thread(self.next_batch)

    async def __aiter__(self) -> AsyncIterator[Batch]:
        while True:
            batch = await self.anext_batch()
            if batch is None:
                return
            yield batch

    def build(self) -> None:
        """Nothing to do: a debug pipeline is traced when made."""

    def epoch_size(self, name: str | None = None) -> int | dict[str, int]:
        """Samples per epoch of reader ``name`` (or of every reader, as a dict)."""
        sizes = {self._nodes[k].name: info.epoch_size for k in self._sources
                 if (info := self._nodes[k].op.epoch_info()) is not None}  # type: ignore[attr-defined]
        if name is None:
            return sizes
        if name not in sizes:
            raise KeyError(f"no reader named {name!r}; the pipeline's readers are {sorted(sizes)}")
        return sizes[name]

    def close(self) -> None:
        """Release the sources (idempotent)."""
        if not self._closed:
            self._closed = True
            self._driver.close()
            self._settings.close()

    def __enter__(self) -> DebugPipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DebugPipeline(batch_size={self.batch_size}, seed={self.seed}, epoch={self._epoch})"


def _join(parts: list[tuple[Batch, int, int]]) -> Batch:
    first, start, stop = parts[0]
    if len(parts) == 1 and start == 0 and stop == len(first.sample_ids):
        return first
    out = Batch([TensorList.concat([b[k].rows(s, e) for b, s, e in parts]) for k in range(len(first))])
    out.epoch, out.batch_index = first.epoch, first.batch_index
    out.sources = [src for b, s, e in parts for src in b.sources[s:e]]
    out.sample_ids = np.concatenate([np.asarray(b.sample_ids)[s:e] for b, s, e in parts])
    out.dropped = []
    return out

