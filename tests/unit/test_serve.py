"""streamflow.serve.DynamicBatcher: batch formation, isolation, cancellation,
overload, shutdown with requests in flight, statistics.

The core tests need only numpy and Pillow (JPEGs made in memory from the real
photos); the HTTP example test at the end is skipped without aiohttp/torch.
Every test runs under a timeout: a hang is a failure.
"""

from __future__ import annotations

import asyncio
import io
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn
from streamflow.errors import (
    OverloadedError,
    PipelineClosedError,
    PipelineDefinitionError,
    PipelineError,
    SampleError,
)
from streamflow.serve import BatcherStats, DynamicBatcher

Image = pytest.importorskip("PIL.Image")

pytestmark = pytest.mark.timeout(30)

REPO = Path(__file__).resolve().parents[2]
PHOTOS = REPO / "tests" / "data" / "photos"
SIZE = 32


def _jpegs(n: int) -> list[bytes]:
    """n small, different JPEGs cut from the real photos."""
    photos = sorted(PHOTOS.glob("*.png"))[:4]
    out = []
    for i in range(n):
        with Image.open(photos[i % len(photos)]) as im:
            im = im.convert("RGB")
            w, h = im.size
            box = (i * 7 % (w // 2), i * 5 % (h // 2), i * 7 % (w // 2) + 96, i * 5 % (h // 2) + 80)
            buf = io.BytesIO()
            im.crop(box).save(buf, format="JPEG", quality=90)
            out.append(buf.getvalue())
    return out


GOOD = _jpegs(8)
JUNK = b"this is not an image"
TRUNCATED = GOOD[0][:40]


@sf.pipeline_def(num_threads=2, device_id=None, seed=0)
def preprocess(jpegs):
    images = fn.decoders.image(jpegs)
    images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
    return fn.crop_mirror_normalize(images, mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0])


def _reference() -> list[np.ndarray]:
    """Every GOOD image through the same pipeline, one batch, no batcher."""
    feed = iter([list(GOOD)])

    @sf.pipeline_def(batch_size=len(GOOD), num_threads=1, device_id=None, seed=0)
    def whole():
        return preprocess.__wrapped__(fn.external_source(feed))

    pipe = whole()
    try:
        batch = pipe.run()
        return [np.array(batch[0].at(i)) for i in range(len(GOOD))]
    finally:
        pipe.close()


REFERENCE = _reference()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


def _check_ok(inputs, results):
    """Each good input got its own image (rows are not mixed up), each bad one a SampleError."""
    for x, r in zip(inputs, results):
        if x in GOOD:
            assert not isinstance(r, BaseException), f"a good input failed: {r!r}"
            np.testing.assert_array_equal(np.asarray(r), REFERENCE[GOOD.index(x)])
        else:
            assert isinstance(r, SampleError), f"a bad input got {r!r}"


# --- batch formation ---------------------------------------------------------


def test_size_trigger_forms_full_batches_without_waiting_for_the_delay():
    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=4, max_delay=30.0) as b:
            began = time.perf_counter()
            results = await asyncio.gather(*(b.submit(x) for x in GOOD))
            took = time.perf_counter() - began
            return results, took, b.stats()

    results, took, stats = run(main())
    _check_ok(GOOD, results)
    assert took < 10  # far below max_delay: the size trigger fired
    assert stats.batch_size_histogram == {4: 2}
    assert stats.batches == 2 and stats.batch_size_mean == 4.0


def test_delay_trigger_sends_a_partial_batch_after_max_delay():
    delay = 0.2

    async def main():
        async with DynamicBatcher(preprocess, dispatch_when_idle=False, max_batch_size=64, max_delay=delay) as b:
            began = time.perf_counter()
            results = await asyncio.gather(*(b.submit(x) for x in GOOD[:3]))
            return results, time.perf_counter() - began, b.stats()

    results, took, stats = run(main())
    _check_ok(GOOD[:3], results)
    assert delay * 0.9 <= took < delay + 5
    assert stats.batch_size_histogram == {3: 1}
    assert stats.latency_p50 >= delay * 0.9


