"""Debug pipelines (``pipeline_def(debug=True)``): the definition runs operator by operator on real data.

DALI's debug mode: for every batch the pipeline definition is called again
and each ``fn`` call computes at once, from the first call on, so the
definition can ``print`` or inspect what operators give (``print(images)``,
``images.get()``, ``np.asarray(labels.get())``). The values are the
pipeline's own:

* every operator runs through ``executor.run_node`` (the engine's operator
  contract), sources are read as the read stage reads them
  (``reader.SourceDriver``), devices are checked and placed by the
  ``Pipeline``'s own rules (``device_id=None`` refuses GPU operators,
  ``"auto"`` falls back to the CPU with its warning);
* operator k of a run (in the order the definition makes them) takes the key
  of its node's position in the graph's stable order, learnt from the first
  run's outputs. In the usual definition the two orders agree and the first
  run is the first batch; where they do not (say, a random operator made
  before the reader it is used with), the first batch is computed a second
  time with the graph's keys, so its values are the pipeline's too (what the
  definition printed during the first run may differ for random operators);
* the k-th operator of every later run must be the same operator as in the
  first run (a definition that builds another graph is refused).

So a debug pipeline yields the batches of the same pipeline without
``debug`` (the tests compare them). It runs on the calling thread, batch by
batch: it is for looking, not for speed.
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
from ..types import Device, ErrorPolicy
from .data import Origin
from .executor import EagerNode, Value, run_node
from .reader import SourceDriver

__all__ = ["DebugPipeline", "PipelineSettings"]


class PipelineSettings(Protocol):
    """What a debug pipeline takes from a ``Pipeline`` made (not built) with the same arguments."""

    batch_size: int
    seed: int
    num_threads: int
    device_id: int | str | None
    on_error: ErrorPolicy

    def close(self) -> None: ...


class _EndOfEpoch(Exception):
    """A source has no more batches this epoch: the run of the definition stops here."""


class _Run:
    """The hook of one run of the definition: computes every node as it is made."""

    def __init__(self, pipe: DebugPipeline, epoch: int, batch_index: int,
                 sources: dict[int, list[Value]] | None) -> None:
        self.pipe = pipe
        self.epoch, self.batch_index = epoch, batch_index
        self.sources = sources  # seq -> the source's values, read before the run (None: the first run)
        self.nodes: list[OpNode] = []
        self.read: dict[int, list[Value]] = {}
        # First run: nodes without inputs (random ones) made before any source wait for the first
        # source to say which samples the batch holds; one asked for before that guesses (and the
        # first batch is computed again).
        self.waiting: list[tuple[int, OpNode]] = []
        self.guessed = False
        first = next(iter(sources.values()), None) if sources else None
        self.origin: Origin | None = first[0].origin if first else None

    def device(self, op: Operator, device: Any) -> Any:
        return device

    def added(self, node: OpNode) -> tuple[DataNode, ...]:
        seq = len(self.nodes)
        self.nodes.append(node)
        self.pipe.check_devices(seq, node)
        node.outputs = tuple(EagerNode(node, i, d.device, d.name, d.channels) for i, d in enumerate(node.outputs))
        if isinstance(node.op, Source):
            self._store(node, self._source(seq, node))
            for waiting_seq, waiting in self.waiting:
                self._compute(waiting_seq, waiting)
            self.waiting.clear()
        elif self.origin is None and not node.inputs and not node.arg_inputs:
            self.waiting.append((seq, node))
            for data in node.outputs:
                data.pending = lambda: self._compute(seq, node)  # type: ignore[attr-defined]
        else:
            self._compute(seq, node)
        return node.outputs

    def _compute(self, seq: int, node: OpNode) -> None:
        if node.outputs[0].value is not None:  # type: ignore[attr-defined]
            return  # a waiting node already asked for
        for data in node.outputs:
            data.pending = None  # type: ignore[attr-defined]
        if self.origin is None:
            self.guessed = True  # samples 0..n-1 of epoch 0: a guess until a source is read
        origin = self.origin or Origin.fresh(self.pipe.batch_size)
        self._store(node, run_node(node, self.pipe.key_of(seq), origin=origin))

    @staticmethod
    def _store(node: OpNode, values: list[Value]) -> None:
        for data, value in zip(node.outputs, values):
            data.value = value  # type: ignore[attr-defined]

    def _source(self, seq: int, node: OpNode) -> list[Value]:
        if self.sources is not None:
            node.op.close()  # type: ignore[attr-defined]  # a Source; the first run's is the one read
            return self.sources[seq]
        values = self.pipe.first_read(seq, node, self.epoch, self.batch_index)
        if values is None:
            raise _EndOfEpoch
        self.read[seq] = values
        if self.origin is None:
            self.origin = values[0].origin
        return values


class DebugPipeline:
    """A pipeline run eagerly, operator by operator (``@pipeline_def(debug=True)``).

    Iterate it like a ``Pipeline``: ``run()`` (DALI's: readers wrap around,
    every batch full), ``next_batch()``, ``iter()`` / ``for batch in pipe``
    (one epoch), and their async twins. Inside the definition every ``fn``
    result holds its data: ``print(node)``, ``node.get()`` (a ``TensorList``).

    Args:
        settings: a ``Pipeline`` made with the same arguments (checked
            arguments and seed; it is never built or started).
        definition, args, kwargs: the pipeline definition and its arguments.
        check_devices: the pipeline's device rule, called with a node's outputs
            when it is placed on the GPU (refuses, or falls back to the CPU).
    """

    debug = True

    def __init__(self, settings: PipelineSettings, definition: Callable[..., Any], args: Sequence[Any] = (),
                 kwargs: dict[str, Any] | None = None,
                 check_devices: Callable[[Sequence[DataNode]], None] | None = None) -> None:
        if settings.on_error is not ErrorPolicy.RAISE:
            settings.close()
            raise PipelineDefinitionError("debug mode runs with on_error='raise' (it stops at the first bad sample)")
        self._settings = settings
        self.batch_size = settings.batch_size
        self.seed = settings.seed
        self.num_threads = settings.num_threads
        self.device_id = settings.device_id
        self._definition, self._args, self._kwargs = definition, tuple(args), dict(kwargs or {})
        self._check = check_devices
        self._fallback: bool | None = None  # decided at the first GPU operator
        self._names: list[str] | None = None  # operator names of the first complete run
        self._keys: list[RandomKey] = []
        self._source_seqs: list[int] = []
        self._first_drivers: dict[int, SourceDriver] = {}
        self._driver: SourceDriver | None = None
        self._epoch, self._batch = 0, 0
        self._epoch_open = False
        self._carry: tuple[Batch, int] | None = None
        self._closed = False

    # --- what runs ask --------------------------------------------------------------------
    def key_of(self, seq: int) -> RandomKey:
        """Operator ``seq``'s key: its graph position once known, else its call position."""
        return self._keys[seq] if seq < len(self._keys) else RandomKey(self.seed, seq)

    def check_devices(self, seq: int, node: OpNode) -> None:
        """The first run's operator ``seq`` is this one; a GPU operator follows the pipeline's device rule."""
        if self._names is not None and (seq >= len(self._names) or self._names[seq] != node.op.name):
            was = self._names[seq] if seq < len(self._names) else "nothing"
            raise PipelineDefinitionError(
                f"debug mode: the pipeline definition made a different graph on this batch (its operator "
                f"#{seq} is {node.op.name}, it was {was} on the first batch); the definition must make the "
                "same operators in the same order every time"
            )
        if node.op.device is Device.CPU:
            return
        if self._fallback is None and self._check is not None:
            self._check(node.outputs)  # raises for device_id=None, warns and moves to the CPU for "auto"
            self._fallback = node.op.device is Device.CPU
        elif self._fallback:
            node.op.run_on(Device.CPU)
            for data in node.outputs:
                data.device = Device.CPU

    def first_read(self, seq: int, node: OpNode, epoch: int, batch_index: int) -> list[Value] | None:
        """First run: a source met for the first time is prepared and read."""
        driver = SourceDriver([node])
        driver.prepare(self.batch_size, self.seed)
        driver.start_epoch(epoch)
        self._first_drivers[seq] = driver
        batches = driver.read(epoch, batch_index, prefetch=False)
        return None if batches is None else driver.values(node, batches[0], epoch)

    # --- one batch ------------------------------------------------------------------------
    def _run(self, run: _Run) -> tuple[DataNode, ...]:
        with node_hook(run):
            if getattr(self._settings, "enable_conditionals", False):  # `if` on data, as when tracing
                from ..autograph import trace

                result = trace(self._definition, *self._args, **self._kwargs)
            else:
                result = self._definition(*self._args, **self._kwargs)
        outputs = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        for i, out in enumerate(outputs):
            if not isinstance(out, EagerNode) or out.value is None:
                raise PipelineDefinitionError(f"pipeline output {i} must be the result of an fn.* function, "
                                              f"got {type(out).__name__}")
        if self._names is not None and len(run.nodes) != len(self._names):
            raise PipelineDefinitionError(
                f"debug mode: the pipeline definition made {len(run.nodes)} operators on this batch and "
                f"{len(self._names)} on the first; it must make the same operators every time"
            )
        return outputs

    def _first_run(self, epoch: int, batch_index: int) -> tuple[tuple[DataNode, ...], _Run] | None:
        run = _Run(self, epoch, batch_index, None)
        try:
            outputs = self._run(run)
        except _EndOfEpoch:
            self._abandon_first_run()
            return None
        except BaseException:
            self._abandon_first_run()
            raise
        order = topological_order(outputs)
        position = {id(n): i for i, n in enumerate(order)}
        # A node the outputs do not need never runs in a pipeline; here it does, with a key of its own.
        self._keys = [RandomKey(self.seed, position.get(id(n), len(order) + k)) for k, n in enumerate(run.nodes)]
        self._names = [n.op.name for n in run.nodes]
        self._source_seqs = sorted(run.read)
        if not self._source_seqs:
            raise PipelineDefinitionError(
                "debug mode needs a source (fn.readers.* or fn.external_source) that sets the batch; a pipeline of "
                "constants and random numbers only runs without debug=True")
        self._driver = SourceDriver([run.nodes[k] for k in self._source_seqs])
        self._driver.batch_size = self.batch_size  # its sources were prepared as they were met
        self._first_drivers.clear()
        if run.guessed or any(key != RandomKey(self.seed, k) for k, key in enumerate(self._keys)):
            again = _Run(self, epoch, batch_index, run.read)  # the first batch again, with the graph's keys
            outputs = self._run(again)
        return outputs, run

    def _abandon_first_run(self) -> None:
        for driver in self._first_drivers.values():
            driver.close()
        self._first_drivers.clear()

    def _compute(self, epoch: int, batch_index: int) -> Batch | None:
        if self._driver is None:
            first = self._first_run(epoch, batch_index)
            if first is None:
                return None
            outputs, run = first
            batches_origin = next(iter(run.read.values()))[0].origin
            sizes = {len(v[0].samples) for v in run.read.values()}
        else:
            batches = self._driver.read(epoch, batch_index, prefetch=False)
            if batches is None:
                return None
            values = {seq: self._driver.values(self._driver.nodes[i], b, epoch)
                      for i, (seq, b) in enumerate(zip(self._source_seqs, batches))}
            outputs = self._run(_Run(self, epoch, batch_index, values))
            batches_origin = next(iter(values.values()))[0].origin
            sizes = {len(b) for b in batches}
        if len(sizes) != 1:
            raise PipelineDefinitionError(f"the pipeline's sources gave batches of different sizes {sorted(sizes)}")
        columns = []
        for out in outputs:
            value: Value = out.value  # type: ignore[attr-defined]
            columns.append(TensorList.from_samples(value.samples, layout=value.layout, device=value.device))
        batch = Batch(columns)
        batch.epoch, batch.batch_index = epoch, batch_index
        batch.sample_ids, batch.sources = np.asarray(batches_origin.sample_ids), list(batches_origin.sources)
        batch.dropped = []
        return batch

    # --- iterating --------------------------------------------------------------------------
    def next_batch(self) -> Batch | None:
        """The next batch of the current epoch, or ``None`` at its end (the next call starts the next epoch)."""
        if self._closed:
            raise PipelineDefinitionError("the pipeline is closed; create a new one to read again")
        if not self._epoch_open:
            if self._driver is not None:
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
        driver = self._driver
        return driver is not None and all(s.epoch_info() is not None for s in driver.sources)

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
        """Nothing to do: a debug pipeline learns its graph on the first batch."""

    def epoch_size(self, name: str | None = None) -> int | dict[str, int]:
        """Samples per epoch of reader ``name`` (or of every reader, as a dict); known after the first batch."""
        sizes: dict[str, int] = {}
        if self._driver is not None:
            for node, source in zip(self._driver.nodes, self._driver.sources):
                info = source.epoch_info()
                if info is not None:
                    sizes[node.name] = info.epoch_size_padded  # as Pipeline.epoch_size (and DALI)
        if name is None:
            return sizes
        if name not in sizes:
            raise KeyError(f"no reader named {name!r}; the pipeline's readers are {sorted(sizes)}")
        return sizes[name]

    def close(self) -> None:
        """Release the sources (idempotent)."""
        if not self._closed:
            self._closed = True
            self._abandon_first_run()
            if self._driver is not None:
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
