"""Dynamic batching for async inference servers.

An inference server hands each request's input to a ``DynamicBatcher`` and
awaits that request's outputs; the batcher groups concurrent requests into
batches, so the decoder (and the model, through ``postprocess``) work on full
batches instead of one image at a time::

    import streamflow as sf
    from streamflow import fn
    from streamflow.serve import DynamicBatcher

    @sf.pipeline_def(num_threads=2, device_id=None)
    def preprocess(jpegs):                      # the batcher's input node
        images = fn.decoders.image(jpegs)
        images = fn.resize(images, resize_x=224, resize_y=224)
        return fn.crop_mirror_normalize(images, mean=[...], std=[...])

    async with DynamicBatcher(preprocess, max_batch_size=32, max_delay=0.005) as batcher:
        tensor = await batcher.submit(jpeg_bytes)   # this request's CHW float32 array

How a batch forms: the batcher owns the pipeline's ``fn.external_source``.
When the pipeline asks for its next batch, the batcher waits until
``max_batch_size`` requests are waiting or the oldest waiting request has
waited ``max_delay`` seconds, whichever comes first, and hands over up to
``max_batch_size`` requests; when nothing is in the pipeline and the load
is low, a partial batch leaves at once (``dispatch_when_idle``). At most
``max_batches_in_flight`` batches are inside the pipeline (and
``postprocess``) at once; while they are busy, requests keep arriving, so
batches grow with the load.

Life of a request::

    submit() --queue full--> OverloadedError (at once)
       |
    waiting --cancelled--> removed from the queue
       |
    batched --------------> pipeline (on_error="skip") --> postprocess --> result
       |                        | bad input: that request's SampleError, the rest go on
       |                        | pipeline failure: the batch is retried (see below)
       |--cancelled--> result discarded when it comes
    aclose(): the waiting requests are processed (drain) or failed with
    PipelineClosedError; every request gets an answer or an error.

Nothing here is CPU-specific: the outputs are whatever the pipeline gives
(``TensorList.at(i)`` is a numpy array for host data, a cupy array for GPU data).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import inspect
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .errors import (
    OverloadedError,
    PipelineClosedError,
    PipelineDefinitionError,
    PipelineError,
    SampleError,
)
from .fn import external_source
from .graph import DataNode
from .pipeline import Pipeline
from .stats import PipelineStats
from .types import ErrorPolicy

__all__ = ["BatcherStats", "DynamicBatcher"]

# A request whose batch had to be re-run (pipeline failure, see _recover) is
# tried at most this many times before it fails.
MAX_ATTEMPTS = 4

# Latencies kept for the percentiles of stats() (a ring of the latest ones).
LATENCY_WINDOW = 10_000


# How the batcher's external source names its samples (ExternalSource.read_batch).
_SOURCE_NAME = "serve"
# dispatch_when_idle="auto": at or above this mean fill of the latest batches
# the load is high enough that waiting max_delay fills batches.
AUTO_WAIT_FILL = 0.5
# Weight of the newest batch in that mean (about the last 4 batches count).
FILL_SMOOTHING = 0.25


@dataclass(frozen=True)
class BatcherStats:
    """A snapshot of a batcher's activity (``DynamicBatcher.stats()``).

    Attributes:
        queue_length: requests waiting to be batched now.
        in_flight: requests in a batch inside the pipeline or ``postprocess`` now.
        submitted: requests accepted by ``submit`` (not counting ``rejected``).
        ok: requests answered with a result.
        failed: requests answered with an error (bad input, pipeline failure,
            shutdown).
        cancelled: requests whose caller went away before the answer.
        rejected: ``submit`` calls refused with ``OverloadedError`` (queue full).
        batches: batches handed to the pipeline.
        batch_size_mean: mean requests per batch.
        batch_size_histogram: batch size -> number of batches of that size.
        latency_p50, latency_p95, latency_p99, latency_mean: seconds from
            ``submit`` to the result, over the latest successful requests
            (``nan`` before the first).
        postprocess_time: seconds spent in ``postprocess`` (all batches).
        retried: requests put back in the queue after a pipeline failure.
        pipeline_restarts: times the pipeline was rebuilt after it failed.
    """

    queue_length: int
    in_flight: int
    submitted: int
    ok: int
    failed: int
    cancelled: int
    rejected: int
    batches: int
    batch_size_mean: float
    batch_size_histogram: dict[int, int]
    latency_p50: float
    latency_p95: float
    latency_p99: float
    latency_mean: float
    postprocess_time: float
    retried: int
    pipeline_restarts: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (histogram keys become strings)."""
        d = asdict(self)
        d["batch_size_histogram"] = {str(k): v for k, v in sorted(self.batch_size_histogram.items())}
        return d


