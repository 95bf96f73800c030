"""Readers in dynamic mode: a source (``readers.file``, ``external_source`` ...) iterated epoch by epoch.

``SourceDriver`` drives sources through the operator contract (``Source``:
``prepare``, ``start_epoch``, ``read_batch``) exactly as a pipeline's read
stage does, so a reader gives the pipeline's batches (order, shards,
shuffling by seed and epoch); it reads one batch ahead on dynamic mode's loop
thread while the caller works on the current one. ``Reader`` is what
``dynamic.readers.file(...)`` returns (DALI's ``ndd.readers.File``)::

    reader = dynamic.readers.file(file_root=root, random_shuffle=True, rng=RNG(1))
    for jpegs, labels in reader.next_epoch(batch_size=16):
        images = dynamic.decoders.image(jpegs)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from ..errors import PipelineDefinitionError, PipelineError, SampleError
from ..graph import OpNode
from ..operator import Source, SourceBatch
from ..rng import RandomKey
from .data import Origin
from .executor import EagerNode, Value, io_pool, loop_thread, run_node
from .invoke import SourceGraph
from .tensors import wrap_result

__all__ = ["Reader", "SourceDriver"]


class SourceDriver:
    """Reads batches of one or more sources in step (as a pipeline's read stage)."""

    def __init__(self, nodes: Sequence[OpNode]) -> None:
        self.nodes = list(nodes)
        self.sources: list[Source] = [n.op for n in self.nodes]  # type: ignore[misc]
        self.batch_size: int | None = None
        self._ahead: tuple[int, int, concurrent.futures.Future[list[SourceBatch | None]]] | None = None

    def prepare(self, batch_size: int, seed: int) -> None:
        """Once, before the first epoch."""
        self.batch_size = batch_size
        for source in self.sources:
            source.prepare(batch_size, seed, io_pool())

    def start_epoch(self, epoch: int) -> None:
        self._drop_ahead()
        for source in self.sources:
            source.start_epoch(epoch)

    async def _read_all(self, epoch: int, batch_index: int) -> list[SourceBatch | None]:
        return [await s.read_batch(epoch, batch_index) for s in self.sources]

    def read(self, epoch: int, batch_index: int, prefetch: bool = True) -> list[SourceBatch] | None:
        """The sources' batches ``batch_index`` of ``epoch`` (None at the end of the epoch).

        Raises:
            PipelineError: a sample could not be read (naming its file), or the
                sources disagree on the length of the epoch or of the batch.
        """
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[:2] == (epoch, batch_index):
            batches = ahead[2].result()
        else:
            if ahead is not None:
                ahead[2].result()  # let a read in flight finish before asking the sources again
            batches = loop_thread().call(self._read_all(epoch, batch_index))
        ended = [b is None for b in batches]
        if all(ended):
            return None
        if any(ended):
            names = [n.name for n, e in zip(self.nodes, ended) if e]
            raise PipelineError(f"sources {names} ended epoch {epoch} before the others; all sources must "
                                "have epochs of the same length", stage="read")
        done: list[SourceBatch] = batches  # type: ignore[assignment]
        if len({len(b) for b in done}) != 1:
            sizes = ", ".join(f"{n.name}: {len(b)}" for n, b in zip(self.nodes, done))
            raise PipelineError(f"the sources gave batches of different sizes ({sizes})", stage="read")
        for node, batch in zip(self.nodes, done):
            if batch.failures:
                row = min(batch.failures)
                raise _read_failure(node, batch.failures[row])
        if prefetch:
            self._ahead = (epoch, batch_index + 1, loop_thread().submit(self._read_all(epoch, batch_index + 1)))
        return done

    def _drop_ahead(self) -> None:
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            try:
                ahead[2].result()
            except Exception:
                pass  # the batch after the end of an epoch; its error is nobody's

    def values(self, node: OpNode, batch: SourceBatch, epoch: int) -> list[Value]:
        """A source's batch as one ``Value`` per output of its node."""
        origin = Origin(epoch, batch.sample_ids, tuple(batch.sources))
        return [Value(list(col), node.op.layout(k), origin) for k, col in enumerate(batch.outputs)]

    def close(self) -> None:
        self._drop_ahead()
        for source in self.sources:
            source.close()


def _read_failure(node: OpNode, err: SampleError) -> PipelineError:
    where = f"file {err.source!r}" if err.source else "an unnamed sample"
    exc = PipelineError(f"{node.op.instance_name or node.op.name} failed on {where}: {err.reason}",
                        stage="read", operator=node.name, source=err.source)
    exc.__cause__ = err
    return exc


def _wrapped(result: Any) -> Any:
    """A reader's outputs: a tuple (one ``Batch``/``Tensor`` per output), or a dict for readers whose
    ``fn`` function returns one (``readers.tfrecord``: feature name -> output)."""
    if isinstance(result, dict):
        return {k: wrap_result(v.value if isinstance(v, EagerNode) else v) for k, v in result.items()}
    parts = result if isinstance(result, (tuple, list)) else (result,)
    return tuple(wrap_result(p.value if isinstance(p, EagerNode) else p) for p in parts)


class Reader:
    """A data set read in dynamic mode, epoch after epoch (DALI's ``ndd.readers.*``).

    ``next_epoch(batch_size=n)`` iterates one epoch as tuples of ``Batch``es
    (one per output: ``jpegs, labels``); without ``batch_size``, as tuples of
    ``Tensor``s, one sample at a time (a reader whose ``fn`` function returns a
    dict, ``readers.tfrecord``, gives dicts: feature name -> output). The first call fixes batches or
    samples and the batch size (as in DALI). Iterating the reader itself
    (``for jpegs, labels in reader``) runs the next epoch with the
    ``batch_size`` given when it was made.

    Shuffling and sharding follow the pipeline's rules: the seed is the
    call's ``RNG`` seed (or the reader's ``seed=``), so a reader and a
    pipeline with the same seed read the same batches.
    """

    def __init__(self, graph: SourceGraph, label: str, batch_size: int | None = None) -> None:
        self.label = label
        self._graph = graph
        self._driver = SourceDriver([n for n in graph.nodes if isinstance(n.op, Source)])
        # Every node takes its position now, as in a pipeline: the source first.
        self._keys: dict[int, RandomKey] = {id(n): graph.rng.next_key() for n in graph.nodes}
        self._seed = graph.rng.seed
        self._default_batch = batch_size
        self._mode: tuple[bool, int] | None = None  # (batches?, internal batch size)
        self._epoch = 0
        self._direct: Iterator[Any] | None = None  # the epoch that direct calls (``reader()``) are reading

    def _start(self, batch_size: int | None) -> int:
        batched = batch_size is not None
        size = int(batch_size) if batch_size is not None else 1
        if batch_size is not None and (isinstance(batch_size, bool) or size < 1):
            raise PipelineDefinitionError(f"{self.label}: batch_size must be a positive int, got {batch_size!r}")
        if self._mode is None:
            self._driver.prepare(size, self._seed)
            self._mode = (batched, size)
        elif self._mode != (batched, size):
            was = f"batches of {self._mode[1]}" if self._mode[0] else "single samples"
            raise PipelineDefinitionError(
                f"{self.label}: this reader was first read as {was}; a reader keeps its batch size "
                "(make another reader for another one)"
            )
        return size

    def next_epoch(self, batch_size: int | None = None) -> Iterator[Any]:
        """Iterate the next epoch: tuples of batches (with ``batch_size``) or of single samples."""
        self._start(batch_size)
        epoch = self._epoch
        self._epoch += 1
        return self._iterate(epoch, batch_size is not None)

    def next_epoch_async(self, batch_size: int | None = None) -> AsyncIterator[Any]:
        """``next_epoch`` for ``async for``: reading and computing run off the event loop."""
        self._start(batch_size)
        epoch = self._epoch
        self._epoch += 1
        return self._aiterate(epoch, batch_size is not None)

    async def _aiterate(self, epoch: int, batched: bool) -> AsyncIterator[Any]:
        steps = self._iterate(epoch, batched)
        done = object()
        while True:
            item = await asyncio.to_thread(next, steps, done)
            if item is done:
                return
            yield item  # not the sentinel: one of the iterator's items

    def _iterate(self, epoch: int, batched: bool) -> Iterator[Any]:
        self._driver.start_epoch(epoch)
        batch_index = 0
        while True:
            batches = self._driver.read(epoch, batch_index)
            if batches is None:
                return
            yield self._outputs(batches, epoch, batched)
            batch_index += 1

    def _outputs(self, batches: list[SourceBatch], epoch: int, batched: bool) -> Any:
        by_node = dict(zip((id(n) for n in self._driver.nodes), batches))
        origin = self._driver.values(self._driver.nodes[0], batches[0], epoch)[0].origin
        for node in self._graph.nodes:
            batch = by_node.get(id(node))
            values = (self._driver.values(node, batch, epoch) if batch is not None
                      else run_node(node, self._keys[id(node)], origin=origin))
            for data, value in zip(node.outputs, values):
                value.single = not batched
                data.value = value  # type: ignore[attr-defined]  # outputs are EagerNodes
        return _wrapped(self._graph.result)

    def __call__(self, batch_size: int | None = None) -> Any:
        """The next sample (a tuple of ``Tensor``s), or the next batch with ``batch_size``, going on into the
        next epoch at the end of one: DALI's direct call of a reader (``encoded, label = reader()``)."""
        self._start(batch_size)
        for _ in range(2):  # at most one epoch boundary per call
            if self._direct is None:
                epoch = self._epoch
                self._epoch += 1
                self._direct = self._iterate(epoch, batch_size is not None)
            item = next(self._direct, None)
            if item is not None:
                return item
            self._direct = None
        raise PipelineError(f"{self.label}: the reader has no samples", stage="read")

    def __iter__(self) -> Iterator[Any]:
        if self._default_batch is None:
            raise PipelineDefinitionError(
                f"{self.label}: give batch_size when making the reader to iterate it, or use "
                "reader.next_epoch(batch_size=...) (next_epoch() without it gives single samples)"
            )
        return self.next_epoch(self._default_batch)

    def __aiter__(self) -> AsyncIterator[Any]:
        if self._default_batch is None:
            raise PipelineDefinitionError(f"{self.label}: give batch_size when making the reader to iterate it")
        return self.next_epoch_async(self._default_batch)

    def close(self) -> None:
        """Release the sources (open files, iterators)."""
        self._driver.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Reader({self.label!r}, epoch={self._epoch})"
