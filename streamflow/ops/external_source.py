"""``external_source``: feed a pipeline from Python data.

``source`` may be a callable (sync or ``async def``), an iterable or an async
iterable. In batch mode (default) each call / item is one batch: a list of
samples or an array whose first axis is the batch. In per-sample mode
(``batch=False``) each call / item is one sample. With ``num_outputs=k``
each call / item is a tuple of ``k`` such batches (or samples).

The end of the data (``StopIteration`` / ``StopAsyncIteration``) ends the
epoch; the next epoch starts the iterable again (``iter(source)``; an iterator
object, whose ``iter()`` is itself, is first asked ``next()`` again, as DALI
does, and restarted with ``iter()`` only if it is exhausted). With
``cycle=True`` (or ``"quiet"``) an exhausted iterable restarts at once and
the epoch never ends.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, PipelineError, SampleError
from ..graph import add_node
from ..io.pools import IOPool
from ..operator import Source, SourceBatch
from ..types import BatchInfo, SampleInfo, parse_dtype  # SampleInfo, BatchInfo: DALI's types.*
from .arguments import fn_function

__all__ = ["BatchInfo", "ExternalSource", "SampleInfo", "external_source"]


class _EndOfData(Exception):
    pass


def _per_output(what: str, value: Any, num_outputs: int) -> list[Any]:
    """``value`` for each output: a list or tuple gives one per output (DALI's multi-output form)."""
    if not isinstance(value, (list, tuple)):
        return [value] * num_outputs
    if len(value) != num_outputs:
        raise PipelineDefinitionError(
            f"external_source: {what} has {len(value)} entries, expected one per output ({num_outputs})"
        )
    return list(value)
def _positional_parameters(source: Any) -> int:
    """How many positional parameters ``source`` takes (``*args`` counts as one; unknown: one)."""
    try:
        params = inspect.signature(source).parameters.values()
    except (TypeError, ValueError):
        return 1
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL))


def _to_sample(value: Any, dtype: np.dtype | None, where: str) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        arr: Any = np.frombuffer(value, dtype=np.uint8)
    elif type(value).__module__.startswith("cupy"):
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError):  # e.g. ragged nested lists
            arr = np.empty(0, dtype=object)
        if arr.dtype == object:
            raise SampleError(f"a sample must be an array, bytes or a number, got {type(value).__name__}", where)
    if dtype is not None and arr.dtype != dtype:
        raise SampleError(f"expected dtype {dtype.name}, got {arr.dtype}", where)
    return arr