@dataclass(eq=False)
class _Request:
    inputs: tuple[Any, ...]
    future: asyncio.Future[Any]
    submitted_at: float
    id: int
    attempts: int = 0
    # Retried requests go back to the front of the queue in groups; a group
    # forms a batch of its own, at once (no new requests mixed in).
    group: int | None = None
    alone: bool = False  # retried in a batch of its own (it may be what broke the pipeline)


@dataclass
class _Generation:
    """One pipeline instance and what it has in flight (rebuilt after a failure)."""

    pipe: Pipeline
    slots: asyncio.Semaphore
    inflight: dict[int, list[_Request]] = field(default_factory=dict)  # batch_index -> requests


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return math.nan
    k = (len(sorted_values) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def _check_input(value: Any, index: int) -> None:
    """Refuse at once what the external source cannot take (it would fail the whole batch)."""
    if isinstance(value, (bytes, bytearray, memoryview)) or type(value).__module__.startswith("cupy"):
        return
    try:
        ok = np.asarray(value).dtype != object
    except Exception:  # not array-like at all
        ok = False
    if not ok:
        raise TypeError(
            f"submit() input {index} must be bytes, an array or a number, got {type(value).__name__}"
        )


async def _caller_stream_done(inputs: Sequence[Any]) -> None:
    """Wait (without blocking the loop) until the caller's queued work on its cupy inputs is done.

    A cupy array submitted right after the kernels that produced it were queued
    on the caller's current stream may not be written yet; the pipeline reads
    it on its own streams, so an event recorded on the caller's stream must
    complete first.
    """
    if not any(type(v).__module__.startswith("cupy") for v in inputs):
        return
    import cupy

    from .gpu.streams import wait_event

    event = cupy.cuda.Event(block=False, disable_timing=True)
    event.record(cupy.cuda.get_current_stream())
    await wait_event(event)


def _request_error(req: _Request, err: BaseException) -> BaseException:
    """The error one request receives for a failed sample (a new ``SampleError``)."""
    reason = getattr(err, "reason", None) or f"{type(err).__name__}: {err}"
    cls = type(err) if isinstance(err, SampleError) else SampleError
    try:
        out: BaseException = cls(reason, f"request {req.id}")
    except Exception:  # a subclass with another constructor
        out = SampleError(reason, f"request {req.id}")
    out.__cause__ = err
    return out


class DynamicBatcher:
    """Batch concurrent requests through one pipeline; ``await submit(x)`` per request.

    Args:
        definition: the pipeline definition. Its first argument is the input
            node that the batcher feeds (``num_inputs`` arguments with
            ``num_inputs > 1``); it returns the output node(s). Either a
            ``@pipeline_def`` function (its ``num_threads``, ``device_id``,
            ``seed``... are used) or a plain function (pass those as
            ``pipeline_args``). The batcher sets ``batch_size=max_batch_size``
            and ``on_error="skip"`` (a bad input fails only its request).
        max_batch_size: the most requests in one batch.
        max_delay: the longest [s] the oldest waiting request waits for the
            batch to fill, when the pipeline has room for another batch.
        max_queue: the most requests waiting to be batched; past it ``submit``
            raises ``OverloadedError`` at once.
        max_batches_in_flight: batches inside the pipeline and ``postprocess``
            at once (>= 2 overlaps preprocessing of a batch with the
            ``postprocess`` of the previous one).
        postprocess: optional ``f(outputs) -> per-row results``, called once
            per batch with the batch's outputs (a tuple of ``TensorList``) and
            returning a sequence with one result per row; that result is what
            ``submit`` returns. Use it to run the model on the whole batch. A
            plain function runs on a dedicated thread (one batch at a time);
            an ``async def`` is awaited on the event loop.
        dispatch_when_idle: whether a partial batch leaves at once, without
            waiting for ``max_delay``, when no batch is in the pipeline or
            ``postprocess``. ``"auto"`` (default): yes while the latest
            batches were less than half full (low load: a request would wait
            for company that does not come), no once they are at least half
            full (high load: waiting fills the batches and the model's cost
            per request falls). ``True``: always (lowest latency at low load,
            smaller batches at high load). ``False``: never, ``max_delay``
            always applies.
        num_inputs: inputs per request (``submit(a, b)`` for 2).
        drain_timeout: how long [s] ``aclose()`` lets the waiting and
            in-flight requests finish before failing the rest.
        pipeline_args: pipeline arguments (``num_threads``, ``device_id``,
            ``seed``, ``prefetch_queue_depth``) for a plain-function definition,
            or overrides for a ``@pipeline_def`` one.

    ``submit`` returns, for request ``x``: ``postprocess``'s result for ``x`` if
    given; otherwise the sample of ``x`` (``TensorList.at(row)``: a numpy array
    for host outputs, a view into the batch) for a one-output pipeline, or a
    tuple of them for several outputs.

    Use it on one event loop: ``async with DynamicBatcher(...) as b:`` (or
    ``await b.start()`` ... ``await b.aclose()``).
    """

    def __init__(
        self,
        definition: Callable[..., Any],
        *,
        max_batch_size: int = 32,
        max_delay: float = 0.005,
        max_queue: int = 1024,
        max_batches_in_flight: int = 2,
        postprocess: Callable[[tuple[Any, ...]], Sequence[Any]] | None = None,
        dispatch_when_idle: bool | str = "auto",
        num_inputs: int = 1,
        drain_timeout: float = 30.0,
        pipeline_args: dict[str, Any] | None = None,
    ) -> None:
        if not callable(definition):
            raise PipelineDefinitionError(f"definition must be a pipeline definition function, got {type(definition).__name__}")
        for name, value, low in (
            ("max_batch_size", max_batch_size, 1),
            ("max_queue", max_queue, 1),
            ("max_batches_in_flight", max_batches_in_flight, 1),
            ("num_inputs", num_inputs, 1),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise PipelineDefinitionError(f"{name} must be an int >= {low}, got {value!r}")
        if not (isinstance(max_delay, (int, float)) and max_delay >= 0 and math.isfinite(max_delay)):
            raise PipelineDefinitionError(f"max_delay must be a finite number of seconds >= 0, got {max_delay!r}")
        if not (isinstance(drain_timeout, (int, float)) and drain_timeout >= 0):
            raise PipelineDefinitionError(f"drain_timeout must be a number of seconds >= 0, got {drain_timeout!r}")
        if dispatch_when_idle not in (True, False, "auto"):
            raise PipelineDefinitionError(f"dispatch_when_idle must be True, False or 'auto', got {dispatch_when_idle!r}")
        if postprocess is not None and not callable(postprocess):
            raise PipelineDefinitionError(f"postprocess must be callable, got {type(postprocess).__name__}")
        pipeline_args = dict(pipeline_args or {})
        for forbidden in ("batch_size", "on_error", "checkpoint"):
            if forbidden in pipeline_args:
                raise PipelineDefinitionError(
                    f"pipeline_args may not set {forbidden!r}: the batcher sets batch_size=max_batch_size "
                    "and on_error='skip' itself"
                )
        self.definition = definition
        self.max_batch_size = max_batch_size
        self.max_delay = float(max_delay)
        self.max_queue = max_queue
        self.max_batches_in_flight = max_batches_in_flight
        self.postprocess = postprocess
        self.num_inputs = num_inputs
        self.dispatch_when_idle: bool | str = dispatch_when_idle
        # "auto": moving average of how full the latest batches were (0..1);
        # it starts at 0, so a fresh batcher answers its first requests at once.
        self._fill = 0.0
        self.drain_timeout = float(drain_timeout)
        self.pipeline_args = pipeline_args
        self._post_is_async = postprocess is not None and inspect.iscoroutinefunction(postprocess)
        self._post_executor: concurrent.futures.ThreadPoolExecutor | None = None

        self._loop: asyncio.AbstractEventLoop | None = None
        self._gen: _Generation | None = None
        self._consumer: asyncio.Task[None] | None = None
        self._waiting: collections.deque[_Request] = collections.deque()
        self._wakeup: asyncio.Event | None = None
        self._start_lock: asyncio.Lock | None = None
        self._accepting = False
        self._draining = False  # aclose(): batch what is waiting, then end
        self._closed = False
        self._ids = itertools.count()
        self._groups = itertools.count()
        # statistics
        self._submitted = self._ok = self._failed = self._cancelled = self._rejected = 0
        self._batches = 0
        self._retried = 0
        self._restarts = 0
        self._post_time = 0.0
        self._batch_sizes: collections.Counter[int] = collections.Counter()
        self._latencies: collections.deque[float] = collections.deque(maxlen=LATENCY_WINDOW)

    # --- life cycle -----------------------------------------------------------
    async def start(self) -> DynamicBatcher:
        """Build and start the pipeline on the running loop (``async with`` does it)."""
        if self._closed:
            raise PipelineClosedError("the batcher is closed; create a new one")
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop:
            raise RuntimeError("a DynamicBatcher is used from one event loop; this is another one")
        if self._start_lock is None:
            self._loop = loop
            self._start_lock = asyncio.Lock()
            self._wakeup = asyncio.Event()
        async with self._start_lock:
            if self._gen is not None or self._closed:
                return self
            self._gen = await self._new_generation()
            if self.postprocess is not None and not self._post_is_async:
                self._post_executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="streamflow-serve")
            self._accepting = True
            self._consumer = loop.create_task(self._consume(), name="streamflow:serve")
        return self

    async def __aenter__(self) -> DynamicBatcher:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self, *, drain: bool = True, timeout: float | None = None) -> None:
        """Stop accepting requests and shut down; every request gets an answer.

        Args:
            drain: finish the waiting and in-flight requests first (up to
                ``timeout``); with ``False`` they fail at once with
                ``PipelineClosedError``.
            timeout: seconds to drain (default ``drain_timeout``); what is
                still unanswered then fails with ``PipelineClosedError``.
        """
        if self._closed:
            return
        self._accepting = False
        self._closed = True
        if self._wakeup is None:  # never started
            return
        consumer = self._consumer
        if drain and consumer is not None and not consumer.done():
            self._draining = True
            self._wakeup.set()
            limit = self.drain_timeout if timeout is None else timeout
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(consumer), limit)
        # Whatever is left (no drain, timeout, or a broken pipeline) fails now.
        if consumer is not None and not consumer.done():
            consumer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await consumer
        closed = PipelineClosedError("the batcher was closed before this request was answered")
        while self._waiting:
            self._fail(self._waiting.popleft(), closed)
        gen, self._gen = self._gen, None
        if gen is not None:
            for reqs in gen.inflight.values():
                for req in reqs:
                    self._fail(req, closed)
            gen.inflight.clear()
            await gen.pipe.aclose()
        if self._post_executor is not None:
            # A postprocess call that never returns cannot be stopped; do not wait for it.
            self._post_executor.shutdown(wait=False, cancel_futures=True)
            self._post_executor = None
        self._wakeup.set()

    @property
    def closed(self) -> bool:
        return self._closed

    # --- the request side -----------------------------------------------------
    async def submit(self, *inputs: Any) -> Any:
        """Process one request's input(s) in the next batch and return its result.

        Raises:
            OverloadedError: ``max_queue`` requests are already waiting.
            SampleError: this input failed (e.g. ``DecodeError``: not an image).
            PipelineClosedError: the batcher is closed (or closed before the
                answer came).
            TypeError: wrong number of inputs, or an input that is not bytes,
                an array or a number.
            PipelineError: the pipeline failed on this request for a reason
                other than its input alone; or ``postprocess`` raised.
        """
        if len(inputs) != self.num_inputs:
            raise TypeError(f"submit() takes {self.num_inputs} input(s) (num_inputs), got {len(inputs)}")
        for k, value in enumerate(inputs):
            _check_input(value, k)
        await _caller_stream_done(inputs)
        if self._gen is None and not self._closed:
            await self.start()
        if not self._accepting:
            raise PipelineClosedError("the batcher is closed; no new requests are accepted")
        if asyncio.get_running_loop() is not self._loop:
            raise RuntimeError("DynamicBatcher.submit() was called from another event loop than the batcher's")
        if len(self._waiting) >= self.max_queue:
            self._rejected += 1
            raise OverloadedError(
                f"the batcher is overloaded: {len(self._waiting)} requests are waiting (max_queue="
                f"{self.max_queue}); retry later"
            )
        assert self._loop is not None and self._wakeup is not None
        req = _Request(inputs, self._loop.create_future(), time.perf_counter(), next(self._ids))
        self._waiting.append(req)
        self._submitted += 1
        # Wake the batch former when the timer must start or the batch is full.
        if len(self._waiting) == 1 or len(self._waiting) >= self.max_batch_size:
            self._wakeup.set()
        try:
            return await req.future
        except asyncio.CancelledError:
            if not req.future.done():
                req.future.cancel()
            if req.future.cancelled():
                # Still waiting: leave the queue. Already batched: its result is
                # discarded when it comes (_resolve/_fail see the done future).
                with contextlib.suppress(ValueError):
                    self._waiting.remove(req)
                self._cancelled += 1
            raise

    # --- answers --------------------------------------------------------------
    def _resolve(self, req: _Request, result: Any) -> None:
        if req.future.done():  # cancelled by its caller
            return
        req.future.set_result(result)
        self._ok += 1
        self._latencies.append(time.perf_counter() - req.submitted_at)

    def _fail(self, req: _Request, error: BaseException) -> None:
        if req.future.done():
            return
        req.future.set_exception(error)
        self._failed += 1

    # --- the pipeline side ----------------------------------------------------
    def _make_pipeline(self, feed: Callable[..., Any]) -> Pipeline:
        """Trace the definition with a fresh input node fed by ``feed``."""
        if self.num_inputs == 1:
            nodes: tuple[DataNode, ...] = (external_source(feed, batch_info=True, name=_SOURCE_NAME),)
        else:
            nodes = tuple(external_source(feed, batch_info=True, num_outputs=self.num_inputs, name=_SOURCE_NAME))
        overrides = {"batch_size": self.max_batch_size, "on_error": "skip"}
        if getattr(self.definition, "__wrapped__", None) is not None:  # a @pipeline_def function
            result = self.definition(*nodes, **self.pipeline_args, **overrides)
        else:
            result = self.definition(*nodes)
        if isinstance(result, Pipeline):
            pipe = result
            if pipe.batch_size != self.max_batch_size or pipe.on_error is not ErrorPolicy.SKIP:
                raise PipelineDefinitionError(
                    "the definition returned a Pipeline built with batch_size="
                    f"{pipe.batch_size}, on_error={pipe.on_error.value!r}; pass the @pipeline_def "
                    "function itself (not a wrapper) so the batcher can set batch_size and on_error"
                )
            return pipe
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        pipe = Pipeline(**{**self.pipeline_args, **overrides})
        pipe.set_outputs(*outputs)
        return pipe

    async def _new_generation(self) -> _Generation:
        slots = asyncio.Semaphore(self.max_batches_in_flight)
        holder: list[_Generation] = []

        async def feed(info: Any) -> Any:
            return await self._feed(holder[0], info)

        gen = _Generation(pipe=self._make_pipeline(feed), slots=slots)
        holder.append(gen)
        await gen.pipe.__aenter__()
        return gen

    async def _feed(self, gen: _Generation, info: Any) -> Any:
        """The pipeline's external source: the next batch of requests."""
        await gen.slots.acquire()
        try:
            batch = await self._form_batch(gen)
        except BaseException:
            gen.slots.release()
            raise
        if batch is None:  # closing and nothing left: end the epoch
            gen.slots.release()
            raise StopAsyncIteration
        gen.inflight[info.iteration] = batch
        self._batches += 1
        self._batch_sizes[len(batch)] += 1
        self._fill += FILL_SMOOTHING * (len(batch) / self.max_batch_size - self._fill)
        for req in batch:
            req.attempts += 1
        if self.num_inputs == 1:
            return [req.inputs[0] for req in batch]
        return tuple([req.inputs[k] for req in batch] for k in range(self.num_inputs))

    def _dispatch_when_idle_now(self) -> bool:
        """Whether a partial batch may leave now that the pipeline is idle."""
        if self.dispatch_when_idle == "auto":
            return self._fill < AUTO_WAIT_FILL
        return bool(self.dispatch_when_idle)

    async def _form_batch(self, gen: _Generation) -> list[_Request] | None:
        """Wait for a full batch or the oldest request's deadline; take the batch."""
        assert self._wakeup is not None
        waiting = self._waiting
        while True:
            if not waiting:
                if self._draining or self._closed:
                    return None
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            head = waiting[0]
            if head.group is not None:  # a retried group: a batch of its own, now
                group: list[_Request] = []
                while waiting and waiting[0].group == head.group and len(group) < self.max_batch_size:
                    group.append(waiting.popleft())
                return group
            if len(waiting) >= self.max_batch_size or self._draining:
                break
            if not gen.inflight and self._dispatch_when_idle_now():
                break
            remaining = head.submitted_at + self.max_delay - time.perf_counter()
            if remaining <= 0:
                break
            self._wakeup.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), remaining)
        batch: list[_Request] = []
        while waiting and len(batch) < self.max_batch_size and waiting[0].group is None:
            batch.append(waiting.popleft())
        return batch

    async def _consume(self) -> None:
        """Take finished batches from the pipeline and answer their requests."""
        while True:
            gen = self._gen
            assert gen is not None
            try:
                batch = await gen.pipe.anext_batch()
                if batch is None:
                    return  # drained: the source ended the epoch
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the pipeline failed: answer, rebuild
                if self._closed and not self._draining:
                    return
                await self._recover(gen, exc)
                continue
            reqs = gen.inflight.get(batch.batch_index, [])
            try:
                await self._deliver(batch, reqs)
            except asyncio.CancelledError:
                raise  # aclose() answers the requests still in gen.inflight
            except Exception as exc:  # a bug here must not strand requests
                for req in reqs:
                    self._fail(req, PipelineError(f"internal error while answering: {type(exc).__name__}: {exc}"))
            gen.inflight.pop(batch.batch_index, None)
            gen.slots.release()
            if self.dispatch_when_idle is not False and not gen.inflight and self._wakeup is not None:
                self._wakeup.set()  # idle now: a waiting partial batch may go

    async def _deliver(self, batch: Any, reqs: list[_Request]) -> None:
        if not reqs:
            return
        base = batch.batch_index * self.max_batch_size
        rows = [int(sid) - base for sid in batch.sample_ids]
        dropped = [(int(sid) - base, err) for sid, err in (getattr(batch, "dropped", None) or [])]
        for row, err in dropped:
            if 0 <= row < len(reqs):
                self._fail(reqs[row], _request_error(reqs[row], err))
        live = [(j, reqs[r]) for j, r in enumerate(rows) if not reqs[r].future.done()]
        if not live:
            return
        outputs = tuple(batch)
        if self.postprocess is None:
            for j, req in live:
                self._resolve(req, outputs[0].at(j) if len(outputs) == 1 else tuple(o.at(j) for o in outputs))
            return
        began = time.perf_counter()
        try:
            if self._post_is_async:
                results = await self.postprocess(outputs)  # type: ignore[misc]
            else:
                assert self._loop is not None
                results = await self._loop.run_in_executor(self._post_executor, self.postprocess, outputs)
            if len(results) != len(rows):
                raise PipelineError(
                    f"postprocess returned {len(results)} results for a batch of {len(rows)}; it must "
                    "return one per row",
                    stage="postprocess",
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the batch's requests get the error
            self._post_time += time.perf_counter() - began
            for _, req in live:
                err = PipelineError(f"postprocess failed: {type(exc).__name__}: {exc}", stage="postprocess")
                err.__cause__ = exc
                self._fail(req, err)
            return
        self._post_time += time.perf_counter() - began
        for j, req in live:
            self._resolve(req, results[j])

    def _requeue(self, reqs: list[_Request], *, alone: bool, why: BaseException | None) -> None:
        """Put requests back at the front of the queue (they were admitted already).

        They come back as one group (a batch of their own), or with ``alone``
        each in a batch of its own. A request that failed alone already, or
        was tried ``MAX_ATTEMPTS`` times, fails instead.
        """
        assert self._wakeup is not None
        together = next(self._groups)
        for req in reversed(reqs):
            if req.future.done():
                continue
            if req.attempts >= MAX_ATTEMPTS or (alone and req.alone):
                detail = f"{type(why).__name__}: {why}" if why is not None else f"{req.attempts} attempts failed"
                err = PipelineError(f"request {req.id} could not be processed: {detail}")
                err.__cause__ = why
                self._fail(req, err)
                continue
            req.alone = req.alone or alone
            req.group = next(self._groups) if alone else together
            self._waiting.appendleft(req)
            self._retried += 1
        self._wakeup.set()

    def _failed_rows(self, gen: _Generation) -> dict[tuple[int, int], str]:
        """(batch index, row) -> reason of the samples the failed pipeline skipped.

        Read from ``pipe.stats().skipped``: the external source's sample id is
        batch index * batch size + row. Empty when that cannot be read.
        """
        found: dict[tuple[int, int], str] = {}
        try:
            skipped = gen.pipe.stats().skipped
        except Exception:  # a best-effort diagnosis
            return found
        for sample in skipped:
            if sample.sample_id is not None:
                sid = sample.sample_id
                found[(sid // self.max_batch_size, sid % self.max_batch_size)] = sample.reason
        return found

    async def _recover(self, gen: _Generation, exc: BaseException) -> None:
        """The pipeline failed: answer or retry its batches, start a new pipeline.

        The oldest batch in flight is the one the failing stage was working
        on. Its rows that the pipeline reported as failed samples fail with
        that reason; the others are retried as one batch. When no row was
        reported, each of its requests is retried in a batch of its own, so a
        request that breaks the pipeline alone fails alone. The later batches
        are retried as they were.
        """
        self._restarts += 1
        failed_rows = self._failed_rows(gen)
        order = sorted(gen.inflight)
        batches = [(k, gen.inflight[k]) for k in order]
        gen.inflight.clear()
        if batches:
            for _, later in reversed(batches[1:]):
                self._requeue(later, alone=False, why=exc)
            index, first = batches[0]
            culprits = {row: reason for (b, row), reason in failed_rows.items() if b == index and row < len(first)}
            for row, reason in culprits.items():
                self._fail(first[row], _request_error(first[row], SampleError(reason)))
            if culprits:
                self._requeue([r for i, r in enumerate(first) if i not in culprits], alone=False, why=exc)
            else:
                self._requeue(first, alone=True, why=exc)
        with contextlib.suppress(Exception):
            await gen.pipe.aclose()
        try:
            self._gen = await self._new_generation()
        except Exception as build_error:
            self._accepting = False
            err = PipelineError(f"the pipeline failed and could not be restarted: {build_error}")
            err.__cause__ = build_error
            while self._waiting:
                self._fail(self._waiting.popleft(), err)
            raise

    # --- information ----------------------------------------------------------
    def stats(self) -> BatcherStats:
        """Queue length, batch sizes, latency percentiles and request counts."""
        lat = sorted(self._latencies)
        in_flight = 0
        if self._gen is not None:
            in_flight = sum(1 for b in self._gen.inflight.values() for r in b if not r.future.done())
        total = sum(k * v for k, v in self._batch_sizes.items())
        return BatcherStats(
            queue_length=len(self._waiting),
            in_flight=in_flight,
            submitted=self._submitted,
            ok=self._ok,
            failed=self._failed,
            cancelled=self._cancelled,
            rejected=self._rejected,
            batches=self._batches,
            batch_size_mean=total / self._batches if self._batches else 0.0,
            batch_size_histogram=dict(sorted(self._batch_sizes.items())),
            latency_p50=_percentile(lat, 50),
            latency_p95=_percentile(lat, 95),
            latency_p99=_percentile(lat, 99),
            latency_mean=sum(lat) / len(lat) if lat else math.nan,
            postprocess_time=self._post_time,
            retried=self._retried,
            pipeline_restarts=self._restarts,
        )

    def pipeline_stats(self) -> PipelineStats | None:
        """``Pipeline.stats()`` of the pipeline running now (None before start).

        A new pipeline starts after a pipeline failure (``pipeline_restarts``),
        with its counters at zero.
        """
        gen = self._gen
        return gen.pipe.stats() if gen is not None else None

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("running" if self._gen is not None else "new")
        return (
            f"DynamicBatcher(max_batch_size={self.max_batch_size}, max_delay={self.max_delay}, "
            f"max_queue={self.max_queue}, state={state})"
        )