def test_zero_delay_sends_at_once_and_batches_grow_under_load():
    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=8, max_delay=0.0, max_batches_in_flight=1) as b:
            first = await b.submit(GOOD[0])
            inputs = [GOOD[i % len(GOOD)] for i in range(40)]
            results = await asyncio.gather(*(b.submit(x) for x in inputs))
            return first, inputs, results, b.stats()

    first, inputs, results, stats = run(main())
    np.testing.assert_array_equal(first, REFERENCE[0])
    _check_ok(inputs, results)
    # While one batch is in the pipeline the others wait and group together.
    assert stats.batches < 41
    assert max(stats.batch_size_histogram) > 1
    assert sum(k * v for k, v in stats.batch_size_histogram.items()) == 41


# --- isolation -----------------------------------------------------------------


@pytest.mark.parametrize(
    "inputs",
    [
        [GOOD[0], JUNK, GOOD[1], GOOD[2]],
        [JUNK, GOOD[1], GOOD[2]],
        [GOOD[0], JUNK, GOOD[2]],  # the bad row alone in its chunk, mid-batch
        [GOOD[0], GOOD[1], JUNK],
        [JUNK],
        [JUNK, JUNK, JUNK],  # a batch of nothing but bad inputs
        [GOOD[0], TRUNCATED, GOOD[3], JUNK, GOOD[4], GOOD[5]],
        [GOOD[0], GOOD[1], JUNK, GOOD[2], GOOD[3], JUNK, GOOD[4], JUNK],
    ],
    ids=["junk-row1", "junk-first", "junk-mid-alone", "junk-last", "junk-only", "all-junk", "two-kinds", "three-junk"],
)
def test_a_bad_input_fails_only_its_own_request(inputs):
    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=len(inputs), max_delay=30.0) as b:
            results = await asyncio.gather(*(b.submit(x) for x in inputs), return_exceptions=True)
            # The batcher goes on working after the bad batch.
            after = await asyncio.gather(*(b.submit(x) for x in GOOD[: len(inputs)]))
            return results, after, b.stats()

    results, after, stats = run(main())
    _check_ok(inputs, results)
    _check_ok(GOOD[: len(inputs)], after)
    bad = sum(x not in GOOD for x in inputs)
    assert stats.failed == bad and stats.ok == len(inputs) - bad + len(after)


def test_the_error_of_a_bad_input_is_clear():
    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=4, max_delay=30.0) as b:
            return await asyncio.gather(*(b.submit(x) for x in [GOOD[0], JUNK, GOOD[1], GOOD[2]]), return_exceptions=True)

    results = run(main())
    err = results[1]
    assert isinstance(err, SampleError)
    assert "request" in str(err) and "not a recognised image format" in str(err)


def test_a_wrong_input_type_fails_its_request_at_once():
    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=2, max_delay=0.01) as b:
            with pytest.raises(TypeError, match="input"):
                await b.submit(GOOD[0], GOOD[1])
            with pytest.raises(TypeError, match="bytes, an array or a number"):
                await b.submit(object())
            return await b.submit(GOOD[2])

    np.testing.assert_array_equal(run(main()), REFERENCE[2])


def test_a_pipeline_failure_fails_only_the_request_that_causes_it(monkeypatch):
    """An input that breaks the whole pipeline (here: one the external source
    refuses, with submit's own check turned off) fails alone; the batcher
    rebuilds the pipeline and answers everyone else."""
    from streamflow.ops import external_source

    poison = np.frombuffer(b"poison", dtype=np.uint8)
    real_to_sample = external_source._to_sample

    def breaking_to_sample(value, dtype, where):
        # Simulates a failure of the whole pipeline, not of one sample.
        if isinstance(value, np.ndarray) and value.tobytes() == b"poison":
            raise PipelineError("the pipeline broke", operator="external_source")
        return real_to_sample(value, dtype, where)

    monkeypatch.setattr(external_source, "_to_sample", breaking_to_sample)
    inputs = [GOOD[0], GOOD[1], poison, GOOD[2], GOOD[3], GOOD[4]]

    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=3, max_delay=0.01) as b:
            results = await asyncio.gather(*(b.submit(x) for x in inputs), return_exceptions=True)
            after = await b.submit(GOOD[5])
            return results, after, b.stats()

    results, after, stats = run(main())
    for x, r in zip(inputs, results):
        if x is poison:
            assert isinstance(r, PipelineError) and "could not be processed" in str(r)
        else:
            np.testing.assert_array_equal(r, REFERENCE[GOOD.index(x)])
    np.testing.assert_array_equal(after, REFERENCE[5])
    assert stats.pipeline_restarts >= 1 and stats.failed == 1 and stats.ok == 6


