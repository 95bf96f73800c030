"""fn.external_source: callables, iterables, async sources, per-sample mode, cycling, errors."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from helpers import QUIRKS

import streamflow as sf
from streamflow import fn


def run_epoch(pipe: sf.Pipeline) -> list[list[np.ndarray]]:
    return [[np.asarray(s) for s in batch[0]] for batch in pipe.iter()]


def make(source, batch_size=2, **kw):
    @sf.pipeline_def(batch_size=batch_size, num_threads=1, seed=0)
    def pipe():
        return fn.external_source(source, **kw)

    return pipe()


def test_iterable_of_batches_ends_epoch_then_restarts() -> None:
    data = [[np.array([i, i])] * 2 for i in range(3)]
    with make(data) as pipe:
        first = run_epoch(pipe)
        second = run_epoch(pipe)
    assert [int(b[0][0]) for b in first] == [0, 1, 2]
    assert [int(b[0][0]) for b in second] == [0, 1, 2]


def test_array_batch_is_split_along_first_axis() -> None:
    with make([np.arange(6).reshape(2, 3)]) as pipe:
        (batch,) = run_epoch(pipe)
    assert [s.tolist() for s in batch] == [[0, 1, 2], [3, 4, 5]]


def test_callable_with_batch_info_and_stop_iteration() -> None:
    def source(info: sf.BatchInfo):
        if info.iteration == 2:
            raise StopIteration
        return [np.full(2, info.iteration * 10 + info.epoch_idx)] * 2

    with make(source, batch_info=True) as pipe:
        assert [int(b[0][0]) for b in run_epoch(pipe)] == [0, 10]
        assert [int(b[0][0]) for b in run_epoch(pipe)] == [1, 11]


def test_per_sample_callable_gets_sample_info() -> None:
    seen = []

    def sample(info: sf.SampleInfo):
        seen.append((info.idx_in_epoch, info.idx_in_batch, info.iteration))
        if info.idx_in_epoch == 5:
            raise StopIteration
        return np.array([info.idx_in_epoch], dtype=np.int64)

    with make(sample, batch_size=2, batch=False) as pipe:
        batches = run_epoch(pipe)
    assert [[int(s[0]) for s in b] for b in batches] == [[0, 1], [2, 3], [4]]
    assert seen[:3] == [(0, 0, 0), (1, 1, 0), (2, 0, 1)]


def test_per_sample_iterable_and_num_outputs() -> None:
    samples = [(np.array([i]), np.array([i * 2])) for i in range(4)]

    @sf.pipeline_def(batch_size=3, num_threads=1, seed=0)
    def pipe():
        a, b = fn.external_source(samples, batch=False, num_outputs=2)
        return a, b

    with pipe() as p:
        batches = list(p.iter())
    assert [len(b[0]) for b in batches] == [3, 1]
    assert batches[0][1].as_array().reshape(-1).tolist() == [0, 2, 4]


def test_async_generator_and_async_callable() -> None:
    async def agen():
        for i in range(3):
            await asyncio.sleep(0)
            yield [np.array([i])]

    class Counter:
        def __init__(self) -> None:
            self.n = 0

    counter = Counter()

    async def acall():
        counter.n += 1
        if counter.n > 2:
            raise StopAsyncIteration
        return [np.array([counter.n])]

    async def main():
        results = []
        for source in (agen(), acall):
            pipe = make(source, batch_size=1)
            async with pipe:
                results.append([int(b[0].at(0)[0]) async for b in pipe])
        return results

    assert asyncio.run(main()) == [[0, 1, 2], [1, 2]]


def test_cycle_restarts_within_the_epoch() -> None:
    with make([[np.array([1])], [np.array([2])]], batch_size=1, cycle=True) as pipe:
        values = [int(pipe.run()[0].at(0)[0]) for _ in range(5)]
    assert values == [1, 2, 1, 2, 1]


def test_bytes_samples_become_uint8(tmp_path: Path) -> None:
    with make([[b"abc", b"de"]]) as pipe:
        (batch,) = run_epoch(pipe)
    assert batch[0].dtype == np.uint8 and batch[0].tobytes() == b"abc"


def test_callback_error_names_the_source() -> None:
    def broken():
        raise KeyError("missing key")

    with make(broken, name="my_feed") as pipe:
        with pytest.raises(sf.PipelineError, match=r"external_source 'my_feed'.*KeyError.*missing key") as info:
            pipe.run()
    assert info.value.stage == "read"


def test_wrong_batch_size_and_dtype_are_clear() -> None:
    with make([[np.zeros(1)] * 3], batch_size=2) as pipe, pytest.raises(sf.PipelineError, match="batch_size is 2"):
        pipe.run()
    with make([[np.zeros(1, np.float64)]], dtype="uint8") as pipe, pytest.raises(sf.PipelineError, match="expected dtype uint8"):
        pipe.run()
    with pytest.raises(sf.PipelineDefinitionError, match="callable or iterable"):
        make(42)


def test_skip_drops_bad_user_samples_and_reports_them() -> None:
    good = (QUIRKS / "hopper.jpg").read_bytes()

    @sf.pipeline_def(batch_size=3, num_threads=1, seed=0, on_error="skip")
    def pipe():
        return fn.decoders.image(fn.external_source([[good, b"not an image", good]]))

    with pipe() as p:
        batch = p.run()
    assert len(batch[0]) == 2
    ((sample_id, error),) = batch.dropped
    assert sample_id == 1 and "not a recognised image format" in str(error)


# --- what DALI accepts as a source ---------------------------------------------------------

def _batches(pipe_fn, epochs=2):  # type: ignore[no-untyped-def]
    with pipe_fn() as p:
        return [[b[0].as_array().ravel().tolist() for b in p.iter()] for _ in range(epochs)]


def test_a_generator_function_is_called_every_epoch() -> None:
    """It used to be called once per batch and its generator taken as the batch (a hang on an endless one)."""
    calls = []

    def gen():  # type: ignore[no-untyped-def]
        calls.append(1)
        for i in range(3):
            yield [np.int32([10 * i + k]) for k in range(2)]

    @sf.pipeline_def(batch_size=2, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.external_source(source=gen)

    assert _batches(pipe) == [[[0, 1], [10, 11], [20, 21]]] * 2
    assert 2 <= len(calls) <= 3  # once per epoch started (the reader may start the next one ahead)


def test_an_endless_generator_function_streams() -> None:
    def forever():  # type: ignore[no-untyped-def]
        i = 0
        while True:
            yield [np.int32([i])]
            i += 1

    @sf.pipeline_def(batch_size=1, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.external_source(source=forever)

    with pipe() as p:
        it = p.iter()
        assert [int(next(it)[0].as_array()[0, 0]) for _ in range(5)] == [0, 1, 2, 3, 4]


def test_an_async_generator_function() -> None:
    async def agen():  # type: ignore[no-untyped-def]
        for i in range(2):
            yield [np.int32([i]), np.int32([i + 100])]

    @sf.pipeline_def(batch_size=2, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.external_source(source=agen)

    assert _batches(pipe, epochs=1) == [[[0, 100], [1, 101]]]


def test_a_generator_object_returned_as_a_batch_is_refused_clearly() -> None:
    def batch_maker():  # type: ignore[no-untyped-def]
        return (np.int32([i]) for i in range(10**9))  # a callable that returns an iterator

    @sf.pipeline_def(batch_size=2, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.external_source(source=batch_maker, name="maker")

    with pipe() as p, pytest.raises(sf.PipelineError, match="returned a generator where a batch"):
        p.run()


def test_parallel_per_sample_callable_runs_samples_concurrently() -> None:
    import threading
    import time

    inside, peak = 0, 0
    lock = threading.Lock()

    def sample(info):  # type: ignore[no-untyped-def]
        nonlocal inside, peak
        if info.idx_in_epoch >= 8:
            raise StopIteration
        with lock:
            inside += 1
            peak = max(peak, inside)
        time.sleep(0.02)
        with lock:
            inside -= 1
        return np.int32([info.idx_in_epoch])

    @sf.pipeline_def(batch_size=4, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.external_source(source=sample, batch=False, parallel=True, no_copy=True, prefetch_queue_depth=2)

    assert _batches(pipe, epochs=1) == [[[0, 1, 2, 3], [4, 5, 6, 7]]]
    assert peak > 1


def test_ndim_is_checked_and_unsupported_options_are_refused() -> None:
    @sf.pipeline_def(batch_size=2, num_threads=1, on_error="skip")
    def pipe():  # type: ignore[no-untyped-def]
        return fn.external_source([[np.zeros((2, 2)), np.zeros(3)]], ndim=2)

    with pipe() as p:
        batch = p.run()
    assert len(batch[0]) == 1 and "expected ndim=2" in batch.dropped[0][1].reason
    with pytest.raises(sf.PipelineDefinitionError, match="repeat_last"):
        fn.external_source(lambda: [], repeat_last=True)
    with pytest.raises(sf.PipelineDefinitionError, match="parallel=True needs a callable"):
        fn.external_source([[np.zeros(1)]], parallel=True)


def test_feed_input_pushes_batches_in_order() -> None:
    pipe = sf.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        data = fn.external_source(name="DATA")
        pipe.set_outputs(fn.flip(data, horizontal=1))
    pipe.build()
    with pytest.raises(sf.PipelineError, match="feed a batch before asking"):
        pipe.run()
    first = [np.arange(6, dtype=np.uint8).reshape(1, 2, 3)] * 2
    pipe.feed_input("DATA", first)
    pipe.feed_input("DATA", [np.zeros((1, 1, 3), np.uint8)])
    out1, out2 = pipe.run(), pipe.run()
    np.testing.assert_array_equal(out1[0].at(0), first[0][:, ::-1])
    assert len(out2[0]) == 1
    with pytest.raises(sf.PipelineDefinitionError, match="no external_source named 'nope'"):
        pipe.feed_input("nope", first)
    pipe.close()
    # DALI: an unnamed fed source is fed through its DataNode
    pipe = sf.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        node = fn.external_source()
        pipe.set_outputs(node * 2)
    pipe.feed_input(node, [np.int32([3])])
    assert pipe.run()[0].as_array().tolist() == [[6]]
    pipe.close()


def test_dtype_and_layout_lists_give_one_per_output() -> None:
    """DALI: with num_outputs, dtype / layout / ndim may be lists, one entry per output."""
    data = [(np.zeros((2, 2), np.uint8), np.int32([i])) for i in range(2)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.external_source(data, num_outputs=2, batch=False, dtype=[sf.types.UINT8, sf.types.INT32],
                                  layout=["HW", ""], ndim=[2, 1])

    with pipe() as p:
        images, labels = p.run()
    assert images.layout == "HW" and np.asarray(labels.as_array()).ravel().tolist() == [0, 1]
    bad = [(np.zeros((2, 2), np.uint8), np.int64([0]))] * 2

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def wrong_type():  # type: ignore[no-untyped-def]
        return fn.external_source(bad, num_outputs=2, batch=False, dtype=[sf.types.UINT8, sf.types.INT32])

    with wrong_type() as p, pytest.raises(sf.errors.PipelineError, match="expected dtype int32, got int64"):
        p.run()
    with pytest.raises(sf.errors.PipelineDefinitionError, match="dtype has 3 entries, expected one per output"):
        sf.pipeline_def(lambda: fn.external_source(bad, num_outputs=2, dtype=[sf.types.UINT8] * 3),
                        batch_size=2)().build()


def test_run_drops_the_incomplete_last_batch_of_a_per_sample_source() -> None:
    """DALI 2.4: run() on a per-sample source (batch=False) that stops inside a batch drops those samples
    and raises StopIteration (7 samples, batches of 3: two batches); iter() keeps the short batch."""

    def sample(info):  # type: ignore[no-untyped-def]
        if info.idx_in_epoch >= 7:
            raise StopIteration
        return np.int32([info.idx_in_epoch, info.epoch_idx])

    with make(sample, batch_size=3, batch=False) as pipe:
        for epoch in range(2):
            got = [pipe.run()[0].as_array()[:, 0].tolist() for _ in range(2)]
            assert got == [[0, 1, 2], [3, 4, 5]]
            with pytest.raises(StopIteration):
                pipe.run()
            pipe.reset()
    with make(sample, batch_size=3, batch=False) as pipe:
        assert [len(b) for b in run_epoch(pipe)] == [3, 3, 1]


def test_sample_info_and_batch_info_are_in_types() -> None:
    """DALI: ``types.SampleInfo`` / ``types.BatchInfo`` are what the callables receive."""
    got: list[object] = []

    def sample(info):  # type: ignore[no-untyped-def]
        got.append(info)
        return np.int32([info.idx_in_epoch])

    with make(sample, batch_size=2, batch=False) as pipe:
        pipe.run()
    assert isinstance(got[0], sf.types.SampleInfo) and got[0] == sf.types.SampleInfo(0, 0, 0, 0)
    assert sf.types.BatchInfo(3, 1).epoch_idx == 1


def test_device_gpu_gives_gpu_data() -> None:
    """DALI's external_source(device="gpu") (the external_input tutorial's GPU part): GPU outputs. Without a
    GPU, device_id="auto" runs it on the CPU with the fallback warning; device_id=None refuses it."""
    from streamflow.backend import gpu_count

    data = [[np.full((2, 2), i, np.uint8) for i in range(2)]]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0, device_id=0 if gpu_count() else "auto")
    def pipe():  # type: ignore[no-untyped-def]
        return fn.flip(fn.external_source(data, device="gpu", dtype=sf.types.UINT8), horizontal=1)

    if gpu_count():
        p = pipe()
    else:
        with pytest.warns(sf.CpuFallbackWarning):
            p = pipe()
            p.build()
    with p:
        (out,) = p.run()
    assert np.asarray(out.as_cpu().as_tensor()).tolist() == [[[0, 0], [0, 0]], [[1, 1], [1, 1]]]
    with pytest.raises(sf.PipelineDefinitionError, match="device must be 'cpu' or 'gpu'"):
        fn.external_source(data, device="mixed")
    if not gpu_count():
        @sf.pipeline_def(batch_size=2, num_threads=1, seed=0, device_id=None)
        def cpu_only():  # type: ignore[no-untyped-def]
            return fn.external_source(data, device="gpu")

        with pytest.raises(sf.PipelineDefinitionError, match="device_id=None"):
            cpu_only().build()


def test_dtype_and_layout_lists_per_output() -> None:
    """DALI: with num_outputs, dtype=[...] and layout=[...] give one value per output (expr_type_promotions)."""
    from streamflow import types

    @sf.pipeline_def(batch_size=1, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        a, b = fn.external_source(source=lambda: ([np.uint8([[42, 8]])], [np.int32([[9, 2]])]), num_outputs=2,
                                  dtype=[types.UINT8, types.INT32], layout=["AB", "XY"])
        return a + b, a, b

    with pipe() as p:
        s, a, b = p.run()
    assert s.as_array().dtype == np.int32 and s.as_array().tolist() == [[[51, 10]]]
    assert (a.layout, b.layout) == ("AB", "XY")

    @sf.pipeline_def(batch_size=1, num_threads=1)
    def wrong():  # type: ignore[no-untyped-def]
        a, b = fn.external_source(source=lambda: ([np.int32([1])], [np.int32([2])]), num_outputs=2,
                                  dtype=[types.UINT8, types.INT32])
        return a, b

    with pytest.raises(sf.PipelineError, match="expected dtype uint8"), wrong() as p:
        p.run()
    with pytest.raises(sf.PipelineDefinitionError, match="expected one per output"):
        fn.external_source(source=lambda: 0, num_outputs=2, dtype=[types.UINT8])


def test_per_sample_callable_without_parameter_gets_no_sample_info() -> None:
    """DALI: batch=False calls a callable that takes no positional parameter without the SampleInfo."""
    values = iter([np.int32(4), np.int32(5)])

    @sf.pipeline_def(batch_size=2, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        return (fn.external_source(lambda: next(values), batch=False),
                fn.external_source(lambda info: np.int32(info.idx_in_batch), batch=False))

    with pipe() as p:
        a, b = p.run()
    assert a.as_array().tolist() == [4, 5] and b.as_array().tolist() == [0, 1]


def test_batch_callable_with_a_parameter_gets_the_iteration_number() -> None:
    """DALI 2.4: without batch_info, a batch callable taking a positional parameter is given the iteration
    number within the epoch (0, 1, ... restarting after the StopIteration that ends an epoch)."""
    got: list[object] = []

    def source(i):  # type: ignore[no-untyped-def]
        got.append(i)
        if i >= 2:
            raise StopIteration
        return [np.int32([i])] * 2

    with make(source, batch_size=2) as pipe:
        for _ in range(2):
            assert [[int(s[0]) for s in b] for b in run_epoch(pipe)] == [[0, 0], [1, 1]]
    assert got[:6] == [0, 1, 2, 0, 1, 2] and all(type(i) is int for i in got)  # each epoch starts at 0


def test_an_iterator_object_is_iterated_once_and_continued_each_epoch() -> None:
    """DALI calls ``iter()`` on a source once; an iterator object that restarts itself when it
    raises StopIteration (DALI's external-input tutorial) gets only ``next()`` in later epochs, so
    work in its ``__iter__`` (reshuffling) is not repeated. ``cycle`` restarts still call iter()."""

    class Restarting:
        def __init__(self) -> None:
            self.iters = 0
            self.pos = 0

        def __iter__(self) -> Restarting:
            self.iters += 1
            self.pos = 0
            return self

        def __next__(self) -> list[np.ndarray]:
            if self.pos >= 2:
                self.pos = 0
                raise StopIteration
            self.pos += 1
            return [np.array([self.iters * 10 + self.pos])] * 2

    source = Restarting()
    with make(source) as pipe:
        epochs = [[int(b[0][0]) for b in run_epoch(pipe)] for _ in range(3)]
    assert source.iters == 1 and epochs == [[11, 12]] * 3

    class Once(Restarting):  # does not restart itself: exhausted, it is started again with iter()
        def __next__(self) -> list[np.ndarray]:
            if self.pos >= 2:
                raise StopIteration
            self.pos += 1
            return [np.array([self.iters * 10 + self.pos])] * 2

    once = Once()
    with make(once) as pipe:
        epochs = [[int(b[0][0]) for b in run_epoch(pipe)] for _ in range(2)]
    assert epochs == [[11, 12], [21, 22]]  # (the pipeline may already have started a third)
    cycled = Restarting()
    with make(cycled, cycle=True) as pipe:
        pipe.run(), pipe.run(), pipe.run()
    assert cycled.iters == 2
