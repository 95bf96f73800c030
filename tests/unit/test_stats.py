"""pipe.stats(): the frozen structure, how time is divided, queues, operators, skips, errors, NVTX wiring."""

from __future__ import annotations

import dataclasses
import sys
import time
import types
from typing import Any

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn
from streamflow.graph import add_node
from streamflow.operator import Chunk, Operator
from streamflow.runtime import nvtx, stats
from streamflow.runtime.stats import StageClock, StatsRecorder
from streamflow.stats import PipelineStats


class FailOp(Operator):
    """Test-only op: fails the rows whose value is negative."""

    name = "test.fail_negative"

    def __init__(self) -> None:
        super().__init__(name="failer")

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out = []
        for row, value in enumerate(chunk.inputs[0]):
            if int(np.asarray(value).ravel()[0]) < 0:
                chunk.fail(row, ValueError("negative"))
            out.append(value)
        return [out]


def simple_pipe(batches: int = 6, batch_size: int = 4, depth: int = 2, delay: float = 0.0, op: Any = None,
                on_error: str = "raise", values: Any = None) -> sf.Pipeline:
    def source(info: sf.BatchInfo) -> list[np.ndarray]:
        if info.iteration >= batches:
            raise StopIteration
        if delay:
            time.sleep(delay)
        if values is not None:
            return [np.array([v], np.int32) for v in values(info.iteration)]
        return [np.full((4, 4, 3), info.iteration, np.uint8)] * batch_size

    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=0, prefetch_queue_depth=depth, on_error=on_error)
    def pipe() -> Any:
        data = fn.external_source(source, batch_info=True)
        if op is not None:
            (out,) = add_node(op, [data])
            return out
        return fn.flip(data, horizontal=1)

    return pipe()


def test_stats_before_start_and_frozen() -> None:
    pipe = simple_pipe()
    empty = pipe.stats()
    assert empty.stages == () and empty.consumer is None and empty.skipped_count == 0
    with pipe:
        list(pipe.iter())
        s = pipe.stats()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.batches_delivered = 0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.stages[0].busy_time = 0.0  # type: ignore[misc]


def test_time_split_adds_up_and_counts() -> None:
    pipe = simple_pipe(batches=6, delay=0.003)
    with pipe:
        list(pipe.iter())
        time.sleep(0.01)
        s = pipe.stats()
    assert [st.name for st in s.all_stages] == ["read", "cpu", "consumer"]
    assert s.batches_delivered == 6 and s.samples_delivered == 24
    for st in s.all_stages:
        parts = st.busy_time + st.wait_input_time + st.wait_output_time + st.other_time
        assert parts == pytest.approx(st.wall_time, rel=1e-6, abs=1e-9), st
        assert st.busy_time <= st.wall_time + 1e-9  # two batches at once count once
        total = st.busy_fraction + st.wait_input_fraction + st.wait_output_fraction + st.other_fraction
        assert total == pytest.approx(1.0)
        assert st.batches >= 6 and st.samples == 4 * st.batches  # stages read ahead into epoch 1
    read, cpu, consumer = s.all_stages
    assert consumer.batches == 6 and consumer.samples == 24
    assert read.wait_input_time == 0.0 and consumer.wait_output_time == 0.0
    assert read.busy_time >= 6 * 0.003 * 0.9
    assert 1 <= cpu.max_in_progress <= 3 and cpu.batch_time >= cpu.busy_time - 1e-9
    assert cpu.time_per_batch > 0
    assert s.wall_time >= read.wall_time - 1e-3


def test_queue_occupancy() -> None:
    pipe = simple_pipe(batches=8, depth=3)
    with pipe:
        it = pipe.iter()
        next(it)
        time.sleep(0.1)  # a stalled consumer: every queue fills up
        s = pipe.stats()
        list(it)
    for st in s.stages:
        q = st.output_queue
        assert q is not None and q.capacity == 3
        assert 0 <= q.occupancy <= q.max_occupancy <= 3
        assert 0.0 <= q.mean_occupancy <= 3.0 and 0.0 <= q.mean_fill <= 1.0
        assert q.puts >= 1
    assert s.stages[0].output_queue.name == "read->cpu"
    assert s.stages[-1].output_queue.name == "cpu->consumer"
    assert s.stages[-1].output_queue.occupancy == 3  # full while the consumer sleeps
    assert s.consumer is not None and s.consumer.output_queue is None