def test_an_input_of_the_wrong_kind_fails_only_its_request(monkeypatch):
    """Without submit's own check, the external source refuses the sample: only that row fails."""
    from streamflow import serve

    monkeypatch.setattr(serve, "_check_input", lambda value, index: None)
    inputs = [GOOD[0], object(), GOOD[1]]

    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=3, max_delay=0.01) as b:
            results = await asyncio.gather(*(b.submit(x) for x in inputs), return_exceptions=True)
            return results, b.stats()

    results, stats = run(main())
    assert isinstance(results[1], sf.SampleError) and "must be an array, bytes or a number" in str(results[1])
    np.testing.assert_array_equal(results[0], REFERENCE[0])
    np.testing.assert_array_equal(results[2], REFERENCE[1])
    assert stats.pipeline_restarts == 0


# --- cancellation ---------------------------------------------------------------


def test_cancelled_waiting_request_leaves_the_queue():
    async def main():
        async with DynamicBatcher(preprocess, dispatch_when_idle=False, max_batch_size=8, max_delay=30.0) as b:
            task = asyncio.create_task(b.submit(GOOD[0]))
            await asyncio.sleep(0.05)
            assert b.stats().queue_length == 1
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            stats = b.stats()
            assert stats.queue_length == 0 and stats.cancelled == 1
            # A later full batch is not disturbed by the cancelled one.
            results = await asyncio.gather(*(b.submit(x) for x in GOOD))
            _check_ok(GOOD, results)
            return b.stats()

    stats = run(main())
    assert stats.batch_size_histogram == {8: 1}
    assert stats.ok == 8 and stats.cancelled == 1


def test_cancelled_batched_request_result_is_discarded():
    entered = None
    release = None

    async def slow_model(outputs):
        entered.set()
        await release.wait()
        return [o.shape for o in outputs[0]]

    async def main():
        nonlocal entered, release
        entered, release = asyncio.Event(), asyncio.Event()
        async with DynamicBatcher(preprocess, max_batch_size=2, max_delay=30.0, postprocess=slow_model) as b:
            gone = asyncio.create_task(b.submit(GOOD[0]))
            stays = asyncio.create_task(b.submit(GOOD[1]))
            await entered.wait()
            assert b.stats().in_flight == 2
            gone.cancel()
            with pytest.raises(asyncio.CancelledError):
                await gone
            release.set()
            result = await stays
            stats = b.stats()
        return result, stats

    result, stats = run(main())
    assert result == (3, SIZE, SIZE)
    assert stats.ok == 1 and stats.cancelled == 1 and stats.in_flight == 0 and stats.queue_length == 0


def test_cancelling_many_clients_leaks_nothing():
    async def main():
        before = asyncio.all_tasks()
        async with DynamicBatcher(preprocess, max_batch_size=4, max_delay=0.001) as b:
            tasks = [asyncio.create_task(b.submit(GOOD[i % 8])) for i in range(64)]
            await asyncio.sleep(0.01)
            for t in tasks[::2]:
                t.cancel()
            done = await asyncio.gather(*tasks, return_exceptions=True)
            stats = b.stats()
        leftover = asyncio.all_tasks() - before
        return done, stats, leftover

    done, stats, leftover = run(main())
    assert not leftover
    assert stats.ok + stats.cancelled == 64
    assert stats.queue_length == 0 and stats.in_flight == 0
    for r in done[1::2]:
        assert isinstance(r, np.ndarray)


# --- backpressure -----------------------------------------------------------------


