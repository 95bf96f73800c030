"""streamflow.profile: the bottleneck in three constructed cases, the Chrome trace, the CLI."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn
from streamflow.cli import main as cli_main
from streamflow.graph import add_node
from streamflow.operator import Chunk, Operator
from streamflow.profile import ProfileReport, load_pipeline, profile
from streamflow.runtime import trace

DELAY = 0.015  # the slow part's time per batch [s]; the others take well under 1 ms
BATCHES = 12


class SleepOp(Operator):
    """Test-only CPU operator: passes its input through after sleeping per chunk."""

    name = "test.sleep"

    def __init__(self, seconds_per_chunk: float) -> None:
        super().__init__(name="sleep")
        self.seconds = seconds_per_chunk

    def run(self, chunk: Chunk) -> list[list[Any]]:
        if self.seconds:
            time.sleep(self.seconds)
        return [list(chunk.inputs[0])]


def make_pipe(read_delay: float = 0.0, op_delay: float = 0.0, batch_size: int = 4) -> sf.Pipeline:
    sample = np.zeros((8, 8, 3), np.uint8)

    def source(info: sf.BatchInfo) -> list[np.ndarray]:
        if read_delay:
            time.sleep(read_delay)
        return [sample] * batch_size

    # num_threads=1: chunks of a batch run one after another on one thread,
    # so the op's time per batch is chunks x seconds_per_chunk.
    @sf.pipeline_def(batch_size=batch_size, num_threads=1, seed=0)
    def pipe() -> Any:
        data = fn.external_source(source, batch_info=True)
        (out,) = add_node(SleepOp(op_delay / batch_size), [data])  # batch_size chunks of 1 row
        return out

    return pipe()


def run_profile(pipe: sf.Pipeline, **kw: Any) -> ProfileReport:
    with pipe:
        return profile(pipe, batches=BATCHES, warmup=2, **kw)


def test_slow_reader_is_the_bottleneck() -> None:
    report = run_profile(make_pipe(read_delay=DELAY))
    assert report.bottleneck == "read", report.format()
    read, cpu, consumer = report.stats.all_stages
    assert read.busy_fraction > 0.8
    assert cpu.wait_input_fraction > 0.5 and consumer.wait_input_fraction > 0.5


def test_slow_cpu_operator_is_the_bottleneck() -> None:
    report = run_profile(make_pipe(op_delay=DELAY))
    assert report.bottleneck == "cpu", report.format()
    read, cpu, consumer = report.stats.all_stages
    assert cpu.busy_fraction > 0.8
    assert read.wait_output_fraction > 0.5  # the reader is held back by the full queue
    assert consumer.wait_input_fraction > 0.5
    (op,) = report.stats.operators
    assert op.stage == "cpu" and op.time_per_batch >= 0.8 * DELAY


def test_slow_resize_is_the_bottleneck() -> None:
    """A real operator: a big resize of an image the reader hands out for free."""
    big = np.random.default_rng(0).integers(0, 255, (512, 512, 3), dtype=np.uint8)

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe() -> Any:
        images = fn.external_source(lambda: [big, big])
        return fn.resize(images, resize_x=1536, resize_y=1536)

    p = pipe()
    with p:
        report = profile(p, batches=6, warmup=1)
    assert report.bottleneck == "cpu", report.format()
    assert report.stats.stage("read").wait_output_fraction > 0.5


def test_slow_consumer_is_the_bottleneck() -> None:
    report = run_profile(make_pipe(), consumer=lambda batch: time.sleep(DELAY))
    assert report.bottleneck == "consumer", report.format()
    read, cpu, consumer = report.stats.all_stages
    assert consumer.busy_fraction > 0.8
    assert read.wait_output_fraction > 0.5 and cpu.wait_output_fraction > 0.5
    assert cpu.output_queue is not None and cpu.output_queue.mean_fill > 0.5  # full queue


def test_report_counts_and_text() -> None:
    report = run_profile(make_pipe(read_delay=0.002))
    assert report.batches == BATCHES and report.samples == 4 * BATCHES
    assert report.stats.batches_delivered == BATCHES
    assert report.stats.consumer is not None and report.stats.consumer.batches == BATCHES
    text = report.format()
    for word in ("busy %", "wait-in %", "wait-out %", "read", "cpu", "consumer", "sleep", "bottleneck:"):
        assert word in text
    data = json.loads(json.dumps(report.to_dict()))
    assert data["bottleneck"] == report.bottleneck and len(data["stages"]) == 3


def test_profile_runs_across_epochs() -> None:
    data = [[np.full((2,), i, np.int32)] * 2 for i in range(3)]  # 3 batches per epoch

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe() -> Any:
        return fn.external_source(data)

    p = pipe()
    with p:
        report = profile(p, batches=7, warmup=1)
    assert report.batches == 7 and len(report.epochs_seen) >= 2


# --------------------------------------------------------------------------- trace


def validate_chrome_trace(doc: Any) -> list[dict[str, Any]]:
    """Check the Trace Event Format fields we emit; returns the events."""
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)
    events = doc["traceEvents"]
    named_threads: set[tuple[int, int]] = set()
    for e in events:
        assert e["ph"] in {"X", "C", "M"}, e
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert isinstance(e.get("args", {}), dict), e
        if e["ph"] == "M":
            assert e["name"] in {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}
            if e["name"].endswith("_name"):
                assert isinstance(e["args"]["name"], str) and e["args"]["name"]
            if e["name"] == "thread_name":
                named_threads.add((e["pid"], e["tid"]))
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
            assert e["cat"] in {"stage", "operator", "wait"}, e
        else:  # counter: numeric series
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
    # every thread that has complete events is named, and its events nest or are disjoint
    by_thread: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, spans in by_thread.items():
        assert key in named_threads, f"thread {key} has events but no thread_name"
        spans.sort(key=lambda e: (e["ts"], -e["dur"]))
        for a, b in zip(spans, spans[1:]):
            end_a = a["ts"] + a["dur"]
            assert b["ts"] >= end_a - 0.01 or b["ts"] + b["dur"] <= end_a + 0.01, (a, b)
    return events


def test_trace_is_valid_chrome_json(tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    report = run_profile(make_pipe(op_delay=0.004), trace=out)
    assert report.trace_path == str(out)
    events = validate_chrome_trace(json.loads(out.read_text()))
    names = {(e["ph"], e.get("cat"), e["name"]) for e in events}
    for expected in [("X", "stage", "read"), ("X", "stage", "cpu"), ("X", "stage", "consumer"),
                     ("X", "operator", "sleep"), ("C", None, "queue read->cpu"),
                     ("C", None, "queue cpu->consumer"), ("M", None, "process_name")]:
        assert expected in names, expected
    stage_batches = [e for e in events if e["ph"] == "X" and e["name"] == "cpu"]
    assert len(stage_batches) >= BATCHES
    assert all({"epoch", "batch", "samples"} <= set(e["args"]) for e in stage_batches)
    # operator calls are on the worker thread(s), named after them
    thread_names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    op_threads = {e["tid"] for e in events if e.get("cat") == "operator"}
    assert op_threads and all("worker" in thread_names[t] for t in op_threads), thread_names
    # waits for input (the consumer's, at least) are spans on a lane of their own
    waits = [e for e in events if e["ph"] == "X" and e.get("cat") == "wait" and e["name"] == "wait input"]
    assert waits and all(thread_names[e["tid"]].endswith("(wait input)") for e in waits), thread_names
    assert trace.ACTIVE is None  # recording stopped


def test_no_recording_when_off() -> None:
    assert trace.ACTIVE is None
    pipe = make_pipe()
    with pipe:
        for _ in pipe.iter():
            break
        tracer = trace.start()
        try:
            pipe.run()
        finally:
            trace.stop()
    assert len(tracer) > 0  # recording picks up a running pipeline
    with pytest.raises(RuntimeError):
        with trace.recording():
            trace.start()
    assert trace.ACTIVE is None


# --------------------------------------------------------------------------- CLI


SCRIPT = """
import time
import numpy as np
import streamflow as sf
from streamflow import fn

