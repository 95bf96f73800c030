"""A user's Python step inside a pipeline: streamflow's ``python_function`` vs DALI's, same function.

The pipeline: read -> decode (RGB) -> resize to 224x224 -> ``python_function(step)``
-> batch, over the realistic JPEG set of ``_dataset.py``. ``step`` is what
users write there: numpy on one image (a gamma curve through a lookup table
plus a brightness jitter, about half a millisecond per image). Each system
runs twice, with and without the step, so the table shows what the step
costs in each library. DALI requires ``exec_async=False,
exec_pipelined=False`` for Python operators; that is part of its cost.

Each system runs in its own subprocess; DALI may live in another virtual
environment (``--dali-python``). The machine is printed first, one epoch
warms up, ``--repeats`` epochs are timed, everything goes to JSON.

    python benchmarks/python_step.py
    python benchmarks/python_step.py --dali-python /path/to/venv-with-dali/bin/python --repeats 5
    python benchmarks/python_step.py --quick            # smoke run (64 images, 1 repeat)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _dataset
import numpy as np

SIZE = 224
GAMMA_LUT = (255.0 * (np.arange(256) / 255.0) ** 0.8).round().astype(np.uint8)


def step(image: np.ndarray) -> np.ndarray:
    """The user's Python step: a gamma curve (lookup table) and a +8 brightness jitter, clipped."""
    out = GAMMA_LUT[image].astype(np.int16) + 8
    return np.clip(out, 0, 255).astype(np.uint8)


def _streamflow(root: str, batch: int, threads: int, with_step: bool) -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import streamflow as sf
    from streamflow import fn, types

    @sf.pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=1)
    def pipe() -> Any:
        jpegs, labels = fn.readers.file(file_root=root)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
        if with_step:
            images = fn.python_function(images, function=step)
        return images, labels

    p = pipe()

    def epoch() -> int:
        return sum(len(images) for images, _ in p.iter())

    return epoch, p.close


def _dali(root: str, batch: int, threads: int, with_step: bool) -> Any:
    from nvidia.dali import fn, pipeline_def, types

    options = {"exec_async": False, "exec_pipelined": False} if with_step else {}

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=1, **options)
    def pipe() -> Any:
        jpegs, labels = fn.readers.file(file_root=root, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
        if with_step:
            images = fn.python_function(images, function=step)
        return images, labels

    p = pipe()
    p.build()
    size = p.epoch_size("Reader")
    batches = -(-size // batch)

    def epoch() -> int:
        return sum(len(p.run()[0]) for _ in range(batches))

    return epoch, lambda: None


SYSTEMS = {"streamflow": _streamflow, "dali": _dali}


def worker(args: argparse.Namespace) -> None:
    """Subprocess: time one system with and without the step; print JSON."""
    results: dict[str, Any] = {"system": args.worker, "machine": _common.machine_info()}
    try:
        for with_step in (False, True):
            epoch, close = SYSTEMS[args.worker](args.data_dir, args.batch_size, args.threads, with_step)
            try:
                timing = _common.time_repeats(epoch, repeats=args.repeats, warmup=1)
            finally:
                close()
            results["with_step" if with_step else "without_step"] = timing.summary()
    except ImportError as exc:
        results["skipped"] = f"{exc} {_common.SKIP_HINT}"
    except Exception:
        results["error"] = traceback.format_exc()
    _common.print_result(results)


def run(system: str, python: str, args: argparse.Namespace) -> dict[str, Any]:
    return _common.run_worker(__file__, system, python, [
        "--data-dir", args.data_dir, "--batch-size", str(args.batch_size), "--threads", str(args.threads),
        "--repeats", str(args.repeats)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    _common.add_system_args(parser, quick_help="64 images, 1 repeat (smoke run)")
    parser.add_argument("--data-dir", default="")
    parser.add_argument("--worker", choices=sorted(SYSTEMS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.quick:
        args.images, args.repeats, args.batch_size = 64, 1, 16
    info = _common.machine_info()
    _common.print_machine(info)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(args.data_dir) if args.data_dir else Path(scratch) / "jpegs"
        if not args.data_dir:
            _dataset.build_jpeg_set(root, n=args.images)
        args.data_dir = str(root)
        results = [run(s, _common.interpreter(s, args), args) for s in args.systems.split(",")]
    rows = []
    for r in results:
        if "error" in r or "skipped" in r:
            rows.append([r["system"], "-", "-", "-", r.get("skipped", "error")[:60]])
            continue
        plain, stepped = r["without_step"]["rate_median"], r["with_step"]["rate_median"]
        per_image_ms = 1000 * args.threads * (1 / stepped - 1 / plain) if stepped and plain else float("nan")
        rows.append([r["system"], f"{plain:.0f}", f"{stepped:.0f}", f"{stepped / plain:.2f}",
                     f"{per_image_ms:.2f} ms core-time/img"])
    print(_common.format_table(["system", "img/s without step", "img/s with step", "kept", "step cost"], rows))
    ok = {r["system"]: r for r in results if "with_step" in r}
    summary: dict[str, Any] = {}
    if "streamflow" in ok and "dali" in ok:
        summary["with_step_vs_dali"] = (ok["streamflow"]["with_step"]["rate_median"]
                                        / ok["dali"]["with_step"]["rate_median"])
        print(f"\nwith the Python step: streamflow {summary['with_step_vs_dali']:.2f}x DALI")
    _common.save_results("python_step", args, info, results, summary)


if __name__ == "__main__":
    main()
