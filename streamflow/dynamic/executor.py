"""Running one operator node on real data: the engine's operator contract, without a pipeline.

An operator node (made by an ``fn`` function, see ``streamflow.graph``) is run
exactly as a pipeline stage runs it: its inputs and per-sample arguments go
into ``Chunk``s, ``Operator.run`` computes them on the worker threads (a chunk
that raises is re-run row by row, ``runtime.stages.run_isolated``), random
values come from ``chunk.key`` and the samples' epoch and ids; GPU and mixed
operators run their registered GPU implementation (``streamflow.gpu.ops``) on
a ``GpuContext``. Nothing here knows about pipelines, stages or channels.

Threads: one process-wide worker pool (``set_num_threads``), created on first
use and shut down at exit, shared by every dynamic call. A batch is split
into chunks run on the pool (the calling thread takes one chunk itself); a
single sample, or a call made from a worker thread, runs on the calling
thread.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import enum
import functools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DeviceUnavailableError, PipelineDefinitionError, PipelineError, SampleError
from ..gpu.context import GpuContext
from ..gpu.ops import find_impl
from ..graph import DataNode, OpNode
from ..io.pools import IOPool, WorkerPool
from ..operator import Chunk
from ..rng import RandomKey
from ..runtime.loop_thread import LoopThread
from ..runtime.stages import run_isolated
from ..tensor import TensorList
from ..types import Device
from .data import Origin, device_of

__all__ = [
    "EagerNode",
    "EvalMode",
    "Value",
    "get_num_threads",
    "io_pool",
    "loop_thread",
    "run_node",
    "run_node_async",
    "set_num_threads",
    "use_gpu_context",
    "worker_pool",
]


@dataclass
class Value:
    """The samples of one data node, computed.

    Attributes:
        samples: one array per sample (numpy, or cupy on a GPU).
        layout: the samples' layout name.
        origin: epoch, ids and files of the samples (random values are keyed on them).
        single: one sample given as a tensor (broadcast against batches; a tensor result).
    """

    samples: list[Any]
    layout: str
    origin: Origin
    single: bool = False

    @property
    def device(self) -> Device:
        return device_of(self.samples[0]) if self.samples else Device.CPU


class EagerNode(DataNode):
    """A ``DataNode`` that holds its data (``value``) once computed.

    ``fn`` functions take it like any data node (argument checks, layouts,
    per-sample arguments are the graph's own); dynamic mode and debug
    pipelines compute it at once. A debug pipeline may leave it ``pending``:
    a callable that computes it when its value is first asked for.
    """

    __slots__ = ("_value", "pending")

    def __init__(self, producer: OpNode, index: int, device: Device, name: str, channels: int | None = None,
                 value: Value | None = None) -> None:
        super().__init__(producer, index, device, name, channels)
        self._value = value
        self.pending: Callable[[], None] | None = None

    @property
    def value(self) -> Value | None:
        """The computed samples (computing a pending node first)."""
        if self._value is None and self.pending is not None:
            pending, self.pending = self.pending, None
            pending()
        return self._value

    @value.setter
    def value(self, value: Value | None) -> None:
        self._value = value

    def get(self) -> TensorList:
        """The data as a ``TensorList`` (DALI's debug-mode ``DataNode.get()``)."""
        if self.value is None:
            raise PipelineDefinitionError(f"{self.name} has no data yet")
        return TensorList.from_samples(self.value.samples, layout=self.value.layout, device=self.value.device)

    def __repr__(self) -> str:
        if self.value is None:
            return f"EagerNode({self.name!r}, not computed)"
        shapes = [tuple(np.shape(s)) for s in self.value.samples[:4]]
        more = ", ..." if len(self.value.samples) > 4 else ""
        return (f"EagerNode({self.name!r}, {len(self.value.samples)} samples, layout={self.value.layout!r}, "
                f"device={self.value.device.value}, shapes={shapes}{more})")

    def __str__(self) -> str:
        """The description and the values: ``print(node)`` in a debug pipeline shows the data, as in DALI."""
        return repr(self) if self.value is None else f"{self!r}:\n{self.get()}"


class EvalMode(enum.Enum):
    """DALI's evaluation modes, accepted for ported code: ``with EvalMode.sync_cpu: ...``.

    streamflow's dynamic calls always compute before they return (GPU work
    included), which is DALI's ``sync_full``; every mode behaves so.
    """

    default = "default"
    deferred = "deferred"
    eager = "eager"
    sync_cpu = "sync_cpu"
    sync_full = "sync_full"

    def __enter__(self) -> EvalMode:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


# --- threads ------------------------------------------------------------------------------


@functools.cache
def _default_threads() -> int:
    env = os.environ.get("STREAMFLOW_NUM_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


class _Shared:
    """The process's pools and loop thread for dynamic mode, made on first use."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.threads: int | None = None
        self.workers: WorkerPool | None = None
        self.io: IOPool | None = None
        self.loop: LoopThread | None = None
        self.gpu: dict[int, GpuContext] = {}
        self.gpu_override: GpuContext | None = None

    def shutdown(self) -> None:
        with self.lock:
            workers, io, loop = self.workers, self.io, self.loop
            self.workers = self.io = self.loop = None
        if workers is not None:
            workers.shutdown()
        if io is not None:
            io.shutdown()
        if loop is not None:
            loop.stop()


_SHARED = _Shared()
atexit.register(_SHARED.shutdown)
_local = threading.local()  # in_worker: this thread is running a chunk of the pool


def get_num_threads() -> int:
    """Threads of dynamic mode's worker pool (``STREAMFLOW_NUM_THREADS``, else the CPUs, at most 8)."""
    return _SHARED.threads or _default_threads()


def set_num_threads(n: int | None) -> None:
    """Size the worker pool (``None``: the default); the pool is made again on next use."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"set_num_threads: the number of threads must be a positive int, got {n!r}")
    with _SHARED.lock:
        old, _SHARED.workers = _SHARED.workers, None
        _SHARED.threads = n
    if old is not None:
        old.shutdown()


def worker_pool() -> WorkerPool:
    """The worker pool of dynamic mode (made on first use)."""
    pool = _SHARED.workers
    if pool is None:
        with _SHARED.lock:
            if _SHARED.workers is None:
                _SHARED.workers = WorkerPool(get_num_threads())
            pool = _SHARED.workers
    return pool


def io_pool() -> IOPool:
    """The I/O pool of dynamic readers (made on first use)."""
    with _SHARED.lock:
        if _SHARED.io is None:
            _SHARED.io = IOPool()
        return _SHARED.io


def loop_thread() -> LoopThread:
    """The event loop thread that runs readers' coroutines for synchronous callers."""
    with _SHARED.lock:
        if _SHARED.loop is None:
            _SHARED.loop = LoopThread("streamflow-dynamic")
        return _SHARED.loop


# --- GPU ----------------------------------------------------------------------------------


@contextlib.contextmanager
def use_gpu_context(ctx: GpuContext) -> Iterator[None]:
    """Run GPU and mixed operators on ``ctx`` in this block (tests: ``GpuContext.on_host()``).

    The kernels' host build runs the GPU implementations on numpy arrays, so
    the dispatch of ``device="gpu"`` calls is checked without a GPU.
    """
    previous, _SHARED.gpu_override = _SHARED.gpu_override, ctx
    try:
        yield
    finally:
        _SHARED.gpu_override = previous


def _gpu_context(device_id: int) -> GpuContext:
    if _SHARED.gpu_override is not None:
        return _SHARED.gpu_override
    with _SHARED.lock:
        ctx = _SHARED.gpu.get(device_id)
        if ctx is None:
            from ..backend import gpu_count

            available = gpu_count()
            if device_id >= available:
                raise DeviceUnavailableError(
                    f"device='gpu' needs GPU {device_id}, but {available} usable GPU(s) were found (is the "
                    "NVIDIA driver installed, and `pip install 'streamflow[gpu]'` done?); use device='cpu'"
                )
            from ..gpu.streams import configure_memory_pool

            configure_memory_pool(device_id)
            ctx = _SHARED.gpu[device_id] = GpuContext.on_device(device_id, cpu_threads=get_num_threads())
        return ctx


def _device_index(columns: Sequence[list[Any]]) -> int:
    for column in columns:
        for sample in column:
            if device_of(sample) is Device.GPU:
                return int(sample.device.id)
    try:
        import cupy

        return int(cupy.cuda.Device().id)
    except Exception:
        return 0


# --- one node -------------------------------------------------------------------------------


@dataclass
class _Job:
    """One node's inputs, ready to run: columns of equal length and the samples' identity."""

    node: OpNode
    inputs: list[list[Any]]
    args: dict[str, list[Any]]
    origin: Origin
    key: RandomKey
    single: bool
    layouts: list[str]


def _column(value: Value, name: str, n: int, what: str) -> list[Any]:
    if len(value.samples) == n:
        return value.samples
    if len(value.samples) == 1 and value.single:
        return value.samples * n  # a tensor given with batches: the same sample for every row
    raise PipelineDefinitionError(f"{what}: {name} has {len(value.samples)} samples, the batch has {n}")


def _prepare(node: OpNode, key: RandomKey, batch_size: int | None, origin: Origin | None) -> _Job:
    op = node.op
    inputs = [d.value if isinstance(d, EagerNode) else None for d in node.inputs]
    args = {k: d.value if isinstance(d, EagerNode) else None for k, d in node.arg_inputs.items()}
    values = [v for v in (*inputs, *args.values()) if v is not None]
    if len(values) != len(inputs) + len(args):
        raise PipelineDefinitionError(f"{op.name}: an input has no data (it is not a dynamic value)")
    sizes = {len(v.samples) for v in values if not v.single}
    if origin is not None:
        batch_size = len(origin.sample_ids)
    if batch_size is not None:
        sizes.add(batch_size)
    if len(sizes) > 1:
        raise PipelineDefinitionError(f"{op.name}: the inputs have different batch sizes {sorted(sizes)}")
    n = sizes.pop() if sizes else (len(values[0].samples) if values else 1)
    batched = [v for v in values if not v.single and len(v.samples) == n]
    if batched:
        origin = batched[0].origin
    elif origin is None:
        origin = values[0].origin if values and n == 1 else Origin.fresh(n)
    what = op.name
    return _Job(
        node=node,
        inputs=[_column(v, d.name, n, what) for v, d in zip(inputs, node.inputs)],  # type: ignore[arg-type]
        args={k: _column(v, node.arg_inputs[k].name, n, f"{what}: argument {k}")  # type: ignore[arg-type]
              for k, v in args.items()},
        origin=origin,
        key=key,
        single=all(v.single for v in values) and batch_size is None,
        layouts=[op.layout(i) for i in range(op.num_outputs)],
    )


def _chunk(job: _Job, start: int, stop: int) -> Chunk:
    origin = job.origin
    return Chunk(
        inputs=[col[start:stop] for col in job.inputs],
        args={k: v[start:stop] for k, v in job.args.items()},
        sample_ids=origin.sample_ids[start:stop],
        sources=list(origin.sources[start:stop]),
        epoch=origin.epoch,
        key=job.key,
    )


def _run_part(job: _Job, start: int, stop: int) -> tuple[list[list[Any]], dict[int, SampleError]]:
    """Rows [start, stop) on the CPU (on whatever thread calls it)."""
    chunk = _chunk(job, start, stop)
    nested = getattr(_local, "in_worker", False)
    _local.in_worker = True
    try:
        outputs = run_isolated(job.node, chunk)
    finally:
        _local.in_worker = nested
    return outputs, {start + row: err for row, err in chunk.failures.items()}


def _run_gpu(job: _Job) -> tuple[list[list[Any]], dict[int, SampleError]]:
    op = job.node.op
    impl = find_impl(op)
    if impl is None:
        raise PipelineDefinitionError(f"{op.name} cannot run on the GPU yet (no GPU implementation); use device='cpu'")
    ctx = _gpu_context(_device_index(job.inputs))
    with ctx.activate():
        if op.device is Device.GPU:  # host data fed to a GPU operator goes to the device first
            job.inputs = [ctx.to_device(col) for col in job.inputs]
        chunk = _chunk(job, 0, len(job.origin.sample_ids))
        outputs = impl(op, chunk, ctx)
        ctx.synchronize()  # a dynamic result is finished when the call returns
    return outputs, dict(chunk.failures)


def _bounds(job: _Job, n: int) -> list[int]:
    # An operator that mixes samples (Operator.whole_batch, e.g. permute_batch) sees the batch at once.
    parts = 1 if getattr(job.node.op, "whole_batch", False) else max(1, min(n, 2 * get_num_threads()))
    return [round(i * n / parts) for i in range(parts + 1)]


def _finish(job: _Job, parts: Sequence[tuple[list[list[Any]], dict[int, SampleError]]]) -> list[Value]:
    failures: dict[int, SampleError] = {}
    columns: list[list[Any]] = [[] for _ in range(job.node.op.num_outputs)]
    for outputs, part_failures in parts:
        failures.update(part_failures)
        for k, col in enumerate(outputs):
            columns[k].extend(col)
    if failures:
        row = min(failures)
        raise _sample_failure(job, row, failures[row])
    return [Value(col, job.layouts[k], job.origin, job.single) for k, col in enumerate(columns)]


def _sample_failure(job: _Job, row: int, err: SampleError) -> PipelineError:
    op = job.node.op
    label = op.instance_name or op.name
    where = f"file {err.source!r}" if err.source else f"sample {row}" + (" of the batch" if not job.single else "")
    exc = PipelineError(f"{label} failed on {where}: {err.reason}", stage="dynamic", operator=label, source=err.source)
    exc.__cause__ = err
    return exc


def run_node(node: OpNode, key: RandomKey, batch_size: int | None = None, origin: Origin | None = None
             ) -> list[Value]:
    """Compute ``node`` (its inputs are computed ``EagerNode``s); one ``Value`` per output.

    ``batch_size``: the rows of a node without batch inputs (random operators),
    samples 0..n-1 of epoch 0; ``origin``: those rows' identities instead (the
    batch a debug pipeline is computing).

    Raises:
        PipelineError: a sample failed (naming the operator and the sample or file).
    """
    job = _prepare(node, key, batch_size, origin)
    if job.node.op.device is not Device.CPU:
        return _finish(job, [_run_gpu(job)])
    n = len(job.origin.sample_ids)
    bounds = _bounds(job, n)
    if len(bounds) <= 2 or getattr(_local, "in_worker", False):
        return _finish(job, [_run_part(job, 0, n)])
    pool = worker_pool().executor
    futures = [pool.submit(_run_part, job, bounds[i], bounds[i + 1]) for i in range(1, len(bounds) - 1)]
    first = _run_part(job, bounds[0], bounds[1])
    return _finish(job, [first, *(f.result() for f in futures)])


async def run_node_async(node: OpNode, key: RandomKey, batch_size: int | None = None,
                         origin: Origin | None = None) -> list[Value]:
    """``run_node`` without blocking the event loop: every chunk runs on the worker pool."""
    job = _prepare(node, key, batch_size, origin)
    pool = worker_pool().executor
    if job.node.op.device is not Device.CPU:
        return _finish(job, [await asyncio.wrap_future(pool.submit(_run_gpu, job))])
    bounds = _bounds(job, len(job.origin.sample_ids))
    futures = [asyncio.wrap_future(pool.submit(_run_part, job, bounds[i], bounds[i + 1]))
               for i in range(len(bounds) - 1)]
    return _finish(job, list(await asyncio.gather(*futures)))
