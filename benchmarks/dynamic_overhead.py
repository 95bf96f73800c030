"""What one dynamic-mode call costs: a small resize through ``streamflow.dynamic`` vs the kernel itself.

One uint8 HWC image (``--size``, default 64x64x3) resized to half its size
(linear, antialiased: ``fn.resize``'s defaults), call after call, by:

* ``kernel``: ``streamflow._native.imgproc.resample``, the C kernel the
  resize operator calls (no argument checks, no operator);
* ``operator``: the ``Resize`` operator's ``run`` on a ready ``Chunk`` (the
  operator contract, as a pipeline stage calls it; the operator is built once);
* ``dynamic``: ``streamflow.dynamic.resize(image, size=...)``, everything a
  user call does (argument checks, operator, node, chunk, result ``Tensor``);
* ``dynamic batch``: the same on a batch of ``--batch`` images, per image
  (the batch is split over the worker pool);
* ``aio``: ``await streamflow.dynamic.aio.resize(...)`` one after the other
  (the work goes to the worker pool and back to the event loop);
* ``pipeline``: a one-batch pipeline made and run per call (what dynamic mode
  saves when you do not want a pipeline);
* ``pillow``: ``PIL.Image.resize`` (bilinear, reducing_gap=None), a baseline
  that is not streamflow (other filter: close, not identical, values).

Every streamflow result is checked against the kernel's (identical). Each
system runs ``--calls`` calls per repeat after a warm-up; the table gives the
median and best time per call [µs] over ``--repeats`` and the overhead over
the kernel, then the 10th percentile of ``--calls`` calls timed one by one
(``p10 single``): on a machine shared with other jobs, loop averages include
the time other processes hold the cores, a low percentile of single calls
is the cost of a call that ran uninterrupted. Compare several runs.

Usage::

    python benchmarks/dynamic_overhead.py              # 64x64, 2000 calls x 7 repeats
    python benchmarks/dynamic_overhead.py --size 256 --calls 500
    python benchmarks/dynamic_overhead.py --quick      # a smoke run, < 2 s

Writes ``benchmarks/results/dynamic_overhead-<machine tag>.json``
(``--quick``: ``.bench-data/quick-dynamic_overhead-<tag>.json``) unless
``--output`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common

import streamflow as sf
import streamflow.dynamic as ndd
from streamflow import fn
from streamflow._native import imgproc
from streamflow.operator import Chunk, RandomKey
from streamflow.ops.resize import Resize


def _per_call(run: Callable[[], Any], calls: int, repeats: int, warmup: int) -> list[float]:
    """Seconds per call of each repeat (``calls`` calls each), after ``warmup`` calls."""
    for _ in range(warmup):
        run()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        out.append((time.perf_counter() - start) / calls)
    return out


def _single_calls(run: Callable[[], Any], calls: int) -> list[float]:
    """Seconds of each of ``calls`` calls timed one by one: their low percentiles are the cost of an
    uninterrupted call, which a loaded machine (other jobs taking the cores) does not inflate."""
    clock = time.perf_counter_ns
    out = []
    for _ in range(calls):
        start = clock()
        run()
        out.append((clock() - start) * 1e-9)
    return out


def _image(size: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (max(2, size // 8), max(2, size // 8), 3), dtype=np.uint8)
    return imgproc.resample(small, (size, size), antialias=False)  # smooth, photo-like


def _operator_call(image: np.ndarray, out_size: tuple[int, int]) -> Callable[[], Any]:
    built: dict[str, Any] = {}

    @sf.pipeline_def(batch_size=1, num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        node = fn.resize(fn.external_source([[image]]), size=out_size)
        built["op"] = node.producer.op
        return node

    pipe().close()  # only to have the operator as fn.resize builds it
    op: Resize = built["op"]

    def run() -> Any:
        chunk = Chunk(inputs=[[image]], args={}, sample_ids=np.zeros(1, np.int64), sources=[None], epoch=0,
                      key=RandomKey(1, 0))
        return op.run(chunk)[0][0]

    return run


def _pipeline_call(image: np.ndarray, out_size: tuple[int, int]) -> Callable[[], Any]:
    @sf.pipeline_def(batch_size=1, num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.resize(fn.external_source([[image]]), size=out_size)

    def run() -> Any:
        with pipe() as p:
            return p.run()[0].at(0)

    return run


def _aio_calls(image: np.ndarray, out_size: tuple[int, int], calls: int, repeats: int,
               warmup: int) -> tuple[list[float], list[float]]:
    """(seconds per call of each repeat, seconds of single calls) of ``await aio.resize``."""
    async def main() -> tuple[list[float], list[float]]:
        for _ in range(warmup):
            await ndd.aio.resize(image, size=out_size)
        out = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(calls):
                await ndd.aio.resize(image, size=out_size)
            out.append((time.perf_counter() - start) / calls)
        single = []
        for _ in range(calls):
            start = time.perf_counter()
            await ndd.aio.resize(image, size=out_size)
            single.append(time.perf_counter() - start)
        return out, single

    return asyncio.run(main())


def _pillow_call(image: np.ndarray, out_size: tuple[int, int]) -> Callable[[], Any] | None:
    try:
        from PIL import Image
    except ImportError:
        return None
    pil = Image.fromarray(image)
    return lambda: np.asarray(pil.resize((out_size[1], out_size[0]), Image.BILINEAR, reducing_gap=None))


def _check(name: str, got: Any, want: np.ndarray) -> None:
    got = np.asarray(got)
    if got.shape != want.shape or not np.array_equal(got, want):
        raise SystemExit(f"{name}: the result differs from the kernel's")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=64, help="image side [px] (64)")
    ap.add_argument("--batch", type=int, default=8, help="images of the batch case (8)")
    ap.add_argument("--calls", type=int, default=None, help="calls per repeat (2000; --quick: 50)")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats (7; --quick: 2)")
    ap.add_argument("--threads", type=int, default=None, help="dynamic mode's worker threads (its default)")
    ap.add_argument("--output", type=Path, default=None, help="JSON result path")
    ap.add_argument("--quick", action="store_true", help="a smoke run")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    calls = args.calls or (50 if args.quick else 2000)
    repeats = args.repeats or (2 if args.quick else 7)
    warmup = max(10, calls // 10)
    if args.threads:
        ndd.set_num_threads(args.threads)
    info = _common.machine_info()
    _common.print_machine(info)

    image = _image(args.size)
    out_size = (args.size // 2, args.size // 2)
    want = imgproc.resample(image, out_size)
    batch = [image] * args.batch
    systems: dict[str, Callable[[], Any]] = {
        "kernel": lambda: imgproc.resample(image, out_size),
        "operator": _operator_call(image, out_size),
        "dynamic": lambda: ndd.resize(image, size=out_size),
        "dynamic batch": lambda: ndd.resize(batch, size=out_size),
    }
    _check("operator", systems["operator"](), want)
    _check("dynamic", systems["dynamic"](), want)
    for sample in systems["dynamic batch"]().tensors:
        _check("dynamic batch", sample, want)

    results: dict[str, dict[str, Any]] = {}
    for name, run in systems.items():
        per_call = _per_call(run, calls, repeats, warmup)
        single = _single_calls(run, calls)
        if name == "dynamic batch":  # per image
            per_call = [t / args.batch for t in per_call]
            single = [t / args.batch for t in single]
        results[name] = {"seconds_per_call": per_call, "p10_single_us": float(np.percentile(single, 10)) * 1e6}
    aio, aio_single = _aio_calls(image, out_size, calls, repeats, warmup)
    results["aio"] = {"seconds_per_call": aio, "p10_single_us": float(np.percentile(aio_single, 10)) * 1e6}
    slow = max(1, calls // 20)
    pipeline = _pipeline_call(image, out_size)
    _check("pipeline", pipeline(), want)
    results["pipeline"] = {"seconds_per_call": _per_call(pipeline, slow, repeats, 2), "calls": slow,
                           "p10_single_us": float(np.percentile(_single_calls(pipeline, slow), 10)) * 1e6}
    pillow = _pillow_call(image, out_size)
    if pillow is not None:
        results["pillow"] = {"seconds_per_call": _per_call(pillow, calls, repeats, warmup),
                             "p10_single_us": float(np.percentile(_single_calls(pillow, calls), 10)) * 1e6}
    else:
        results["pillow"] = {"skipped": "Pillow is not installed (pip install pillow)"}

    kernel = statistics.median(results["kernel"]["seconds_per_call"])
    kernel_p10 = results["kernel"]["p10_single_us"]
    rows = []
    for name, r in results.items():
        if "skipped" in r:
            rows.append([name, "skipped", "", "", "", "", ""])
            continue
        med, best = statistics.median(r["seconds_per_call"]), min(r["seconds_per_call"])
        r.update(median_us=med * 1e6, best_us=best * 1e6, overhead_us=(med - kernel) * 1e6)
        p10 = r.get("p10_single_us")
        rows.append([name, f"{med * 1e6:.1f}", f"{best * 1e6:.1f}", f"{(med - kernel) * 1e6:+.1f}",
                     f"{med / kernel:.2f}x", "" if p10 is None else f"{p10:.1f}",
                     "" if p10 is None else f"{p10 - kernel_p10:+.1f}"])
    print(f"resize {args.size}x{args.size}x3 uint8 -> {out_size[0]}x{out_size[1]} (linear, antialias), "
          f"{calls} calls x {repeats} repeats, {ndd.get_num_threads()} dynamic worker threads")
    print(_common.format_table(["system", "median us/call", "best us/call", "vs kernel us", "x kernel",
                                "p10 single us", "p10 vs kernel"], rows))

    out = args.output or (
        (_common.REPO_ROOT / ".bench-data" / f"quick-dynamic_overhead-{info['tag']}.json") if args.quick
        else _common.RESULTS_DIR / f"dynamic_overhead-{info['tag']}.json"
    )
    payload = {
        "benchmark": "dynamic_overhead",
        "date": _common.now_iso(),
        "command": shlex.join([sys.executable, *sys.argv]) if argv is None
        else shlex.join(["python", "benchmarks/dynamic_overhead.py", *argv]),
        "machine": info,
        "config": {"size": args.size, "out_size": list(out_size), "batch": args.batch, "calls": calls,
                   "repeats": repeats, "warmup": warmup, "threads": ndd.get_num_threads(), "quick": args.quick},
        "results": results,
    }
    print(f"\nwrote {_common.write_json(out, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