def test_overload_is_refused_at_once():
    async def main():
        async with DynamicBatcher(preprocess, dispatch_when_idle=False, max_batch_size=64, max_delay=0.3, max_queue=3) as b:
            waiting = [asyncio.create_task(b.submit(GOOD[i])) for i in range(3)]
            await asyncio.sleep(0.01)
            began = time.perf_counter()
            with pytest.raises(OverloadedError, match="max_queue=3"):
                await b.submit(GOOD[3])
            refused_in = time.perf_counter() - began
            results = await asyncio.gather(*waiting)
            again = await b.submit(GOOD[4])  # room again once the batch left
            return refused_in, results, again, b.stats()

    refused_in, results, again, stats = run(main())
    assert refused_in < 0.05
    _check_ok(GOOD[:3], results)
    np.testing.assert_array_equal(again, REFERENCE[4])
    assert stats.rejected == 1 and stats.ok == 4 and stats.submitted == 4


# --- shutdown ---------------------------------------------------------------------


def test_close_drains_requests_in_flight():
    async def main():
        b = DynamicBatcher(preprocess, max_batch_size=4, max_delay=30.0)
        await b.start()
        tasks = [asyncio.create_task(b.submit(GOOD[i % 8])) for i in range(10)]
        await asyncio.sleep(0.01)  # 8 batched (size trigger), 2 waiting for the delay
        await b.aclose()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        with pytest.raises(PipelineClosedError):
            await b.submit(GOOD[0])
        return results, b.stats()

    results, stats = run(main())
    _check_ok([GOOD[i % 8] for i in range(10)], results)
    assert stats.ok == 10 and stats.queue_length == 0


def test_close_without_drain_answers_everyone_with_an_error():
    async def main():
        b = DynamicBatcher(preprocess, dispatch_when_idle=False, max_batch_size=4, max_delay=30.0)
        await b.start()
        tasks = [asyncio.create_task(b.submit(GOOD[i % 8])) for i in range(6)]
        await asyncio.sleep(0.01)
        await b.aclose(drain=False)
        return await asyncio.gather(*tasks, return_exceptions=True), b.stats()

    results, stats = run(main())
    # Each request has an answer: its image (if its batch finished first) or the closing error.
    for x, r in zip([GOOD[i % 8] for i in range(6)], results):
        if isinstance(r, BaseException):
            assert isinstance(r, PipelineClosedError)
        else:
            np.testing.assert_array_equal(r, REFERENCE[GOOD.index(x)])
    assert stats.ok + stats.failed == 6
    assert sum(isinstance(r, PipelineClosedError) for r in results) >= 2  # the 2 never batched


def test_close_with_a_hung_model_times_out_and_answers_everyone():
    hang = threading.Event()

    def stuck_model(outputs):
        hang.wait(10)
        return list(range(len(outputs[0])))

    async def main():
        b = DynamicBatcher(preprocess, max_batch_size=2, max_delay=0.001, postprocess=stuck_model)
        await b.start()
        tasks = [asyncio.create_task(b.submit(GOOD[i])) for i in range(5)]
        await asyncio.sleep(0.2)
        began = time.perf_counter()
        await b.aclose(timeout=0.3)
        took = time.perf_counter() - began
        results = await asyncio.gather(*tasks, return_exceptions=True)
        return took, results

    try:
        took, results = run(main())
    finally:
        hang.set()
    assert took < 5
    assert all(isinstance(r, PipelineClosedError) for r in results)


def test_close_is_idempotent_and_a_never_started_batcher_closes():
    async def main():
        b = DynamicBatcher(preprocess)
        await b.aclose()
        await b.aclose()
        with pytest.raises(PipelineClosedError):
            await b.submit(GOOD[0])
        async with DynamicBatcher(preprocess) as c:
            await c.submit(GOOD[0])
        await c.aclose()
        assert c.closed

    run(main())


# --- postprocess, plain definitions, several inputs -----------------------------


