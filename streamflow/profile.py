"""Find the stage that holds a pipeline back: ``profile(pipe)`` / ``streamflow profile``.

``profile(pipe, batches=N)`` runs ``N`` batches (after ``warmup`` untimed
ones), optionally hands each to ``consumer`` (your training step), and
returns a ``ProfileReport``: per stage and for the consumer the share of
wall time spent busy, waiting for input and waiting for output space, the
queue occupancy, per operator the time per batch, and the **bottleneck**.

The bottleneck is the stage (the consumer counts as one) with the highest
busy share. In a pipeline of bounded queues the slowest stage is the only one
that is busy nearly all the time: the stages before it fill their queues and
wait for output space, the ones after it (and the consumer) wait for input.
If every stage mostly waits for output space, the consumer is the one busy,
so it is named. See ``runtime/stats.py`` for how the time is divided.

``streamflow profile SCRIPT`` does the same for a pipeline defined in a
Python script; see ``load_pipeline`` for the convention.
"""

from __future__ import annotations

import math
import os
import runpy
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .pipeline import Pipeline
from .runtime import trace as _trace
from .stats import PipelineStats, StageStats

__all__ = ["ProfileReport", "find_bottleneck", "load_pipeline", "profile"]

# Below this busy share nothing is saturated: the pipeline is latency-bound.
SATURATED = 0.5


