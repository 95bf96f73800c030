"""The GPU-side stages (``mixed`` and ``gpu``): whole batches on the stage's own stream.

Per batch, one worker-thread call queues the stage's operator chain with the
stage's device and stream current (no ``await`` in between)::

    stream.wait_event(upstream event)      # device-side wait on the previous GPU stage
    op 1 .. op k (host logic + one launch per operator, or per resize pass)
    event = stream.record()                # the batch's "ready" event

The event travels with the batch (``Work.gpu_ready``); the next GPU stage
waits on it on the device. The last stage assembles the outputs on its stream
(no copy when a column is already one dense array), records a final event and
awaits it without blocking the event loop, so a batch reaches the consumer
finished: frameworks can read it from any stream.

Concurrency: **one batch at a time per stream.** The engine keeps two batches
of every stage in progress, but a GPU stage queues them one after the other
(an asyncio lock around the worker call), so batch i+1's wait on its upstream
event never holds up kernels of batch i still being queued on the same
stream. Overlap comes from the stages: while the gpu stage's kernels of batch
i run on its stream, the mixed stage decodes batch i+1 on its own stream, and
the read stage fetches batch i+2 (``tests/gpu``: the overlap is measured from
event timings).

Memory: inputs that a batch's kernels read (decoded images of the previous
stage) are held until this stage's event completes (``DeferredRelease``):
cupy's pool orders reuse only on the allocating stream. Batches handed to the
consumer are held by the pipeline's ``Handoff`` (see ``handoff.py``).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from ..errors import PipelineError, SampleError
from ..graph import DataNode, OpNode
from ..runtime.plan import StageKind, StagePlan
from ..runtime.stages import Stage, StageContext, StageFactory, run_chain
from ..runtime.work import Work
from ..tensor import TensorList
from ..types import Device
from .context import DeviceBackend, GpuContext
from .ops import find_impl
from .streams import DeferredRelease, configure_memory_pool, wait_event

__all__ = ["READY_ATTR", "GpuStage", "stage_factory"]

#: Attribute of a ``Work`` holding the event after which its device data is ready.
READY_ATTR = "gpu_ready"


class GpuStage(Stage):
    """A ``mixed`` or ``gpu`` stage (the engine's ``Stage`` interface).

    Args:
        plan: the stage's operators.
        ctx: what the stages share.
        keep: data nodes needed after this stage.
        device_id: the GPU.
        record_timeline: keep (batch index, start event, end event) per batch
            (timing events; for tests and profiling).
        use_host_func: await the final event through a host callback instead of polling.
    """

    #: Defaults for stages the engine creates (tests switch the timeline on here).
    RECORD_TIMELINE = False
    USE_HOST_FUNC = False

    def __init__(self, plan: StagePlan, ctx: StageContext, keep: set[DataNode], *, device_id: int = 0,
                 record_timeline: bool = False, use_host_func: bool = False) -> None:
        super().__init__(plan, ctx, keep)
        self.device_id = device_id
        missing = [n.name for n in plan.nodes if find_impl(n.op) is None]
        if missing:
            raise PipelineError(f"operators {missing} have no GPU implementation", stage=self.label)
        self._impls = {id(node): find_impl(node.op) for node in plan.nodes}
        self._gpu: GpuContext | None = None
        self._gpu_lock = threading.Lock()
        self._one_batch: asyncio.Lock | None = None  # one batch queued at a time (see the module docstring)
        self.deferred = DeferredRelease()
        self.timeline: list[tuple[int, Any, Any]] | None = [] if record_timeline else None
        self.use_host_func = use_host_func

    # --- device context ---------------------------------------------------------
    def gpu(self) -> GpuContext:
        """The stage's context (device, stream, staging), made on first use."""
        with self._gpu_lock:
            if self._gpu is None:
                configure_memory_pool(self.device_id)
                self._gpu = GpuContext(DeviceBackend(self.device_id), cpu_threads=self.ctx.workers.threads)
            return self._gpu

    # --- one batch ---------------------------------------------------------------
    async def process(self, work: Work, attempt: int = 0) -> Work:
        self._check_attempt(attempt)
        if len(work) == 0:
            return work
        self.deferred.collect()
        upstream = getattr(work, READY_ATTR, None)
        inputs = [work.values[d] for node in self.plan.nodes for d in node.upstream if d in work.values]
        if self._one_batch is None:
            self._one_batch = asyncio.Lock()
        async with self._one_batch:
            local, failures, event = await self.ctx.workers.call(self._run_batch, work, upstream)
        for key, column in local.items():
            work.values[key] = column
        self.ctx.stats.count_op_batch([node.name for node in self.plan.nodes])
        self.deferred.hold(event, (inputs, upstream))
        self._drop_unneeded(work)
        if failures:
            work = await self._handle_failures(work, failures, attempt)
            event = self.gpu().device.stream.record()  # covers the replacements queued meanwhile
        setattr(work, READY_ATTR, event)
        return work

    def _run_batch(self, work: Work, upstream: Any) -> tuple[dict[DataNode, list[Any]], dict[int, tuple[OpNode, SampleError]], Any]:
        """Worker thread: the whole chain on the whole batch, queued on the stage's stream."""
        gpu = self.gpu()
        stream = gpu.device.stream
        with gpu.activate():
            stream.wait(upstream)
            start = stream.record(timing=True) if self.timeline is not None else None

            def upload(node: OpNode, inputs: list[list[Any]]) -> list[list[Any]]:
                # host data fed to a GPU operator goes to the device first
                return [gpu.to_device(col) for col in inputs] if node.op.device is Device.GPU else inputs

            local, failures = run_chain(
                self.ctx, self.label, self.plan.nodes, work, 0, len(work),
                lambda node, chunk: self._impls[id(node)](node.op, chunk, gpu),  # type: ignore[misc]  # checked in __init__
                prepare_inputs=upload,
            )
            event = stream.record()
            if self.timeline is not None:
                self.timeline.append((work.batch_index, start, stream.record(timing=True)))
        return local, failures, event

    # --- the last stage: outputs --------------------------------------------------
    async def assemble(self, work: Work) -> tuple[TensorList, ...]:
        """The batch's outputs as TensorLists, finished on the device when returned."""
        outputs, event = await self.ctx.workers.call(self._assemble, work, getattr(work, READY_ATTR, None))
        stream = self.gpu().device.stream
        await wait_event(event, stream=stream.stream, device_id=self.device_id, use_host_func=self.use_host_func)
        self.deferred.collect()
        return outputs

    def _assemble(self, work: Work, upstream: Any) -> tuple[tuple[TensorList, ...], Any]:
        gpu = self.gpu()
        cp = gpu.xp
        result = []
        with gpu.activate():
            gpu.device.stream.wait(upstream)
            for data in self.ctx.plan.outputs:
                layout = data.producer.op.layout(data.index)
                samples = work.values[data]
                if samples and all(isinstance(s, cp.ndarray) for s in samples):
                    dense = _dense_base(cp, samples)
                    if dense is not None:
                        result.append(TensorList(dense, layout, Device.GPU))
                    elif _uniform(samples):
                        result.append(TensorList(cp.stack(samples), layout, Device.GPU))
                    else:
                        result.append(TensorList(list(samples), layout, Device.GPU))
                else:
                    result.append(TensorList.from_samples(samples, layout=layout, device=data.device))
            event = gpu.device.stream.record()
        return tuple(result), event

    def close(self) -> None:
        """Drop held memory and give the stream back to the pool (streams are never destroyed)."""
        self.deferred.clear()
        if self._gpu is not None:
            self._gpu.device.stream.close()


def _uniform(samples: list[Any]) -> bool:
    first = samples[0]
    return all(s.shape == first.shape and s.dtype == first.dtype for s in samples)


def _dense_base(cp: Any, samples: list[Any]) -> Any:
    """The (N, ...) array whose rows are exactly ``samples`` in order, if there is one."""
    base = samples[0].base
    if base is None or not isinstance(base, cp.ndarray) or base.ndim != samples[0].ndim + 1:
        return None
    if base.shape[0] != len(samples) or not base.flags.c_contiguous or base.shape[1:] != samples[0].shape:
        return None
    step = base.strides[0]
    start = base.data.ptr
    for i, s in enumerate(samples):
        if s.base is not base or s.data.ptr != start + i * step or s.dtype != base.dtype:
            return None
    return base


def stage_factory(device_id: int) -> StageFactory:
    """What the engine calls to make the ``mixed`` and ``gpu`` stages of a pipeline on ``device_id``."""

    def make(plan: StagePlan, ctx: StageContext, keep: set[DataNode]) -> Stage:
        assert plan.kind in (StageKind.MIXED, StageKind.GPU)
        return GpuStage(plan, ctx, keep, device_id=device_id,
                        record_timeline=GpuStage.RECORD_TIMELINE, use_host_func=GpuStage.USE_HOST_FUNC)

    return make