def test_operator_stats() -> None:
    pipe = simple_pipe(batches=5)
    with pipe:
        list(pipe.iter())
        s = pipe.stats()
    (op,) = s.operators
    assert op.name.startswith("flip") and op.stage == "cpu"
    # + read-ahead into epoch 1; rows count per chunk, batches once all chunks are done
    assert op.batches >= 5 and op.calls >= op.batches and 4 * op.batches <= op.rows <= 4 * (op.batches + 3)
    assert abs(op.batches - s.stage("cpu").batches) <= 3  # counted at slightly different moments
    assert op.busy_time > 0 and op.time_per_batch == pytest.approx(op.busy_time / op.batches)
    assert op.time_per_sample == pytest.approx(op.busy_time / op.rows)


def test_skips_are_counted_per_stage() -> None:
    values = lambda i: [1, -1, 2, 3] if i % 2 == 0 else [1, 2, 3, 4]  # noqa: E731
    pipe = simple_pipe(batches=4, op=FailOp(), on_error="skip", values=values)
    with pipe:
        batches = list(pipe.iter())
        s = pipe.stats()
    assert sum(len(b.dropped) for b in batches) == 2
    assert s.skipped_count >= 2 and s.skipped_total == len(s.skipped)  # + read-ahead into epoch 1
    assert s.stage("cpu").skipped == s.skipped_total and s.stage("read").skipped == 0
    assert all(x.stage == "cpu" and x.operator == "failer" for x in s.skipped)


def test_error_is_counted_on_its_stage() -> None:
    values = lambda i: [1, 2, -3, 4] if i == 1 else [1, 2, 3, 4]  # noqa: E731
    pipe = simple_pipe(batches=4, op=FailOp(), values=values)
    with pipe:
        with pytest.raises(sf.PipelineError):
            list(pipe.iter())
        s = pipe.stats()
    assert s.stage("cpu").errors == 1 and s.stage("read").errors == 0
    assert s.error is not None and "failer" in s.error


def test_since_gives_the_window() -> None:
    pipe = simple_pipe(batches=10, delay=0.002)
    with pipe:
        it = pipe.iter()
        for _ in range(3):
            next(it)
        before = pipe.stats()
        rest = list(it)
        after = pipe.stats()
    window = after.since(before)
    assert window.batches_delivered == len(rest) == 7
    assert window.consumer is not None and window.consumer.batches == 7
    assert window.wall_time == pytest.approx(after.wall_time - before.wall_time)
    for w, a, b in zip(window.stages, after.stages, before.stages):
        assert w.busy_time == pytest.approx(a.busy_time - b.busy_time)
        assert w.wall_time == pytest.approx(a.wall_time - b.wall_time)
        assert w.output_queue.max_occupancy == a.output_queue.max_occupancy
        assert 0.0 <= w.output_queue.mean_occupancy <= w.output_queue.capacity
    assert window.operators[0].batches == after.operators[0].batches - before.operators[0].batches


def test_stage_clock_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(stats, "_perf", lambda: now[0])
    clock = StageClock("cpu", 1, StatsRecorder(), "cpu->consumer", 2, start=0.0)

    def at(t: float) -> None:
        now[0] = t

    at(1.0); a = clock.work_begin()            # 0-1: other
    at(2.0); b = clock.work_begin()            # 1-3: busy (two batches from 2 to 3 count once)
    at(3.0); clock.work_end(a, None)
    w = clock.wait_in_begin()                  # 3-4: still busy with b, waiting for input too
    at(4.0); clock.work_end(b, None)
    o = clock.wait_out_begin()                 # 4-6: waiting for output space beats waiting for input
    at(6.0); clock.wait_out_end(o)             # 6-7: waiting for input
    clock.queue_changed(1, put=True)
    at(7.0); clock.wait_in_end(w)
    clock.queue_changed(0)
    at(8.0)                                    # 7-8: other
    s = clock.snapshot()
    assert (s.busy_time, s.wait_output_time, s.wait_input_time, s.other_time) == (3.0, 2.0, 1.0, 2.0)
    assert s.wall_time == 8.0 and s.batch_time == 2.0 + 2.0 and s.max_in_progress == 2
    q = s.output_queue
    assert q is not None and q.max_occupancy == 1 and q.puts == 1
    assert q.occupancy_seconds == pytest.approx(1.0) and q.mean_occupancy == pytest.approx(1.0 / 2.0)