@dataclass(frozen=True)
class ProfileReport:
    """What ``profile`` measured (all over the timed batches, after the warm-up).

    Attributes:
        batches: batches timed.
        samples: samples in them.
        seconds: wall time of the timed batches [s].
        warmup_batches: untimed batches run first.
        stats: the pipeline's counters over the timed window
            (``PipelineStats.since``), consumer included.
        bottleneck: name of the stage (or ``"consumer"``) that holds the
            pipeline back.
        reason: one sentence on why.
        trace_path: where the Chrome trace was written, if asked for.
    """

    batches: int
    samples: int
    seconds: float
    warmup_batches: int
    stats: PipelineStats
    bottleneck: str
    reason: str
    trace_path: str | None = None
    epochs_seen: tuple[int, ...] = field(default=())

    @property
    def batches_per_second(self) -> float:
        return self.batches / self.seconds if self.seconds > 0 else 0.0

    @property
    def samples_per_second(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else 0.0

    def format(self) -> str:
        """The report as text tables (what ``streamflow profile`` prints)."""
        return format_report(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        def stage(s: StageStats) -> dict[str, Any]:
            q = s.output_queue
            return {
                "name": s.name, "batches": s.batches, "samples": s.samples,
                "busy": s.busy_fraction, "wait_input": s.wait_input_fraction,
                "wait_output": s.wait_output_fraction, "other": s.other_fraction,
                "busy_s": s.busy_time, "wall_s": s.wall_time, "time_per_batch_s": s.time_per_batch,
                "max_in_progress": s.max_in_progress, "skipped": s.skipped, "errors": s.errors,
                "queue": None if q is None else {
                    "name": q.name, "capacity": q.capacity, "now": q.occupancy,
                    "mean": q.mean_occupancy, "max": q.max_occupancy},
            }

        return {
            "batches": self.batches, "samples": self.samples, "seconds": self.seconds,
            "warmup_batches": self.warmup_batches,
            "batches_per_s": self.batches_per_second, "samples_per_s": self.samples_per_second,
            "bottleneck": self.bottleneck, "reason": self.reason, "trace": self.trace_path,
            "stages": [stage(s) for s in self.stats.all_stages],
            "operators": [
                {"name": o.name, "stage": o.stage, "batches": o.batches, "calls": o.calls,
                 "busy_s": o.busy_time, "time_per_batch_s": o.time_per_batch}
                for o in self.stats.operators
            ],
            "skipped": self.stats.skipped_count,
        }


def find_bottleneck(stats: PipelineStats) -> tuple[str, str]:
    """``(name, reason)``: the stage or consumer with the highest busy share, and why."""
    stages = [s for s in stats.all_stages if s.wall_time > 0]
    if not stages:
        return "unknown", "no activity was recorded"
    top = max(stages, key=lambda s: s.busy_fraction)
    i = stages.index(top)
    before, after = stages[:i], stages[i + 1 :]
    parts = [f"{top.name} is busy {top.busy_fraction:.0%} of the time"]
    if before:
        blocked = ", ".join(f"{s.name} {s.wait_output_fraction:.0%}" for s in before)
        parts.append(f"upstream waits for output space ({blocked})")
    if after:
        starved = ", ".join(f"{s.name} {s.wait_input_fraction:.0%}" for s in after)
        parts.append(f"downstream waits for input ({starved})")
    reason = "; ".join(parts)
    if top.busy_fraction < SATURATED:
        reason += (f"; no stage is busy more than {SATURATED:.0%} of the time, so the pipeline is "
                   "limited by latency or overheads rather than by one stage")
    return top.name, reason


def _advice(name: str) -> str:
    if name == "consumer":
        return "the pipeline delivers faster than the consumer takes batches; speeding up the pipeline will not help"
    if name == "read":
        return "reading is the limit: faster storage, more/larger files per read, or an external source that is cheaper to call"
    return (f"the {name} stage's operators are the limit: more num_threads (if cores are free), "
            "cheaper operators, or move work to the GPU")


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def format_report(report: ProfileReport) -> str:
    """Text tables: summary, stages (+ consumer), operators, bottleneck."""
    st = report.stats
    out = [
        f"{report.batches} batches ({report.samples} samples) in {report.seconds:.3f} s: "
        f"{report.batches_per_second:.1f} batches/s, {report.samples_per_second:.1f} samples/s "
        f"(after {report.warmup_batches} warm-up batches)",
        "",
    ]
    rows = []
    for s in st.all_stages:
        q = s.output_queue
        queue = "-" if q is None else f"{q.occupancy} / {q.mean_occupancy:.2f} / {q.max_occupancy} of {q.capacity}"
        rows.append([
            s.name + (" *" if s.name == report.bottleneck else ""), str(s.batches), str(s.samples),
            _pct(s.busy_fraction), _pct(s.wait_input_fraction), _pct(s.wait_output_fraction),
            f"{1e3 * s.time_per_batch:.2f}", queue, str(s.skipped), str(s.errors),
        ])
    out.append(_table(
        ["stage", "batches", "samples", "busy %", "wait-in %", "wait-out %", "ms/batch",
         "out queue now / mean / max", "skipped", "errors"], rows))
    out.append("  (ms/batch: one batch's time in the stage; the consumer's is its time per batch)")
    if st.operators:
        out.append("")
        total = {s.name: 0.0 for s in st.stages}
        for o in st.operators:
            total[o.stage] = total.get(o.stage, 0.0) + o.busy_time
        orows = [[o.name, o.stage or "?", str(o.batches), str(o.calls), f"{1e3 * o.time_per_batch:.2f}",
                  _pct(o.busy_time / total[o.stage]) if total.get(o.stage) else "-"]
                 for o in st.operators]
        out.append(_table(["operator", "stage", "batches", "calls", "thread-ms/batch", "% of stage"], orows))
        out.append("  (thread-ms/batch: summed over worker threads; divide by num_threads for wall time)")
    out.append("")
    out.append(f"bottleneck: {report.bottleneck} ({report.reason})")
    if report.bottleneck != "unknown":
        out.append(f"  -> {_advice(report.bottleneck)}")
    if st.skipped_count:
        out.append(f"skipped samples: {st.skipped_count} (pipe.stats().skipped)")
    if report.trace_path:
        out.append(f"trace: {report.trace_path} (open in chrome://tracing or ui.perfetto.dev)")
    return "\n".join(out)


class _Progress:
    """A one-line progress bar on a stream (stderr); redrawn at most 10 times a second."""

    def __init__(self, total: int, stream: TextIO | None, label: str = "profile") -> None:
        self.total, self.stream, self.label = total, stream, label
        self.began = time.perf_counter()
        self.last = 0.0
        self.tty = bool(getattr(stream, "isatty", lambda: False)())  # elsewhere: draw only the end

    def update(self, done: int, force: bool = False) -> None:
        if self.stream is None:
            return
        now = time.perf_counter()
        if not force and (now - self.last < 0.1 or not self.tty):
            return
        self.last = now
        width = 30
        filled = int(width * done / self.total) if self.total else width
        rate = done / (now - self.began) if now > self.began else 0.0
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] "
                          f"{done}/{self.total} batches, {rate:.1f}/s ")
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.write("\n")
            self.stream.flush()