def test_postprocess_runs_once_per_batch_and_returns_per_row_results():
    calls = []

    def model(outputs):
        batch = outputs[0].as_tensor()
        calls.append(batch.shape[0])
        return [float(x.mean()) for x in batch]

    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=4, max_delay=30.0, postprocess=model) as b:
            return await asyncio.gather(*(b.submit(x) for x in [GOOD[0], JUNK, GOOD[1], GOOD[2]]), return_exceptions=True)

    results = run(main())
    assert calls == [3]
    assert isinstance(results[1], SampleError)
    for i, j in ((0, 0), (2, 1), (3, 2)):
        assert results[i] == pytest.approx(float(REFERENCE[j].mean()))


def test_postprocess_error_fails_its_batch_only():
    def model(outputs):
        if len(outputs[0]) == 2:
            raise RuntimeError("model exploded")
        return [None] * len(outputs[0])

    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=2, max_delay=30.0, postprocess=model) as b:
            first = await asyncio.gather(b.submit(GOOD[0]), b.submit(GOOD[1]), return_exceptions=True)
            b.max_delay = 0.01
            second = await b.submit(GOOD[2])
            return first, second

    first, second = run(main())
    assert all(isinstance(r, PipelineError) and "model exploded" in str(r) for r in first)
    assert second is None


def test_plain_definition_with_two_inputs_and_pipeline_args():
    def definition(jpegs, labels):
        images = fn.decoders.image(jpegs)
        return fn.resize(images, resize_x=8, resize_y=8), labels

    async def main():
        async with DynamicBatcher(
            definition, num_inputs=2, max_batch_size=3, max_delay=0.01, pipeline_args={"num_threads": 1}
        ) as b:
            return await asyncio.gather(*(b.submit(GOOD[i], np.int32(i)) for i in range(5)))

    for i, (image, label) in enumerate(run(main())):
        assert image.shape == (8, 8, 3) and int(label) == i


def test_invalid_arguments_are_refused():
    with pytest.raises(ValueError, match="max_batch_size"):
        DynamicBatcher(preprocess, max_batch_size=0)
    with pytest.raises(ValueError, match="max_delay"):
        DynamicBatcher(preprocess, max_delay=-1)
    with pytest.raises(ValueError, match="batch_size"):
        DynamicBatcher(preprocess, pipeline_args={"batch_size": 4})


# --- statistics ---------------------------------------------------------------------


def test_stats_counts_and_latency_percentiles():
    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=4, max_delay=0.005, max_queue=16) as b:
            empty = b.stats()
            inputs = [GOOD[i % 8] if i % 6 else JUNK for i in range(24)]
            results = await asyncio.gather(*(b.submit(x) for x in inputs), return_exceptions=True)
            return empty, inputs, results, b.stats()

    empty, inputs, results, stats = run(main())
    assert isinstance(empty, BatcherStats) and empty.ok == 0 and np.isnan(empty.latency_p50)
    ok = sum(not isinstance(r, BaseException) for r in results)
    overloaded = sum(isinstance(r, OverloadedError) for r in results)
    assert stats.ok == ok and stats.rejected == overloaded
    assert stats.failed == 4 - sum(isinstance(r, OverloadedError) for x, r in zip(inputs, results) if x == JUNK)
    assert stats.submitted == 24 - overloaded
    assert stats.queue_length == 0 and stats.in_flight == 0
    assert 0 < stats.latency_p50 <= stats.latency_p95 <= stats.latency_p99 < 20
    assert stats.batch_size_mean > 0 and all(1 <= k <= 4 for k in stats.batch_size_histogram)
    d = stats.as_dict()
    assert set(d) >= {"queue_length", "batch_size_histogram", "latency_p99", "ok", "failed", "cancelled", "rejected"}