def test_pipeline_stats_defaults_stay_compatible() -> None:
    s = PipelineStats(stages=(), operators=(), batches_delivered=0, samples_delivered=0)
    assert s.all_stages == () and s.since(s).batches_delivered == 0
    with pytest.raises(KeyError):
        s.stage("cpu")


# --------------------------------------------------------------------------- NVTX


def test_nvtx_wanted_follows_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(nvtx.ENV, "0")
    assert nvtx.wanted(None) is False
    monkeypatch.setenv(nvtx.ENV, "1")
    assert nvtx.wanted(None) is True
    monkeypatch.delenv(nvtx.ENV)
    assert nvtx.wanted(None) is False  # no GPU stage


def test_nvtx_ranges_with_a_fake_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring only: a stand-in for cupy.cuda.nvtx records the calls (no GPU here)."""
    calls: list[tuple[str, str]] = []
    fake = types.ModuleType("cupy.cuda.nvtx")
    fake.RangePush = lambda msg, *a: calls.append(("push", msg))  # type: ignore[attr-defined]
    fake.RangePop = lambda: calls.append(("pop", ""))  # type: ignore[attr-defined]
    fake.Mark = lambda msg, *a: calls.append(("mark", msg))  # type: ignore[attr-defined]
    cupy = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")
    cuda.nvtx = fake  # type: ignore[attr-defined]
    cupy.cuda = cuda  # type: ignore[attr-defined]
    for name, mod in {"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.nvtx": fake}.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(nvtx, "_resolved", False)
    monkeypatch.setattr(nvtx, "_backend", None)
    monkeypatch.setattr(nvtx, "_start_end_provider", lambda: None)  # cupy alone: marks for stages
    monkeypatch.setenv(nvtx.ENV, "1")
    pipe = simple_pipe(batches=3)
    with pipe:
        list(pipe.iter())
    pushes = [m for k, m in calls if k == "push"]
    assert pushes and all(m.startswith("flip") for m in pushes)
    assert len(pushes) == sum(1 for k, _ in calls if k == "pop")
    marks = [m for k, m in calls if k == "mark"]
    assert "cpu batch begin" in marks and "cpu batch end" in marks and "read batch begin" in marks
    monkeypatch.setattr(nvtx, "_resolved", False)  # leave no fake backend behind
    monkeypatch.setattr(nvtx, "_backend", None)


def test_nvtx_is_a_noop_without_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("cupy", "cupy.cuda", "cupy.cuda.nvtx"):  # imports fail, even if loaded before
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(nvtx, "_resolved", False)
    monkeypatch.setattr(nvtx, "_backend", None)
    assert nvtx.backend() is None and StatsRecorder(nvtx=True).nvtx is None
    monkeypatch.setattr(nvtx, "_resolved", False)


def test_operator_counts_are_summed_diffed_and_grouped() -> None:
    """Chunk.count -> OperatorStats.counts; since() subtracts; decoded_by sums the decoders."""
    rec = StatsRecorder()
    chunk = Chunk(inputs=[[1, 2]], args={}, sample_ids=np.arange(2), sources=["a", "b"], epoch=0)
    chunk.count("decoded_by:pillow")
    chunk.count("decoded_by:nvimgcodec", 3)
    chunk.count("other")
    for name in ("decoders.image#0", "decoders.image_crop#1"):  # as run_chain: time, then counts
        rec.add_op_time(name, 0.01, rows=2)
    rec.add_counts("decoders.image#0", chunk.counts)
    rec.add_counts("decoders.image_crop#1", {"decoded_by:pillow": 2})
    first = PipelineStats(stages=(), operators=rec.operators(), batches_delivered=0, samples_delivered=0)
    assert first.operators[0].counts == {"decoded_by:pillow": 1, "decoded_by:nvimgcodec": 3, "other": 1}
    assert first.decoded_by == {"pillow": 3, "nvimgcodec": 3}
    rec.add_counts("decoders.image#0", {"decoded_by:pillow": 5})
    later = PipelineStats(stages=(), operators=rec.operators(), batches_delivered=0, samples_delivered=0)
    assert later.since(first).decoded_by == {"pillow": 5, "nvimgcodec": 0}