def slow_source(info):
    time.sleep({delay})
    return [np.zeros((4, 4, 3), np.uint8)] * 2

@sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
def pipeline():
    return fn.flip(fn.external_source(slow_source, batch_info=True), horizontal=1)

other = pipeline()

if __name__ == "__main__":
    raise SystemExit("the __main__ block must not run")
"""


def test_cli_profile_names_bottleneck_and_writes_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "pipe_script.py"
    script.write_text(textwrap.dedent(SCRIPT.format(delay=DELAY)))
    out = tmp_path / "t.json"
    code = cli_main(["profile", str(script), "--batches", "6", "--warmup", "1", "--trace", str(out), "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    assert "bottleneck: read" in text and "6 batches" in text
    validate_chrome_trace(json.loads(out.read_text()))


def test_cli_profile_json_and_pipeline_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "pipe_script.py"
    script.write_text(textwrap.dedent(SCRIPT.format(delay=0.001)))
    code = cli_main(["profile", str(script), "--pipeline-name", "other", "--batches", "3", "--warmup", "0",
                     "--json", "--no-progress"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["batches"] == 3 and [s["name"] for s in data["stages"]] == ["read", "cpu", "consumer"]


def test_load_pipeline_errors(tmp_path: Path) -> None:
    script = tmp_path / "nothing.py"
    script.write_text("x = 1\n")
    with pytest.raises(SystemExit, match="pipeline\\(\\)"):
        load_pipeline(script)
    with pytest.raises(SystemExit, match="no 'missing'"):
        load_pipeline(script, "missing")
    with pytest.raises(SystemExit, match="not a Pipeline"):
        load_pipeline(script, "x")
    with pytest.raises(SystemExit, match="no such script"):
        load_pipeline(tmp_path / "absent.py")


def test_cli_keeps_demo_and_info(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["info", "--json"]) == 0
    assert "python" in json.loads(capsys.readouterr().out)
    with pytest.raises(SystemExit):
        cli_main(["demo", "--help"])