# --- the HTTP example (needs aiohttp and torch) -----------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(60)
def test_inference_server_example_answers_over_http(tmp_path):
    pytest.importorskip("aiohttp")
    pytest.importorskip("torch")
    import aiohttp

    port = _free_port()
    log = open(tmp_path / "server.log", "wb")
    server = subprocess.Popen(
        [sys.executable, str(REPO / "examples" / "inference_server.py"), "--port", str(port), "--max-batch-size", "4"],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    async def main():
        async with aiohttp.ClientSession() as session:
            deadline = time.monotonic() + 40
            while True:
                try:
                    async with session.get(f"http://127.0.0.1:{port}/health") as r:
                        if r.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
                await asyncio.sleep(0.2)

            async def post(data):
                async with session.post(f"http://127.0.0.1:{port}/predict", data=data) as r:
                    return r.status, await r.json()

            good = await asyncio.gather(*(post(x) for x in GOOD[:5]))
            bad = await post(JUNK)
            async with session.get(f"http://127.0.0.1:{port}/stats") as r:
                stats = await r.json()
            return good, bad, stats

    try:
        good, bad, stats = asyncio.run(asyncio.wait_for(main(), 50))
    finally:
        server.terminate()
        server.wait(10)
        log.close()
    assert server.returncode == 0, (tmp_path / "server.log").read_text()[-2000:]
    for status, body in good:
        assert status == 200 and isinstance(body["class"], int) and body["latency_ms"] > 0
    assert bad[0] == 400 and "error" in bad[1]
    assert stats["ok"] >= 5 and stats["failed"] >= 1


def test_dispatch_when_idle_skips_the_delay_at_low_load():
    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=8, max_delay=5.0, dispatch_when_idle=True) as b:
            began = time.perf_counter()
            first = await b.submit(GOOD[0])
            took = time.perf_counter() - began
            return first, took

    first, took = run(main())
    np.testing.assert_array_equal(first, REFERENCE[0])
    assert took < 2.5  # not the 5 s max_delay


def test_dispatch_when_idle_auto_waits_only_once_batches_fill():
    """Default "auto": at once while batches are small; max_delay once they are at least half full."""

    async def timed(b, *jpegs):
        began = time.perf_counter()
        results = await asyncio.gather(*(b.submit(j) for j in jpegs))
        return results, time.perf_counter() - began

    async def main():
        async with DynamicBatcher(preprocess, max_batch_size=8, max_delay=0.6) as b:
            assert b.dispatch_when_idle == "auto"
            _, alone = await timed(b, GOOD[0])            # low load: no wait
            for _ in range(3):                             # high load: full batches
                await timed(b, *GOOD)
            (late,), waited = await timed(b, GOOD[1])      # now a lone request waits for company
            _, alone_again = await timed(b, GOOD[2])       # one small batch later: at once again
            return alone, late, waited, alone_again, b.stats()

    alone, late, waited, alone_again, stats = run(main())
    np.testing.assert_array_equal(late, REFERENCE[1])
    assert alone < 0.4 and alone_again < 0.4
    assert waited >= 0.5  # the 0.6 s max_delay (minus timer slack)
    assert stats.batch_size_histogram == {1: 3, 8: 3}


@pytest.mark.parametrize("value", ["yes", None, 1.5])
def test_dispatch_when_idle_rejects_other_values(value):
    with pytest.raises(PipelineDefinitionError, match="dispatch_when_idle"):
        DynamicBatcher(preprocess, dispatch_when_idle=value)


# --- the benchmark's own helpers (the full run needs aiohttp/torch and minutes) ------


def test_serve_bench_helpers():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import serve_bench

    args = serve_bench.parse_args(["--quick"])
    assert args.levels == [1, 8, 64, 256] and args.requests <= 48 and args.level_seconds <= 5
    assert serve_bench.percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert np.isnan(serve_bench.percentile([], 99))
    modes = [
        {"mode": "batched", "status": "ok", "levels": [{"concurrency": 64, "req_per_s": 300.0}]},
        {"mode": "baseline", "status": "ok", "levels": [{"concurrency": 64, "req_per_s": 100.0}]},
    ]
    assert serve_bench.speedups(modes) == {"64": pytest.approx(3.0)}


def test_a_broken_definition_fails_at_start_with_its_error():
    def broken(jpegs):
        return fn.resize(jpegs, resize_x=3, resize_y=8, mode="bigger")  # no such mode

    async def main():
        b = DynamicBatcher(broken, max_batch_size=2)
        with pytest.raises(ValueError):
            await b.start()
        await b.aclose()

    run(main())