def profile(
    pipe: Pipeline,
    batches: int = 50,
    consumer: Callable[[Any], Any] | None = None,
    *,
    warmup: int = 2,
    trace: str | os.PathLike[str] | None = None,
    progress: bool | TextIO = False,
) -> ProfileReport:
    """Run ``pipe`` for ``warmup + batches`` batches and report where the time goes.

    Synchronous: call it from ordinary code (not from a running event loop).
    Runs across epoch boundaries as needed. Does not close ``pipe``.

    Args:
        pipe: the pipeline (built or not, fresh or already running).
        batches: batches to time.
        consumer: called with each batch (a ``Batch``), like a training step;
            None: batches are dropped at once.
        warmup: untimed batches first (pools starting, queues filling).
        trace: write a Chrome trace (JSON) of the whole run (warm-up
            included) to this path.
        progress: draw a progress bar on stderr (True) or on this stream.

    Returns:
        The report; ``report.bottleneck`` names the stage that holds the
        pipeline back (``"read"``, ``"cpu"``, ..., or ``"consumer"``).
    """
    if batches < 1:
        raise ValueError(f"batches must be >= 1, got {batches}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    stream = (sys.stderr if progress is True else progress) or None
    bar = _Progress(warmup + batches, stream)
    done = 0
    tracer = _trace.start() if trace is not None else None
    try:
        def next_batch() -> Any:
            for _ in range(2):  # an epoch end, then the next epoch's first batch
                batch = pipe.next_batch()
                if batch is not None:
                    return batch
            return None  # an empty epoch: the data ran out

        for _ in range(warmup):
            batch = next_batch()
            if batch is None:
                break
            if consumer is not None:
                consumer(batch)
            done += 1
            bar.update(done)
        before = pipe.stats()
        began = time.perf_counter()
        timed = samples = 0
        epochs: set[int] = set()
        for _ in range(batches):
            batch = next_batch()
            if batch is None:
                break
            if consumer is not None:
                consumer(batch)
            timed += 1
            samples += len(batch[0]) if len(batch) else 0
            epochs.add(batch.epoch)
            done += 1
            bar.update(done)
        # Charge the last consumer call: ask for the stats before returning.
        seconds = time.perf_counter() - began
        after = pipe.stats()
    finally:
        bar.update(done, force=True)
        bar.close()
        if tracer is not None:
            _trace.stop()
            tracer.write(trace)  # type: ignore[arg-type]
    window = after.since(before)
    name, reason = find_bottleneck(window)
    return ProfileReport(
        batches=timed, samples=samples, seconds=seconds, warmup_batches=warmup, stats=window,
        bottleneck=name, reason=reason, trace_path=None if trace is None else str(trace),
        epochs_seen=tuple(sorted(epochs)),
    )


def load_pipeline(script: str | os.PathLike[str], name: str | None = None, argv: list[str] | None = None) -> Pipeline:
    """The pipeline a script defines, for ``streamflow profile``.

    The script is run as a module named ``__streamflow_profile__`` (so its
    ``if __name__ == "__main__":`` block does not run), with its folder on
    ``sys.path`` and ``sys.argv = [script, *argv]``. Then:

    * with ``name``: the module-level object ``name``, either a ``Pipeline``
      or a callable taking no arguments that returns one (a function decorated
      with ``@pipeline_def`` is such a callable);
    * without: the module-level ``pipeline``, a function returning a
      ``Pipeline`` (or a ``Pipeline``); failing that, the only ``Pipeline``
      object in the module.

    Raises:
        SystemExit: with a message saying what is missing.
    """
    path = Path(script)
    if not path.is_file():
        raise SystemExit(f"streamflow profile: no such script: {path}")
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *(argv or [])]
    sys.path.insert(0, str(path.resolve().parent))
    try:
        namespace = runpy.run_path(str(path), run_name="__streamflow_profile__")
    finally:
        sys.argv = old_argv
        sys.path[:] = old_path

    def resolve(obj: Any, what: str) -> Pipeline:
        if isinstance(obj, Pipeline):
            return obj
        if callable(obj):
            made = obj()
            if isinstance(made, Pipeline):
                return made
            raise SystemExit(f"streamflow profile: {what}() returned {type(made).__name__}, not a Pipeline")
        raise SystemExit(f"streamflow profile: {what} is a {type(obj).__name__}, not a Pipeline or a function returning one")

    if name is not None:
        if name not in namespace:
            found = sorted(k for k, v in namespace.items() if isinstance(v, Pipeline) or (callable(v) and not k.startswith("_")))
            raise SystemExit(f"streamflow profile: {path} defines no {name!r}; candidates: {found}")
        return resolve(namespace[name], name)
    if "pipeline" in namespace:
        return resolve(namespace["pipeline"], "pipeline")
    pipes = [k for k, v in namespace.items() if isinstance(v, Pipeline)]
    if len(pipes) == 1:
        return namespace[pipes[0]]
    raise SystemExit(
        f"streamflow profile: {path} must define a function pipeline() that returns a Pipeline "
        f"(or pass --pipeline-name NAME); Pipeline objects found: {pipes or 'none'}"
    )


def main(args: Any) -> int:
    """``streamflow profile`` (argparse namespace from ``cli.py``)."""
    pipe = load_pipeline(args.script, args.pipeline_name, args.script_args)
    try:
        report = profile(pipe, batches=args.batches, warmup=args.warmup, trace=args.trace,
                         progress=not args.no_progress)
    finally:
        pipe.close()
    if args.json:
        import json

        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.format())
    return 0 if report.batches and math.isfinite(report.seconds) else 1