class ExternalSource(Source):
    """Pulls samples from a user callable or iterable."""

    name = "external_source"

    def __init__(
        self,
        source: Any,
        *,
        num_outputs: int | None = None,
        batch: bool = True,
        cycle: bool | str | None = None,
        batch_info: bool = False,
        dtype: Any = None,
        layout: str | list[str] | None = None,
        ndim: int | list[int] | None = None,
        parallel: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        # No source: DALI's push mode, fed batch by batch with pipe.feed_input(name, data).
        # Unnamed, it is fed through its DataNode (DALI: pipe.feed_input(node, data)), or its generated name.
        self.fed = source is None
        if self.fed and not batch:
            raise PipelineDefinitionError("external_source: feed_input gives whole batches (batch=True)")
        if num_outputs is not None and num_outputs < 1:
            raise PipelineDefinitionError(f"external_source: num_outputs must be >= 1, got {num_outputs}")
        if cycle not in (None, False, True, "quiet", "raise", "no_raise"):
            raise PipelineDefinitionError(
                f"external_source: cycle must be False, True, 'quiet' or 'raise', got {cycle!r}"
            )
        self.source = source
        self.tuple_outputs = num_outputs is not None
        self.num_outputs = num_outputs or 1
        self.batch = batch
        self.cycle = cycle in (True, "quiet", "no_raise")
        self.batch_info = batch_info
        # dtype, layout and ndim: one for every output, or (as in DALI) a list of one per output.
        dtypes = _per_output("dtype", dtype, self.num_outputs)
        self._dtypes = [parse_dtype(d).numpy if d is not None else None for d in dtypes]
        self.dtype = self._dtypes[0]
        self._layouts = [lay or "" for lay in _per_output("layout", layout, self.num_outputs)]
        self._layout = self._layouts[0]
        self._ndims = _per_output("ndim", ndim, self.num_outputs)
        self.ndim = self._ndims[0]
        for lay, nd in zip(self._layouts, self._ndims):
            if nd is not None and (not isinstance(nd, int) or nd < 0):
                raise PipelineDefinitionError(f"external_source: ndim must be a non-negative int, got {nd!r}")
            if lay and nd is not None and len(lay) != nd:
                raise PipelineDefinitionError(f"external_source: layout {lay!r} does not have ndim={nd} dimensions")
        # A generator function is an iterable factory (as in DALI): called at the start of
        # every epoch, its generator is iterated; never called once per batch.
        self._factory = inspect.isgeneratorfunction(source) or inspect.isasyncgenfunction(source)
        self._is_callable = (
            callable(source) and not self._factory and not hasattr(source, "__iter__") and not hasattr(source, "__aiter__")
        )
        self._is_async_callable = self._is_callable and inspect.iscoroutinefunction(source)
        # DALI: a per-sample callable gets the SampleInfo only if it takes a positional parameter
        self._takes_info = self._is_callable and _positional_parameters(source) > 0
        self.parallel = bool(parallel)
        if self.parallel and not (self._is_callable or self._factory):
            raise PipelineDefinitionError(
                "external_source: parallel=True needs a callable or a generator function as the source"
            )
        if not (self.fed or self._is_callable or self._factory or hasattr(source, "__iter__")
                or hasattr(source, "__aiter__")):
            raise PipelineDefinitionError(
                f"external_source: source must be callable or iterable, got {type(source).__name__}"
            )
        self._iterator: Any = None
        self._iterated = False  # iter(source) was called once
        self._reused = False  # this epoch goes on with the iterator object, not next()'d yet
        self._queue: collections.deque[Any] = collections.deque()  # fed batches not read yet
        self._arrived: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._io: IOPool | None = None
        self._batch_size = 1
        self._ended_epoch: int | None = None

    def prepare(self, batch_size: int, seed: int, io: IOPool) -> None:
        self._batch_size = batch_size
        self._io = io

    def start_epoch(self, epoch: int) -> None:
        self._iterator = None
        self._ended_epoch = None

    def _label(self) -> str:
        return self.instance_name or "external_source"

    # --- pulling one item (a batch, or a sample) -------------------------
    def _new_iterator(self, restart: bool = False) -> Any:
        source = self.source() if self._factory else self.source
        if hasattr(source, "__aiter__"):
            return source.__aiter__()
        if not restart and self._iterated and hasattr(source, "__next__"):
            # An iterator object is iter()'d once, as in DALI: later epochs go on calling its
            # __next__ (its __iter__ may do work, e.g. reshuffle, that DALI does not repeat);
            # only if it is exhausted is it started again with iter() (see _pull).
            self._reused = True
            return source
        self._iterated = True
        return iter(source)

    def feed(self, data: Any) -> None:
        """Queue one batch (push mode; any thread). The read stage takes batches in order."""
        self._queue.append(data)
        loop, arrived = self._loop, self._arrived
        if loop is not None and arrived is not None and not loop.is_closed():
            loop.call_soon_threadsafe(arrived.set)

    async def _pull_fed(self) -> Any:
        if self._arrived is None:
            self._loop = asyncio.get_running_loop()
            self._arrived = asyncio.Event()
        while not self._queue:
            self._arrived.clear()
            if self._queue:
                break
            await self._arrived.wait()
        return self._queue.popleft()

    async def _pull(self, info: Any) -> Any:
        """The next item from the source; raises _EndOfData at its end."""
        assert self._io is not None
        if self.fed:
            return await self._pull_fed()
        if self._is_async_callable:
            try:
                return await self.source(info) if info is not None else await self.source()
            except (StopIteration, StopAsyncIteration):
                raise _EndOfData from None
        if self._is_callable:
            def call() -> Any:
                try:
                    return self.source(info) if info is not None else self.source()
                except StopIteration:
                    raise _EndOfData from None
            return await self._io.call(call)
        for restarted in (False, True):
            if self._iterator is None:
                self._iterator = self._new_iterator(restart=restarted)
            try:
                if hasattr(self._iterator, "__anext__"):
                    return await self._iterator.__anext__()
                iterator = self._iterator
                sentinel = object()
                value = await self._io.call(next, iterator, sentinel)
                if value is sentinel:
                    raise StopIteration
                self._reused = False
                return value
            except (StopIteration, StopAsyncIteration):
                self._iterator = None
                if self._reused and not restarted:
                    self._reused = False
                    continue  # an exhausted iterator object: the new epoch starts it with iter()
                if not self.cycle or restarted:
                    raise _EndOfData from None
        raise _EndOfData

    async def _pull_checked(self, info: Any) -> Any:
        try:
            return await self._pull(info)
        except _EndOfData:
            raise
        except Exception as exc:
            err = PipelineError(
                f"external_source {self._label()!r}: the source raised {type(exc).__name__}: {exc}",
                operator=self._label(),
            )
            raise err from exc

    def _split_outputs(self, item: Any, where: str) -> list[Any]:
        if hasattr(item, "__next__") or hasattr(item, "__anext__"):
            # An iterator as "a batch" would be drained without end: refuse it.
            raise PipelineError(
                f"{where}: the source returned a {type(item).__name__} where a batch (a list or an array) "
                "was expected; give the generator function itself as the source (source=my_generator, "
                "not my_generator())",
                operator=self._label(),
            )
        if not self.tuple_outputs:
            return [item]
        if not isinstance(item, (tuple, list)) or len(item) != self.num_outputs:
            raise PipelineError(
                f"{where}: num_outputs={self.num_outputs}, so the source must give a tuple of "
                f"{self.num_outputs}, got {type(item).__name__}",
                operator=self._label(),
            )
        return list(item)

    async def read_batch(self, epoch: int, batch_index: int) -> SourceBatch | None:
        if self._ended_epoch == epoch:
            return None
        first_id = batch_index * self._batch_size
        outputs: list[list[Any]] = [[] for _ in range(self.num_outputs)]
        failures: dict[int, SampleError] = {}

        def convert(value: Any, row: int, where: str, k: int) -> Any:
            # A sample of the wrong kind fails only its row (on_error decides what then).
            try:
                sample = _to_sample(value, self._dtypes[k], where)
                ndim = self._ndims[k]
                if ndim is not None and getattr(sample, "ndim", 1) != ndim:
                    raise SampleError(f"expected ndim={ndim}, got shape {tuple(sample.shape)}", where)
                return sample
            except SampleError as err:
                failures.setdefault(row, err)
                return None

        try:
            if self.batch:
                # DALI: a batch callable that takes a positional parameter gets the BatchInfo with
                # batch_info=True, else the iteration number (within the epoch).
                batch_info: Any = BatchInfo(batch_index, epoch) if self.batch_info else (
                    batch_index if self._takes_info else None)
                where = f"{self._label()} batch {batch_index} of epoch {epoch}"
                item = await self._pull_checked(batch_info)
                for k, column in enumerate(self._split_outputs(item, where)):
                    outputs[k] = [convert(s, row, f"{where}, sample {row}", k) for row, s in enumerate(column)]
            elif self.parallel and self._is_callable:
                # every sample's call at once on the I/O threads (samples are independent)
                infos = [SampleInfo(first_id + j, j, batch_index, epoch) for j in range(self._batch_size)]
                pulled = await asyncio.gather(*(self._pull_checked(info if self._takes_info else None) for info in infos),
                                              return_exceptions=True)
                ended = False
                for j, item in enumerate(pulled):
                    if isinstance(item, _EndOfData):  # the samples before it make the last batch
                        ended = True
                        break
                    if isinstance(item, BaseException):
                        raise item
                    where = f"{self._label()} sample {first_id + j} of epoch {epoch}"
                    for k, value in enumerate(self._split_outputs(item, where)):
                        outputs[k].append(convert(value, j, where, k))
                if ended:
                    raise _EndOfData
            else:
                for j in range(self._batch_size):
                    info = SampleInfo(first_id + j, j, batch_index, epoch) if self._takes_info else None
                    where = f"{self._label()} sample {first_id + j} of epoch {epoch}"
                    item = await self._pull_checked(info)
                    for k, value in enumerate(self._split_outputs(item, where)):
                        outputs[k].append(convert(value, j, where, k))
        except _EndOfData:
            self._ended_epoch = epoch
        n = len(outputs[0])
        if any(len(col) != n for col in outputs):
            raise PipelineError(
                f"{self._label()}: its outputs have different batch sizes {[len(c) for c in outputs]}",
                operator=self._label(),
            )
        if n == 0:
            return None
        if n > self._batch_size:
            raise PipelineError(
                f"{self._label()} gave a batch of {n} samples; the pipeline's batch_size is {self._batch_size}",
                operator=self._label(),
            )
        ids = np.arange(first_id, first_id + n, dtype=np.int64)
        sources: list[str | None] = [f"{self._label()}[epoch {epoch}, sample {i}]" for i in ids]
        return SourceBatch(outputs=outputs, sample_ids=ids, sources=sources, failures=failures)

    async def read_replacement(self, epoch: int, sample_id: int, attempt: int) -> SourceBatch | None:
        # User data cannot be read twice: a failed sample is dropped, the batch shrinks.
        return None

    def layout(self, index: int) -> str:
        return self._layouts[index]

    def close(self) -> None:
        closer = getattr(self._iterator, "close", None)
        if callable(closer) and not inspect.iscoroutinefunction(closer):
            try:
                closer()
            except Exception:
                pass
        self._iterator = None


Callback = Callable[..., Any]


@fn_function()
def external_source(
    source: Any = None,
    *,
    num_outputs: int | None = None,
    batch: bool = True,
    cycle: bool | str | None = None,
    batch_info: bool = False,
    dtype: Any = None,
    layout: str | list[str] | None = None,
    ndim: int | list[int] | None = None,
    parallel: bool = False,
    no_copy: bool | None = None,
    blocking: bool | None = None,
    prefetch_queue_depth: int | None = None,
    cuda_stream: Any = None,
    use_copy_kernel: bool | None = None,
    repeat_last: bool = False,
    device: str | None = None,
    name: str | None = None,
) -> Any:
    """Data from a Python callable, generator function, iterable, async callable or async iterable.

    Args:
        source: where data comes from (none: the batches are pushed with
            ``pipe.feed_input(name, data)``, DALI's push mode). Batch mode: each call / item is a batch
            (a list of samples, or an array whose first axis is the batch).
            Per-sample mode (``batch=False``): each is one sample; a callable is
            passed a ``SampleInfo``. A generator function (``def gen(): yield
            ...``, or ``async def``) is called at the start of every epoch and
            its generator iterated. A callable or iterator that raises
            ``StopIteration`` ends the epoch.
        num_outputs: if set, each call / item is a tuple of that many outputs
            and a tuple of ``DataNode``s is returned.
        batch: batch mode (default) or per-sample mode.
        cycle: ``True``/``"quiet"``: restart an exhausted iterable at once;
            otherwise its end ends the epoch and the next epoch restarts it.
        batch_info: pass a ``BatchInfo`` to a batch-mode callable that takes a
            parameter (without it, as in DALI, such a callable gets the
            iteration number within the epoch).
        dtype: the dtype every sample must have (checked); with ``num_outputs``
            also a list, one per output (as in DALI).
        layout: layout name of the samples, e.g. ``"HWC"`` (or a list, one per output).
        ndim: the number of dimensions every sample must have (checked; or a list, one per output).
        parallel: with ``batch=False`` and a callable, the samples of a batch
            are requested concurrently on the pipeline's I/O threads (DALI runs
            them in worker processes; here the callable must be thread-safe and
            should release the GIL for heavy work).
        no_copy, blocking, prefetch_queue_depth, cuda_stream, use_copy_kernel:
            DALI's buffering options, accepted: samples are never copied on
            the way in, and the read stage always prefetches
            (``prefetch_queue_depth`` of the pipeline).
        repeat_last: DALI's "feed once, repeat" mode: not supported; ``True`` is refused.
        device: ``"cpu"`` (default) or ``"gpu"`` (as in DALI: the outputs are GPU data; the samples,
            host or cupy arrays, are copied to the device as ``.gpu()`` does).
        name: a name for errors, statistics and ``pipe.epoch_size``.
    """
    if repeat_last:
        raise PipelineDefinitionError("external_source: repeat_last=True is not supported yet")
    if device not in (None, "cpu", "gpu"):
        raise PipelineDefinitionError(f"external_source: device must be 'cpu' or 'gpu', got {device!r}")
    op = ExternalSource(
        source, num_outputs=num_outputs, batch=batch, cycle=cycle, batch_info=batch_info,
        dtype=dtype, layout=layout, ndim=ndim, parallel=parallel, name=name,
    )
    outputs = add_node(op, [])
    if device == "gpu":  # DALI's GPU external source: the samples are read as given, then put on the GPU
        outputs = tuple(out.gpu() for out in outputs)
    return outputs if num_outputs is not None else outputs[0]
