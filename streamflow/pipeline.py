"""``Pipeline`` and ``pipeline_def``: define a graph once, iterate it many ways.

Life cycle (a state enum, not flags)::

    NEW --build()--> BUILT --start (first iteration)--> RUNNING --close()--> CLOSED
                                                            \\--stage error--> FAILED

The engine runs on an asyncio loop: the caller's loop for ``async with`` /
``async for``, or a background loop thread for ``iter()`` / ``run()``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import enum
import functools
import json
import os
import secrets
import sys
import threading
import warnings
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from . import autograph
from .errors import (
    DeviceUnavailableError,
    PipelineClosedError,
    PipelineDefinitionError,
    PipelineError,
)
from .gpu.handoff import Handoff, current_cupy_stream
from .gpu.ops import find_impl
from .gpu.stage import stage_factory
from .graph import DataNode, Undefined, topological_order
from .operator import Source
from .ops.arguments import PIPELINE as PIPELINE_TUNING
from .ops.arguments import check_pipeline_options
from .runtime.engine import Engine
from .runtime.loop_thread import LoopThread
from .runtime.plan import ExecutionPlan, StageKind, make_plan
from .runtime.stages import StageFactory
from .runtime.work import EndOfEpoch
from .sharding import EpochInfo
from .stats import PipelineStats
from .tensor import Batch, TensorList
from .types import Device, ErrorPolicy

__all__ = ["CpuFallbackWarning", "Pipeline", "PipelineState", "pipeline_def"]

T = TypeVar("T")

PIPELINE_ARGUMENTS = (
    "batch_size",
    "num_threads",
    "device_id",
    "seed",
    "prefetch_queue_depth",
    "on_error",
    "checkpoint",
    "enable_conditionals",
)

CHECKPOINT_FORMAT = "streamflow-checkpoint-v1"
SERIALIZED_FORMAT = "streamflow-pipeline-definition-v1"


class CpuFallbackWarning(UserWarning):
    """``device_id='auto'`` found no GPU and runs GPU operators on the CPU."""


class PipelineState(enum.Enum):
    NEW = "new"
    BUILT = "built"
    RUNNING = "running"
    FAILED = "failed"
    CLOSED = "closed"


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside streamflow (and asyncio), for warnings."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_PACKAGE_DIR) and "asyncio" not in path and "concurrent" not in path:
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return 1


#: The pipeline of the innermost ``with pipe:`` block (DALI's current pipeline).
_CURRENT: contextvars.ContextVar[Pipeline | None] = contextvars.ContextVar("streamflow_current_pipeline", default=None)


def _join_batches(parts: list[tuple[Batch, int, int]]) -> Batch:
    """One batch from row ranges of others (``run()``'s batches across an epoch end)."""
    first, start, stop = parts[0]
    if len(parts) == 1 and start == 0 and stop == len(first[0]):
        return first  # the common case: a whole batch, untouched
    columns = [TensorList.concat([b[k].rows(s, e) for b, s, e in parts]) for k in range(len(first))]
    out = Batch(columns)
    out.epoch, out.batch_index = first.epoch, first.batch_index
    out.sources = [src for b, s, e in parts for src in b.sources[s:e]]
    out.sample_ids = np.concatenate([np.asarray(b.sample_ids)[s:e] for b, s, e in parts])
    out.dropped = [d for b, _, _ in parts for d in b.dropped]
    return out


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running on this thread, or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _gpu_count() -> int:
    """Number of usable CUDA devices (0 when cupy or the driver is missing)."""
    from .backend import gpu_count

    return gpu_count()


class _Resources:
    """What must be released even if the user forgets ``close()`` (weakref finalizer)."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.loop_thread: LoopThread | None = None
        self.handoff: Handoff | None = None

    def release(self) -> None:
        """Stop the engine wherever it runs, then the background loop thread (idempotent)."""
        engine, thread = self.engine, self.loop_thread
        self.engine = None
        self.loop_thread = None
        if engine is not None:
            loop = engine.loop
            if loop is not None and loop.is_running() and not loop.is_closed():
                try:
                    asyncio.run_coroutine_threadsafe(engine.aclose(), loop).result()
                except Exception:
                    engine.release_threads()
            else:  # the loop is gone (asyncio.run returned): only the threads remain
                engine.release_threads()
        if thread is not None:
            thread.stop()
        handoff, self.handoff = self.handoff, None
        if handoff is not None:
            handoff.close()


class Pipeline:
    """A data pipeline: a traced graph plus how to run it.

    Prefer ``@pipeline_def`` to build one. Iterate it with ``async for
    outputs in pipe`` (one epoch per loop), ``for outputs in pipe.iter()``
    (the same from synchronous code), or ``pipe.run()`` (one batch).

    Args:
        batch_size: samples per batch.
        num_threads: worker threads for CPU operators.
        device_id: GPU index; ``None`` for a CPU-only pipeline; ``"auto"`` to use
            GPU 0 when present and otherwise run GPU operators on the CPU.
        seed: seed of every random choice (shuffling, augmentations); ``None``
            draws one (see ``pipe.seed``).
        prefetch_queue_depth: batches buffered between two stages; DALI's
            ``{"cpu_size": n, "gpu_size": m}`` is accepted (the larger is used
            for every channel).
        on_error: ``"raise"`` (a bad sample stops the pipeline with an error
            naming its file) or ``"skip"`` (it is counted and replaced).
        checkpoint: bytes from ``Pipeline.checkpoint()`` of a pipeline with the
            same definition: this one continues exactly where that one stopped.
        enable_conditionals: ``if``/``elif``/``else``, ``a if c else b``, ``and``,
            ``or`` and ``not`` on per-sample data in the definition and the
            functions it calls, as in DALI (see ``docs/conditionals.md``).
        **dali_options: DALI's executor and memory settings (``exec_async``,
            ``set_affinity``, ``enable_memory_stats``, ...): accepted and
            ignored (``docs/dali-differences.md`` says why for each).
    """

    def __init__(
        self,
        batch_size: int,
        num_threads: int = 2,
        device_id: int | str | None = None,
        seed: int | None = None,
        prefetch_queue_depth: int | dict[str, int] = 2,
        on_error: str | ErrorPolicy = "raise",
        checkpoint: bytes | str | None = None,
        *,
        enable_conditionals: bool = False,
        definition: Callable[..., Any] | None = None,
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        **dali_options: Any,
    ) -> None:
        check_pipeline_options(dali_options, PIPELINE_ARGUMENTS)
        self.enable_conditionals = bool(enable_conditionals)
        if isinstance(prefetch_queue_depth, dict):
            sizes = [v for k, v in prefetch_queue_depth.items() if k in ("cpu_size", "gpu_size")]
            if not sizes or len(sizes) != len(prefetch_queue_depth):
                raise PipelineDefinitionError(
                    f"prefetch_queue_depth as a dict takes 'cpu_size' and 'gpu_size', got {prefetch_queue_depth!r}"
                )
            prefetch_queue_depth = max(sizes)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise PipelineDefinitionError(f"batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(num_threads, int) or num_threads < 1:
            raise PipelineDefinitionError(f"num_threads must be a positive int, got {num_threads!r}")
        if not isinstance(prefetch_queue_depth, int) or prefetch_queue_depth < 1:
            raise PipelineDefinitionError(
                f"prefetch_queue_depth must be a positive int, got {prefetch_queue_depth!r}"
            )
        if device_id is not None and device_id != "auto" and not (isinstance(device_id, int) and device_id >= 0):
            raise PipelineDefinitionError(
                f"device_id must be None (CPU only), 'auto' or a GPU index >= 0, got {device_id!r}"
            )
        self.batch_size = batch_size
        self.num_threads = num_threads
        self.device_id = device_id
        self.seed = int(seed) if seed is not None and seed >= 0 else secrets.randbits(63)
        self.prefetch_queue_depth = prefetch_queue_depth
        self.on_error = ErrorPolicy.parse(on_error)
        self._outputs: tuple[DataNode, ...] | None = None
        self._plan: ExecutionPlan | None = None
        self._state = PipelineState.NEW
        self._lock = threading.Lock()
        self._epoch_open = False
        self._resume_at = (0, 0)
        self._position = (0, 0)  # (epoch, next batch) the consumer will receive next
        self._interrupted: concurrent.futures.Future[Batch | None] | None = None
        #: Returns the consumer's current CUDA stream (``cudaStream_t``); GPU batches
        #: handed out are released only after the work queued there when the next
        #: batch is asked for (default: cupy's current stream; the torch iterator
        #: sets torch's). See ``streamflow/gpu/handoff.py``.
        self.consumer_stream: Callable[[], int] | None = None
        self._carry: tuple[Batch, int] | None = None  # run(): the rest of a batch not yet handed out
        self._skip_rows = 0  # run() after restoring a checkpoint: rows of the first batch already returned
        self._fed_batches = 0  # batches given to feed_input
        self._taken = 0  # batches asked for (feed_input's bookkeeping)
        self._interrupted_run: concurrent.futures.Future[Batch | None] | None = None
        self._context_token: contextvars.Token[Pipeline | None] | None = None
        self._resources = _Resources()
        self._gpu_index: int | None = None  # the GPU of the mixed/gpu stages (set by _resolve_devices)
        self._finalizer = weakref.finalize(self, self._resources.release)
        if checkpoint is not None:
            self._restore(checkpoint)
        self._definition = (definition, tuple(args), dict(kwargs or {}))  # for serialize()
        if definition is not None:
            self.set_outputs(*_as_outputs(self._trace(definition, *args, **(kwargs or {}))))

    # --- definition -------------------------------------------------------
    def set_outputs(self, *outputs: DataNode) -> None:
        """Declare the pipeline's outputs (done for you by ``pipeline_def``)."""
        if self._state is not PipelineState.NEW:
            raise PipelineDefinitionError("set_outputs() must be called before the pipeline is built")
        self._outputs = tuple(outputs)

    def _trace(self, definition: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run the definition (rewritten for ``if`` on pipeline data with ``enable_conditionals``)."""
        # As in DALI, Pipeline.current() is the pipeline being defined (tutorials shard with
        # shard_id=Pipeline.current().device_id inside a pipeline_def function).
        token = _CURRENT.set(self)
        try:
            if self.enable_conditionals:
                return autograph.trace(definition, *args, **kwargs)
            return definition(*args, **kwargs)
        finally:
            _CURRENT.reset(token)

    def build(self) -> None:
        """Validate the graph and plan its stages (done on first use if not called)."""
        if self._state is not PipelineState.NEW:
            return
        if self._outputs is None and callable(getattr(self, "define_graph", None)):
            # DALI's legacy style: a Pipeline subclass that defines define_graph()
            self.set_outputs(*_as_outputs(self._trace(self.define_graph)))  # type: ignore[attr-defined]
        if self._outputs is None:
            raise PipelineDefinitionError("the pipeline has no outputs; use @pipeline_def or set_outputs()")
        self._resolve_devices(self._outputs)
        self._plan = make_plan(self._outputs, self.seed, self._batch_counter(self._outputs))
        self._state = PipelineState.BUILT

    def _batch_counter(self, outputs: Sequence[DataNode]) -> DataNode | None:
        """For outputs that depend on no reader or external source (DALI runs such pipelines: constants,
        random numbers), a source of ``batch_size`` empty samples per batch, without end, that sets
        the number of samples; ``None`` when the outputs have a source."""
        if any(isinstance(node.op, Source) for node in topological_order(outputs)):
            return None
        from .ops.external_source import external_source

        empty = [np.zeros(0, dtype=np.uint8)] * self.batch_size
        node: DataNode = external_source(source=lambda: empty, name="__batch_counter__")
        return node

    def _resolve_devices(self, outputs: Sequence[DataNode]) -> None:
        nodes = topological_order(outputs)
        gpu_nodes = [n for n in nodes if n.op.device is not Device.CPU]
        if not gpu_nodes:
            return
        names = ", ".join(sorted({n.op.name for n in gpu_nodes}))
        if self.device_id is None:
            raise PipelineDefinitionError(
                f"operators {names} run on the GPU, but the pipeline was built with device_id=None "
                "(CPU only). Pass device_id=0 to use the GPU, or device_id='auto' to run them on the "
                "CPU when no GPU is present."
            )
        available = _gpu_count()
        if self.device_id == "auto" and available == 0:
            warnings.warn(
                f"device_id='auto': no usable GPU found; running {names} on the CPU",
                CpuFallbackWarning,
                stacklevel=_user_stacklevel(),
            )
            for node in nodes:
                node.op.run_on(Device.CPU)
                for data in node.outputs:
                    data.device = Device.CPU
            return
        index = 0 if self.device_id == "auto" else int(self.device_id)
        if index >= available:
            raise DeviceUnavailableError(
                f"the pipeline needs GPU {index} for {names}, but {available} usable GPU(s) were "
                "found (is the NVIDIA driver installed, and `pip install 'streamflow[gpu]'` done?). "
                "Use device_id='auto' to fall back to the CPU."
            )
        missing = sorted({n.op.name for n in gpu_nodes if find_impl(n.op) is None})
        if missing:
            raise PipelineDefinitionError(
                f"{', '.join(missing)} cannot run on the GPU yet (no GPU implementation here); run "
                "it on the CPU: keep its input on the CPU (e.g. decode with device='cpu', call .gpu() "
                "after it) and pass device='cpu', or use device_id='auto' on a machine without a GPU"
            )
        self._gpu_index = index

    def _stage_factories(self) -> dict[StageKind, StageFactory]:
        """How the engine makes the mixed and gpu stages (none for a CPU pipeline)."""
        if self._gpu_index is None:
            return {}
        make = stage_factory(self._gpu_index)
        return {StageKind.MIXED: make, StageKind.GPU: make}

    # --- state ------------------------------------------------------------
    @property
    def state(self) -> PipelineState:
        return self._state

    def _check_usable(self) -> None:
        if self._state is PipelineState.CLOSED:
            raise PipelineClosedError("the pipeline is closed; create a new one to read again")

    async def _start_here(self) -> Engine:
        """Start the engine on the running loop (once)."""
        self._check_usable()
        engine = self._resources.engine
        if engine is not None:
            return engine
        self.build()
        assert self._plan is not None
        epoch, batch = self._resume_at
        engine = Engine(
            self._plan,
            batch_size=self.batch_size,
            num_threads=self.num_threads,
            prefetch_queue_depth=self.prefetch_queue_depth,
            on_error=self.on_error,
            seed=self.seed,
            start_epoch=epoch,
            start_batch=batch,
            stage_factories=self._stage_factories(),
        )
        engine.start()
        self._resources.engine = engine
        if self._gpu_index is not None and any(out.device is Device.GPU for out in self._plan.outputs):
            self._resources.handoff = Handoff(self._gpu_index, self._consumer_stream)
        self._state = PipelineState.RUNNING
        return engine

    # --- running on the right loop ----------------------------------------
    async def _on_engine_loop(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``make()`` on the loop that owns the engine, from async code."""
        engine = self._resources.engine
        if engine is None:
            await self._start_here()
            return await make()
        if engine.loop is asyncio.get_running_loop():
            return await make()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(make(), engine.loop))  # type: ignore[arg-type]

    def _submit_sync(self, make: Callable[[], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        """Schedule ``make()`` on the engine's loop from synchronous code (starting it if needed)."""
        self._check_usable()
        self.build()  # here, in the caller's thread: a device warning points at the caller's line
        with self._lock:
            if self._resources.engine is None:
                if _running_loop() is not None:
                    raise RuntimeError(
                        "pipe.iter() / pipe.run() block, and were called from a running event loop; "
                        "in async code use `async with pipe:` and `async for outputs in pipe`"
                    )
                new_thread = LoopThread()
                self._resources.loop_thread = new_thread
                new_thread.call(self._start_here())
        engine = self._resources.engine
        assert engine is not None and engine.loop is not None
        thread = self._resources.loop_thread
        if thread is None or thread.loop is not engine.loop:
            running = _running_loop()
            if running is engine.loop:
                raise RuntimeError(
                    "pipe.iter() / pipe.run() were called inside the event loop that runs the pipeline; "
                    "use `async for outputs in pipe` there"
                )
        return asyncio.run_coroutine_threadsafe(make(), engine.loop)

    def _on_engine_loop_sync(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``make()`` on the engine's loop and wait; an interrupt cancels it."""
        future = self._submit_sync(make)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def _consumer_stream(self) -> int:
        return (self.consumer_stream or current_cupy_stream)()

    def _next_requested(self) -> None:
        """In the consumer's thread: GPU batches handed out so far are released after its stream."""
        handoff = self._resources.handoff
        if handoff is not None:
            handoff.next_requested()

    def _next_batch_sync(self) -> Batch | None:
        """The next batch (None at the end of the epoch), from synchronous code.

        If the caller is interrupted (Ctrl-C) while waiting, the request is
        kept, not cancelled: the batch it brings is returned by the next call,
        so an interrupt never loses a batch.
        """
        self._next_requested()
        future, self._interrupted = self._interrupted, None
        if future is None:
            future = self._submit_sync(self._next_in_epoch)
        try:
            return future.result()
        except KeyboardInterrupt:
            self._interrupted = future
            raise

    # --- consuming --------------------------------------------------------
    async def _next_in_epoch(self) -> Batch | None:
        """On the engine loop: the next batch of the current epoch, or None at its end."""
        engine = self._resources.engine
        assert engine is not None
        try:
            item = await engine.next_item()
        except PipelineError:
            self._state = PipelineState.FAILED
            raise
        if isinstance(item, EndOfEpoch):
            self._epoch_open = False
            self._position = (item.epoch + 1, 0)
            return None
        self._epoch_open = True
        self._position = (item.epoch, item.batch_index + 1)
        batch = engine.to_batch(item)
        if self._resources.handoff is not None:
            self._resources.handoff.handed_out(tuple(batch))
        return batch

    async def __aenter__(self) -> Pipeline:
        await self._start_here()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._iterate_epoch()

    async def _iterate_epoch(self) -> AsyncIterator[Batch]:
        while True:
            self._next_requested()
            batch = await self._on_engine_loop(self._next_in_epoch)
            if batch is None:
                return
            yield batch

    def iter(self) -> Iterator[Batch]:
        """Iterate one epoch from synchronous code (the engine runs on a background loop)."""
        while True:
            batch = self._next_batch_sync()
            if batch is None:
                return
            yield batch

    def __iter__(self) -> Iterator[Batch]:
        return self.iter()

    def next_batch(self) -> Batch | None:
        """The next batch of the current epoch, or ``None`` at its end (the next call starts the next epoch).

        Epochs end exactly where the data does (the last batch may be smaller);
        ``iter()`` and ``async for`` are built on this.
        """
        return self._next_batch_sync()

    async def anext_batch(self) -> Batch | None:
        """Async twin of ``next_batch()``."""
        self._next_requested()
        return await self._on_engine_loop(self._next_in_epoch)

    def run(self) -> Batch:
        """The next batch, as DALI's ``run()``: readers wrap around and every batch is full.

        Batches run on across epoch ends: the last samples of an epoch and the
        first of the next share a batch (with ``pad_last_batch=True`` every
        epoch is whole batches, so none is mixed). A pipeline fed by an
        ``external_source`` that runs out raises ``StopIteration`` as in DALI
        (the next call starts the source again); as in DALI, the samples of a
        per-sample source (``batch=False``) that do not fill the last batch are
        dropped. For epoch-aware iteration use ``iter()``, ``async for`` or
        ``next_batch()``. A subclass's ``iter_setup()`` (DALI's legacy hook,
        e.g. calling ``feed_input``) runs first.
        """
        self._next_requested()
        self.build()
        iter_setup = getattr(self, "iter_setup", None)
        if callable(iter_setup):  # DALI's legacy subclass hook: feeds its external sources before each run
            iter_setup()
        self._check_fed()
        self._taken += 1
        pending, self._interrupted = self._interrupted, None
        if pending is not None:  # a batch an interrupted iter() asked for: it comes first
            first = pending.result()
            if first is not None and self._carry is None:
                self._carry = (first, 0)
        future, self._interrupted_run = self._interrupted_run, None
        if future is None:
            future = self._submit_sync(self._run_stream)
        try:
            batch = future.result()
        except KeyboardInterrupt:
            self._interrupted_run = future  # kept: the next run() returns it, no batch is lost
            raise
        if batch is None:
            raise StopIteration("the external source ran out; call run() again to restart it")
        return batch

    async def arun(self) -> Batch:
        """Async twin of ``run()`` (``StopAsyncIteration`` where ``run()`` raises ``StopIteration``)."""
        self._next_requested()
        batch = await self._on_engine_loop(self._run_stream)
        if batch is None:
            raise StopAsyncIteration("the external source ran out")
        return batch

    async def _run_stream(self) -> Batch | None:
        """On the engine loop: ``batch_size`` rows of the stream of epochs (None: a source ran out)."""
        if any(getattr(s, "fed", False) for s in self._readers().values()):
            return await self._next_in_epoch()  # feed_input: each fed batch is one batch
        parts: list[tuple[Batch, int, int]] = []
        need = self.batch_size
        empty_epochs = 0
        while need > 0:
            if self._carry is None:
                batch = await self._next_in_epoch()
                if batch is None:
                    empty_epochs += 1
                    if self._wraps_around() and empty_epochs < 2:
                        continue
                    if any(getattr(r, "batch", True) is False for r in self._readers().values()):
                        parts = []  # DALI drops a per-sample external_source's incomplete last batch
                    break  # an external source ran out (or the readers yield nothing)
                empty_epochs = 0
                self._carry = (batch, min(self._skip_rows, len(batch[0]) if len(batch) else 0))
                self._skip_rows = 0
            batch, start = self._carry
            take = min(need, len(batch[0]) - start) if len(batch) else 0
            if take > 0:
                parts.append((batch, start, start + take))
            need -= take
            self._carry = (batch, start + take) if take and start + take < len(batch[0]) else None
        return _join_batches(parts) if parts else None

    def _wraps_around(self) -> bool:
        """Whether every source is a reader (DALI: readers wrap around, external sources end)."""
        return all(r.epoch_info() is not None for r in self._readers().values())

    def feed_input(self, data_node: str | DataNode, data: Any, layout: str | None = None) -> None:
        """Push one batch into the ``external_source`` named ``data_node`` that has no source (DALI's push mode).

        Feed before asking for the batch; batches are consumed in order.

        Raises:
            PipelineDefinitionError: no such source, or it has a source of its own.
        """
        name = data_node.name if isinstance(data_node, DataNode) else data_node
        source = self._readers().get(name)
        if source is None or not getattr(source, "fed", False):
            fed = sorted(n for n, s in self._readers().items() if getattr(s, "fed", False))
            raise PipelineDefinitionError(
                f"feed_input: no external_source named {name!r} without a source; fed sources: {fed}"
            )
        source.feed(data)  # type: ignore[attr-defined]
        self._fed_batches += 1

    def _check_fed(self) -> None:
        """A pipeline fed with feed_input refuses to wait for a batch nobody has fed (DALI errors too)."""
        if any(getattr(s, "fed", False) for s in self._readers().values()) and self._fed_batches <= self._taken:
            raise PipelineError(
                "the pipeline's external_source is fed with pipe.feed_input(name, data): feed a batch "
                "before asking for one"
            )

    # --- DALI's split run API ----------------------------------------------
    def schedule_run(self) -> None:
        """DALI's ``schedule_run()``: start computing (streamflow always prefetches ahead)."""
        self.build()
        self._submit_sync(self._noop).result()

    @staticmethod
    async def _noop() -> None:
        return None

    def share_outputs(self) -> Batch:
        """DALI's ``share_outputs()``: the next batch (as ``run()``)."""
        return self.run()

    def release_outputs(self) -> None:
        """DALI's ``release_outputs()``: nothing to do; batches are released at the next request."""

    async def _skip_rest_of_epoch(self) -> None:
        while self._epoch_open:
            await self._next_in_epoch()

    def reset(self) -> None:
        """Skip what is left of the current epoch; the next iteration starts a new one."""
        if self._resources.engine is None:
            return
        pending, self._interrupted = self._interrupted, None
        if pending is not None:  # a batch requested before a Ctrl-C: part of what is skipped
            pending.result()
        self._on_engine_loop_sync(self._skip_rest_of_epoch)

    async def areset(self) -> None:
        """Async twin of ``reset()``."""
        if self._resources.engine is None:
            return
        await self._on_engine_loop(self._skip_rest_of_epoch)

    # --- shutting down ----------------------------------------------------
    def close(self) -> None:
        """Stop the pipeline and release every thread, task and file (idempotent)."""
        if self._state is PipelineState.CLOSED:
            return
        engine = self._resources.engine
        if engine is not None and self._resources.loop_thread is None:
            running = _running_loop()
            if running is engine.loop:
                raise RuntimeError(
                    "close() would block the event loop that runs the pipeline; use `await pipe.aclose()`"
                )
        self._resources.release()
        self._state = PipelineState.CLOSED

    async def aclose(self) -> None:
        """Async twin of ``close()``."""
        if self._state is PipelineState.CLOSED:
            return
        engine = self._resources.engine
        if engine is not None and engine.loop is asyncio.get_running_loop():
            self._resources.engine = None
            await engine.aclose()
        # Anything else (a background loop thread) is stopped from a helper thread,
        # so this event loop is not blocked while the pools join.
        if self._resources.engine is not None or self._resources.loop_thread is not None:
            done = asyncio.get_running_loop().create_future()
            closer = threading.Thread(
                target=lambda: _finish(self._resources.release, done), name="streamflow-close"
            )
            closer.start()
            await done
            closer.join()  # it has finished its work; this only reaps the thread
        self._state = PipelineState.CLOSED

    def __enter__(self) -> Pipeline:
        """Make this the current pipeline (DALI's ``with pipe:``; see ``Pipeline.current()``).

        Leaving the block closes the pipeline if it started running inside it
        (``with pipe: for batch in pipe.iter(): ...``). A block that only
        defines the graph (DALI's legacy style: ``with pipe: ...
        pipe.set_outputs(...)``, then ``pipe.build()`` and ``pipe.run()``
        outside) leaves it open.
        """
        self._entered_running = self._resources.engine is not None
        self._context_token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._context_token is not None:
            _CURRENT.reset(self._context_token)
            self._context_token = None
        if self._resources.engine is not None or getattr(self, "_entered_running", False):
            self.close()

    @staticmethod
    def current() -> Pipeline | None:
        """The pipeline of the innermost ``with pipe:`` block (DALI's ``Pipeline.current()``), or None."""
        return _CURRENT.get()

    # --- checkpoints ------------------------------------------------------
    def checkpoint(self, filename: str | os.PathLike[str] | None = None) -> bytes:
        """The state needed to resume right after the last batch handed out.

        Everything a pipeline yields is a pure function of (seed, epoch,
        batch index), so the checkpoint is small: those numbers plus a check
        that the resuming pipeline has the same shape. Pass it as
        ``checkpoint=`` to a new pipeline of the same definition.

        Args:
            filename: also write the checkpoint to this file (DALI's argument);
                ``checkpoint=open(filename, "rb").read()`` restores it.
        """
        epoch, batch = self._position
        state = {
            "format": CHECKPOINT_FORMAT,
            "seed": self.seed,
            "epoch": epoch,
            "batch": batch,
            "batch_size": self.batch_size,
        }
        if self._carry is not None and self._carry[1] > 0:
            # run() returned the first rows of the last batch taken (batches run on across
            # epoch ends): a resumed run() goes on with the rest of that batch.
            state["carry_rows"] = self._carry[1]
        data = json.dumps(state, sort_keys=True).encode()
        if filename is not None:
            with open(filename, "wb") as f:
                f.write(data)
        return data

    @property
    def position(self) -> tuple[int, int]:
        """(epoch, batch index) of the next batch the consumer will receive."""
        return self._position

    def restore(self, checkpoint: bytes | str) -> None:
        """Continue from ``checkpoint`` (bytes of ``checkpoint()``); only before the first batch.

        Raises:
            PipelineDefinitionError: the pipeline already started, or the
                checkpoint is not valid for it.
        """
        if self._resources.engine is not None or self._state in (PipelineState.RUNNING, PipelineState.CLOSED):
            raise PipelineDefinitionError("restore() must be called before the pipeline starts")
        self._restore(checkpoint)

    def _restore(self, checkpoint: bytes | str) -> None:
        try:
            # str: DALI's checkpoints are strings, and users keep them as such
            state = json.loads(checkpoint if isinstance(checkpoint, str) else bytes(checkpoint).decode())
            if state.get("format") != CHECKPOINT_FORMAT:
                raise ValueError(f"unknown format {state.get('format')!r}")
            seed, epoch, batch, batch_size = (int(state[k]) for k in ("seed", "epoch", "batch", "batch_size"))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise PipelineDefinitionError(f"not a streamflow checkpoint ({exc}); use the bytes of pipe.checkpoint()") from None
        if batch_size != self.batch_size:
            raise PipelineDefinitionError(
                f"the checkpoint was taken with batch_size={batch_size}; this pipeline has "
                f"batch_size={self.batch_size}, so it cannot resume at the same sample"
            )
        carry_rows = int(state.get("carry_rows", 0))
        if carry_rows > 0 and batch > 0:  # resume one batch earlier; run() skips its rows already returned
            batch -= 1
            self._skip_rows = carry_rows
        self.seed = seed
        self._resume_at = self._position = (epoch, batch)
        self._epoch_open = batch > 0

    # --- serialization ----------------------------------------------------
    def serialize(self, define_graph: Any = None, filename: str | os.PathLike[str] | None = None) -> bytes:
        """The pipeline as bytes that ``deserialize_and_build`` / ``Pipeline.deserialize`` rebuild.

        DALI stores its operator graph (protobuf, for its C API, TensorFlow
        plugin and Triton). A streamflow graph holds Python objects, so this
        stores what made it instead: the ``@pipeline_def`` function's module
        and name, its arguments (JSON values) and the pipeline's settings. The
        rebuilt pipeline runs the same code, so with the same seed it gives the
        same batches, in this process or any other that can import the
        function. Deserializing imports the module named in the data: load
        only what you trust.

        Raises:
            PipelineDefinitionError: the pipeline was not made by a module-level
                ``@pipeline_def`` function (``with pipe:``, ``define_graph``, a
                function defined inside another), or an argument is not a JSON value.
        """
        if define_graph is not None:
            raise PipelineDefinitionError("serialize(define_graph=...) is not supported; serialize a @pipeline_def pipeline")
        definition, args, kwargs = self._definition
        name = getattr(definition, "__qualname__", "")
        module = getattr(definition, "__module__", None)
        if definition is None or not module or "<locals>" in name or "<lambda>" in name:
            raise PipelineDefinitionError(
                "serialize() needs a pipeline made by a @pipeline_def function defined at module level "
                "(streamflow serializes the function's name and arguments, not an operator graph); "
                "this one was built with 'with pipe:', define_graph() or a function defined inside another"
            )
        settings = {"batch_size": self.batch_size, "num_threads": self.num_threads, "device_id": self.device_id,
                    "seed": self.seed, "prefetch_queue_depth": self.prefetch_queue_depth,
                    "on_error": self.on_error.value, "enable_conditionals": self.enable_conditionals}
        try:
            data = json.dumps({"format": SERIALIZED_FORMAT, "module": module, "qualname": name,
                               "args": list(args), "kwargs": kwargs, "settings": settings}, sort_keys=True)
        except TypeError as exc:
            raise PipelineDefinitionError(
                f"serialize(): the arguments of {name}() must be JSON values (numbers, strings, lists, "
                f"dicts) to be serialized: {exc}"
            ) from None
        out = data.encode()
        if filename is not None:
            with open(filename, "wb") as f:
                f.write(out)
        return out

    @staticmethod
    def _load_serialized(serialized: bytes | str | None, filename: str | os.PathLike[str] | None) -> dict[str, Any]:
        if (serialized is None) == (filename is None):
            raise PipelineDefinitionError("give either serialized_pipeline or filename")
        if filename is not None:
            with open(filename, "rb") as f:
                serialized = f.read()
        try:
            text = serialized if isinstance(serialized, str) else bytes(serialized).decode()  # type: ignore[arg-type]
            state = json.loads(text)
            if state.get("format") != SERIALIZED_FORMAT:
                raise ValueError(f"unknown format {state.get('format')!r}")
            return dict(state)
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            raise PipelineDefinitionError(
                f"not a serialized streamflow pipeline ({exc}); use the bytes of pipe.serialize() "
                "(DALI's protobuf serializations cannot be read)"
            ) from None

    @staticmethod
    def _serialized_definition(state: dict[str, Any]) -> Callable[..., Any]:
        import importlib

        try:
            target: Any = importlib.import_module(state["module"])
            for part in str(state["qualname"]).split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as exc:
            raise PipelineDefinitionError(
                f"cannot find the pipeline function {state['module']}.{state['qualname']} ({exc})"
            ) from None
        return getattr(target, "__wrapped__", target)  # the function under @pipeline_def

    def deserialize_and_build(self, serialized_pipeline: bytes | str) -> None:
        """Define this (new, empty) pipeline from ``serialize()``'s bytes and build it; this
        pipeline's own settings (batch size, seed, ...) are kept, as in DALI."""
        state = self._load_serialized(serialized_pipeline, None)
        if self._outputs is not None or self._state is not PipelineState.NEW:
            raise PipelineDefinitionError("deserialize_and_build() needs a new pipeline without outputs")
        definition = self._serialized_definition(state)
        args, kwargs = tuple(state.get("args", ())), dict(state.get("kwargs", {}))
        self._definition = (definition, args, kwargs)
        self.set_outputs(*_as_outputs(self._trace(definition, *args, **kwargs)))
        self.build()

    @classmethod
    def deserialize(cls, serialized_pipeline: bytes | str | None = None,
                    filename: str | os.PathLike[str] | None = None, **kwargs: Any) -> Pipeline:
        """A pipeline rebuilt from ``serialize()``'s bytes (or its file), with the serialized
        settings; ``kwargs`` (``batch_size``, ``seed``, ...) override them."""
        state = cls._load_serialized(serialized_pipeline, filename)
        settings = {**state.get("settings", {}), **kwargs}
        return cls(**settings, definition=cls._serialized_definition(state), args=tuple(state.get("args", ())),
                   kwargs=dict(state.get("kwargs", {})))

    # --- information ------------------------------------------------------
    def stats(self) -> PipelineStats:
        """Counters of the running pipeline (stages, operators, skipped samples)."""
        engine = self._resources.engine
        if engine is None:
            return PipelineStats(stages=(), operators=(), batches_delivered=0, samples_delivered=0)
        return engine.stats()

    def _readers(self) -> dict[str, Source]:
        self.build()
        assert self._plan is not None
        return {node.name: node.op for node in self._plan.sources}  # type: ignore[misc]

    def reader_meta(self, name: str | None = None) -> dict[str, Any]:
        """DALI-style reader metadata (epoch_size, epoch_size_padded, shards...)."""
        readers = self._readers()
        if name is None:
            return {n: _meta(r.epoch_info()) for n, r in readers.items() if r.epoch_info() is not None}
        if name not in readers:
            raise KeyError(f"no reader named {name!r}; the pipeline's sources are {sorted(readers)}")
        info = readers[name].epoch_info()
        if info is None:
            raise ValueError(f"source {name!r} has no fixed epoch size")
        return _meta(info)

    def epoch_size(self, name: str | None = None) -> int | dict[str, int]:
        """Samples per epoch of reader ``name`` (or of every reader, as a dict).

        As in DALI, the padded size (``reader_meta()["epoch_size_padded"]``): with
        ``pad_last_batch=True`` the data set rounded up to a multiple of ``num_shards``.
        """
        if name is not None:
            return int(self.reader_meta(name)["epoch_size_padded"])
        return {n: int(m["epoch_size_padded"]) for n, m in self.reader_meta().items()}

    def __repr__(self) -> str:
        return (
            f"Pipeline(batch_size={self.batch_size}, num_threads={self.num_threads}, "
            f"device_id={self.device_id!r}, seed={self.seed}, state={self._state.value})"
        )


def _finish(work: Callable[[], None], done: asyncio.Future[None]) -> None:
    """Run ``work`` on this thread, then resolve ``done`` on its loop."""
    try:
        work()
    finally:
        done.get_loop().call_soon_threadsafe(done.set_result, None)


def _meta(info: EpochInfo | None) -> dict[str, Any]:
    assert info is not None
    return {
        "epoch_size": info.epoch_size,
        "epoch_size_padded": info.epoch_size_padded,
        "shard_size": info.shard_size,
        "number_of_shards": info.number_of_shards,
        "shard_id": info.shard_id,
        "pad_last_batch": info.pad_last_batch,
        "stick_to_shard": info.stick_to_shard,
    }


def _as_outputs(result: Any) -> tuple[DataNode, ...]:
    if isinstance(result, DataNode):
        return (result,)
    if isinstance(result, Undefined):
        raise PipelineDefinitionError(f"the pipeline output has no value: {result.reason}")
    if isinstance(result, (tuple, list)):
        for i, value in enumerate(result):
            if isinstance(value, Undefined):
                raise PipelineDefinitionError(f"pipeline output {i} has no value: {value.reason}")
        return tuple(result)
    raise PipelineDefinitionError(
        f"a pipeline definition must return a DataNode or a tuple of them, got {type(result).__name__}"
    )


def pipeline_def(
    fn: Callable[..., Any] | None = None,
    *,
    batch_size: int = 1,
    num_threads: int | None = None,
    device_id: int | str | None = None,
    seed: int | None = None,
    prefetch_queue_depth: int | dict[str, int] = 2,
    on_error: str = "raise",
    checkpoint: bytes | str | None = None,
    enable_conditionals: bool = False,
    debug: bool = False,
    **dali_options: Any,
) -> Any:
    """Decorate a graph-building function; calling it returns a ``Pipeline``.

    ``debug=True`` (also when calling: ``pipe(debug=True)``) returns a
    ``streamflow.dynamic.debug.DebugPipeline`` instead: the definition runs
    operator by operator on real data for every batch, so it can print what
    operators give; the batches are the same.

    The pipeline arguments given here are defaults; the same names passed
    when calling the decorated function override them::

        @sf.pipeline_def(batch_size=64, num_threads=2, seed=1)
        def pipe(root): ...

        p = pipe("data/train", batch_size=128)
    """
    defaults = {
        "batch_size": batch_size,
        "num_threads": num_threads if num_threads is not None else min(4, os.cpu_count() or 1),
        "device_id": device_id,
        "seed": seed,
        "prefetch_queue_depth": prefetch_queue_depth,
        "on_error": on_error,
        "checkpoint": checkpoint,
        "enable_conditionals": enable_conditionals,
        **dali_options,
    }
    check_pipeline_options(dali_options, PIPELINE_ARGUMENTS)

    def decorate(definition: Callable[..., Any]) -> Callable[..., Pipeline]:
        @functools.wraps(definition)
        def create(*args: Any, **kwargs: Any) -> Pipeline:
            settings: dict[str, Any] = dict(defaults)
            for key in [*PIPELINE_ARGUMENTS, *PIPELINE_TUNING]:
                if key in kwargs:
                    settings[key] = kwargs.pop(key)
            if kwargs.pop("debug", debug):
                from .dynamic.debug import DebugPipeline

                checked = Pipeline(**settings)  # the arguments and seed, checked; never built
                return DebugPipeline(  # type: ignore[return-value]
                    checked, definition, args, kwargs, check_devices=checked._resolve_devices
                )
            return Pipeline(**settings, definition=definition, args=args, kwargs=kwargs)

        create.__pipeline_def__ = True  # type: ignore[attr-defined]  # lets tools recognise it
        return create

    return decorate(fn) if fn is not None else decorate


do_not_convert = autograph.do_not_convert  # DALI's nvidia.dali.pipeline.do_not_convert

# DALI's debug mode is ``from nvidia.dali.pipeline.experimental import pipeline_def`` (DALI's plain
# ``pipeline_def`` refuses ``debug``); the same import path works here, with the same function.
experimental = ModuleType(f"{__name__}.experimental", "DALI's ``pipeline.experimental``: ``pipeline_def(debug=True)``.")
experimental.pipeline_def = pipeline_def  # type: ignore[attr-defined]
sys.modules[experimental.__name__] = experimental
