"""``python_function`` and friends: numpy/torch/DLPack steps, failures per sample, async steps, async sources."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
from helpers import run_arrays

import streamflow as sf
from streamflow import fn


def test_a_per_sample_step_with_two_outputs() -> None:
    images = [np.arange(12, dtype=np.float32).reshape(3, 4), np.ones((2, 2), np.float32)]

    def stats(x):  # type: ignore[no-untyped-def]
        return x * 2, np.float32(x.sum())

    doubled, total = run_arrays(images, lambda x: fn.python_function(x, function=stats, num_outputs=2))
    np.testing.assert_array_equal(doubled[0], images[0] * 2)
    assert float(total[0]) == 66.0 and float(total[1]) == 4.0


def test_a_raising_function_fails_its_sample_only_naming_the_function() -> None:
    def picky(x):  # type: ignore[no-untyped-def]
        if x.sum() > 10:
            raise ValueError("too bright")
        return x

    @sf.pipeline_def(batch_size=3, num_threads=2, on_error="skip")
    def pipe():  # type: ignore[no-untyped-def]
        src = fn.external_source([[np.ones(2), np.full(2, 9.0), np.zeros(2)]])
        return (fn.python_function(src, function=picky),)

    with pipe() as p:
        batch = p.run()
    assert len(batch[0]) == 2
    (sample_id, err), = batch.dropped
    assert sample_id == 1 and "python_function" in err.reason and "picky raised ValueError: too bright" in err.reason


def test_steps_of_different_samples_run_in_parallel() -> None:
    inside, peak = 0, 0
    lock = threading.Lock()

    def slow(x):  # type: ignore[no-untyped-def]
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        time.sleep(0.03)
        with lock:
            inside -= 1
        return x

    (out,) = run_arrays([np.zeros(1)] * 8, lambda x: fn.python_function(x, function=slow))
    assert len(out) == 8 and peak > 1, "Python steps must not be serialized"


def test_batch_processing() -> None:
    def normalize(batch):  # type: ignore[no-untyped-def]
        mean = np.mean([b.mean() for b in batch])
        return [b - mean for b in batch]

    images = [np.full((2, 2), 1.0), np.full((2, 2), 3.0)]
    (out,) = run_arrays(images, lambda x: fn.python_function(x, function=normalize, batch_processing=True))
    # the engine may split a batch in chunks: each chunk is normalized by its own mean
    assert all(o.shape == (2, 2) for o in out)


def test_async_steps_run_concurrently_with_bounded_concurrency() -> None:
    inside, peak = 0, 0

    async def fetch(x):  # type: ignore[no-untyped-def]
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        await asyncio.sleep(0.02)
        inside -= 1
        return x + 1

    @sf.pipeline_def(batch_size=8, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        src = fn.external_source([[np.float32([i]) for i in range(8)]])
        return (fn.python_function(src, function=fetch, max_concurrency=3),)

    with pipe() as p:
        (out,) = p.run()
    assert [float(out.at(i)[0]) for i in range(8)] == [i + 1.0 for i in range(8)]
    assert 1 < peak <= 3


def test_torch_and_dlpack_steps() -> None:
    torch = pytest.importorskip("torch")

    def with_torch(x):  # type: ignore[no-untyped-def]
        assert isinstance(x, torch.Tensor)
        return torch.flip(x, dims=[0])

    def with_dlpack(x):  # type: ignore[no-untyped-def]
        return torch.from_dlpack(x) * 2

    images = [np.arange(6, dtype=np.float32).reshape(3, 2)]
    (a,) = run_arrays(images, lambda x: fn.torch_python_function(x, function=with_torch))
    (b,) = run_arrays(images, lambda x: fn.dl_tensor_python_function(x, function=with_dlpack))
    np.testing.assert_array_equal(a[0], images[0][::-1])
    np.testing.assert_array_equal(b[0], images[0] * 2)


def test_dlpack_step_returning_capsules() -> None:
    """DALI's dl_tensor_python_function functions return DLPack capsules (torch.utils.dlpack.to_dlpack)."""
    torch = pytest.importorskip("torch")
    from torch.utils import dlpack

    def as_capsules(x, y):  # type: ignore[no-untyped-def]
        t = dlpack.from_dlpack(x)
        return dlpack.to_dlpack(t + 1), dlpack.to_dlpack(dlpack.from_dlpack(y).to(torch.int64))

    images = [np.arange(6, dtype=np.float32).reshape(3, 2), np.ones((2, 2), np.float32)]
    a, b = run_arrays(images, lambda x: fn.dl_tensor_python_function(x, x, function=as_capsules, num_outputs=2))
    np.testing.assert_array_equal(a[1], images[1] + 1)
    assert b[0].dtype == np.int64
    np.testing.assert_array_equal(b[0], images[0].astype(np.int64))


def test_batch_processing_failure_is_not_retried_sample_by_sample() -> None:
    """A whole-batch function that fails on the batch fails it: rerunning it on single samples (how failing
    rows are found for per-sample steps) would give results computed on one-sample batches."""
    calls: list[int] = []

    def stacked_mean(samples):  # type: ignore[no-untyped-def]
        calls.append(len(samples))
        mean = np.stack(samples).mean(axis=0)  # fails on samples of different shapes
        return [s - mean for s in samples]

    data = [np.zeros(2, np.float32), np.zeros(3, np.float32)]
    with pytest.raises(sf.PipelineError, match="stacked_mean raised ValueError"):
        run_arrays(data, lambda x: fn.python_function(x, function=stacked_mean, batch_processing=True))
    assert 1 not in calls


def test_argument_errors() -> None:
    src = fn.external_source([[np.zeros(1)]])
    with pytest.raises(sf.PipelineDefinitionError, match="give the function"):
        fn.python_function(src)
    with pytest.raises(sf.PipelineDefinitionError, match="must be callable"):
        fn.python_function(src, function=3)
    with pytest.raises(sf.PipelineDefinitionError, match="python_function: input 0 is an array"):
        fn.python_function(np.zeros(3), function=lambda x: x)


def test_an_async_source_streams_from_a_local_http_server() -> None:
    """Beyond DALI: an async generator function fetches samples over HTTP on the pipeline's event loop."""
    aiohttp = pytest.importorskip("aiohttp")
    from aiohttp import web

    async def main() -> list[list[int]]:
        async def handler(request):  # type: ignore[no-untyped-def]
            k = int(request.match_info["k"])
            return web.Response(body=np.full(4, k, np.uint8).tobytes())

        app = web.Application()
        app.router.add_get("/sample/{k}", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        async def samples():  # type: ignore[no-untyped-def]
            async with aiohttp.ClientSession() as session:
                for k in range(6):
                    async with session.get(f"http://127.0.0.1:{port}/sample/{k}") as r:
                        yield np.frombuffer(await r.read(), np.uint8)

        @sf.pipeline_def(batch_size=3, num_threads=1)
        def pipe():  # type: ignore[no-untyped-def]
            return (fn.external_source(source=samples, batch=False),)

        got = []
        try:
            async with pipe() as p:
                async for (batch,) in p:
                    got.append([int(batch.at(i)[0]) for i in range(len(batch))])
        finally:
            await runner.cleanup()
        return got

    assert asyncio.run(main()) == [[0, 1, 2], [3, 4, 5]]
