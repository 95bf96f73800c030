"""The augmentation operators on the CPU: streamflow vs DALI 2.4, one operator per pipeline.

Each pipeline feeds the same batch of real photos (``tests/data/photos``,
resized to 512x480 RGB uint8) through ``fn.external_source`` into one
operator; the table shows images per second for each system, with
``--threads`` worker threads. A plain numpy separable Gaussian blur is the
baseline that uses neither library. Each system runs in its own subprocess;
DALI may live in another virtual environment (``--dali-python``). The machine
is printed first, every pipeline warms up, ``--repeats`` epochs of
``--batches`` batches are timed (median and best reported), everything goes
to JSON in ``benchmarks/results/``.

``streamflow-ref`` (with ``--ref-root DIR``) runs another checkout's
streamflow package in the same run (before/after a change). ``--rounds N``
repeats the whole comparison N times, each round starting with another
system (the machine's load drifts); the table then shows the median of the
rounds' medians, and the JSON keeps every round.

    python benchmarks/augment_ops.py --dali-python /path/to/venv-with-dali/bin/python
    python benchmarks/augment_ops.py --systems streamflow,streamflow-ref,dali --ref-root ../before --rounds 3
    python benchmarks/augment_ops.py --quick                  # smoke run
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import numpy as np

PHOTOS = Path(__file__).resolve().parents[1] / "tests" / "data" / "photos"
HEIGHT, WIDTH = 480, 512
SHARPEN = [[0.0, -1.0, 0.0], [-1.0, 5.0, -1.0], [0.0, -1.0, 0.0]]
SHEAR = [1.0, 0.2, -40.0, 0.1, 1.0, -10.0]
HOMOGRAPHY = [1.0, 0.1, 2.0, 0.05, 1.0, 3.0, 1e-4, 2e-4, 1.0]

#: name -> the pipeline step, written once for both libraries (``m``: the library's names).
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "brightness": lambda m, x: m.fn.brightness(x, brightness=1.3),
    "contrast": lambda m, x: m.fn.contrast(x, contrast=1.4),
    "gaussian_blur s=2": lambda m, x: m.fn.gaussian_blur(x, sigma=2.0),
    "laplacian w=3": lambda m, x: m.fn.laplacian(x, window_size=3),
    "filter 3x3": lambda m, x: m.fn.filter(x, m.kernel),
    "median_blur 3x3": lambda m, x: m.fn.experimental.median_blur(x),
    "noise.gaussian": lambda m, x: m.fn.noise.gaussian(x, stddev=10.0),
    "noise.salt_and_pepper": lambda m, x: m.fn.noise.salt_and_pepper(x),
    "noise.shot": lambda m, x: m.fn.noise.shot(x, factor=5.0),
    "grid_mask": lambda m, x: m.fn.grid_mask(x, angle=0.3),
    "jpeg q=50": lambda m, x: m.fn.jpeg_compression_distortion(x, quality=50),
    "equalize": lambda m, x: m.fn.equalize(x),
    "reductions.mean HW": lambda m, x: m.fn.reductions.mean(x, axis_names="HW"),
    "warp_affine": lambda m, x: m.fn.warp_affine(x, matrix=SHEAR, fill_value=128),
    "warp_affine NN": lambda m, x: m.fn.warp_affine(x, matrix=SHEAR, fill_value=128,
                                                     interp_type=m.types.INTERP_NN),
    "rotate 20": lambda m, x: m.fn.rotate(x, angle=20.0, fill_value=0),
    "rotate keep_size": lambda m, x: m.fn.rotate(x, angle=-15.0, keep_size=True),
    "warp_perspective": lambda m, x: m.fn.experimental.warp_perspective(x, matrix=HOMOGRAPHY),
    "hsv FLOAT": lambda m, x: m.fn.hsv(x, hue=20.0, saturation=1.2, dtype=m.types.FLOAT),
    "brightness_contrast": lambda m, x: m.fn.brightness_contrast(x, brightness=1.1, contrast=1.3),
    "trivial_augment_wide": lambda m, x: m.trivial_augment.trivial_augment_wide(x),
    "rand_augment n=2 m=9": lambda m, x: m.rand_augment.rand_augment(x, n=2, m=9),
}
#: DALI needs enable_conditionals=True for these.
CONDITIONAL = {"trivial_augment_wide", "rand_augment n=2 m=9"}
DALI_MISSING = {"median_blur 3x3"}  # GPU-only in DALI 2.4


def photos() -> list[np.ndarray]:
    """512x480 RGB crops of real photos (Pillow), or noise where Pillow is missing."""
    try:
        from PIL import Image

        out = []
        for name in ("astronaut.png", "coffee.png", "chelsea.png", "motorcycle_left.png"):
            with Image.open(PHOTOS / name) as im:
                out.append(np.asarray(im.convert("RGB").resize((WIDTH, HEIGHT), Image.BILINEAR)))
        return out
    except ImportError:
        rng = np.random.default_rng(0)
        return [rng.integers(0, 256, (HEIGHT, WIDTH, 3), np.uint8) for _ in range(4)]


def _batch(size: int) -> list[np.ndarray]:
    imgs = photos()
    return [np.ascontiguousarray(imgs[i % len(imgs)]) for i in range(size)]


def _build(system: str, op: str, batch: list[np.ndarray], threads: int, batches: int,
           root: str | None = None) -> tuple[Callable[[], int], Any]:
    """An epoch function (``batches`` batches of ``op``) and a close function (``root``: the checkout
    whose streamflow package runs; default this one)."""
    if system == "streamflow":
        sys.path.insert(0, root or str(Path(__file__).resolve().parent.parent))
        import streamflow as sf
        from streamflow import fn
        from streamflow.auto_aug import rand_augment, trivial_augment

        names = argparse.Namespace(fn=fn, kernel=np.array(SHARPEN, np.float32), rand_augment=rand_augment,
                                   trivial_augment=trivial_augment, types=sf.types)

        @sf.pipeline_def(batch_size=len(batch), num_threads=threads, device_id=None, seed=1)
        def pipe() -> Any:
            x = fn.external_source([batch] * batches, layout="HWC")
            return OPS[op](names, x)

        p = pipe()
        return (lambda: sum(len(out) for (out,) in p.iter())), p.close
    from nvidia.dali import fn as dfn
    from nvidia.dali import pipeline_def, types
    from nvidia.dali.auto_aug import rand_augment as drand
    from nvidia.dali.auto_aug import trivial_augment as dtrivial

    dnames = argparse.Namespace(fn=dfn, kernel=types.Constant(np.array(SHARPEN, np.float32)), rand_augment=drand,
                                trivial_augment=dtrivial, types=types)

    @pipeline_def(batch_size=len(batch), num_threads=threads, device_id=None, seed=1,
                  enable_conditionals=op in CONDITIONAL)
    def dpipe() -> Any:
        x = dfn.external_source(source=lambda: batch, batch=True, layout="HWC")
        return OPS[op](dnames, x)

    d = dpipe()
    d.build()
    return (lambda: sum(len(d.run()[0]) for _ in range(batches))), (lambda: None)


def numpy_blur(batch: list[np.ndarray], sigma: float = 2.0) -> int:
    """The baseline: separable Gaussian blur in plain numpy (float32, reflect-101 borders), uint8 out."""
    r = int(np.ceil(3 * sigma))
    x = np.arange(-r, r + 1, dtype=np.float32)
    w = np.exp(-x * x / (2 * sigma * sigma))
    w /= w.sum()
    for img in batch:
        pad = np.pad(img.astype(np.float32), ((r, r), (r, r), (0, 0)), mode="reflect")
        h = sum(w[k] * pad[:, k:k + img.shape[1]] for k in range(2 * r + 1))
        v = sum(w[k] * h[k:k + img.shape[0]] for k in range(2 * r + 1))
        np.clip(np.rint(v), 0, 255).astype(np.uint8)
    return len(batch)


def worker(args: argparse.Namespace) -> None:
    """Subprocess: time every operator of one system; print JSON."""
    results: dict[str, Any] = {"system": args.worker, "machine": _common.machine_info(), "ops": {}}
    batch = _batch(args.batch_size)
    library = "streamflow" if args.worker.startswith("streamflow") else "dali"
    root = getattr(args, "ref_root", None) if args.worker == "streamflow-ref" else None
    if root:
        results["ref_root"] = root
    try:
        for op in (o for o in OPS if o in args.ops.split(",") or args.ops == "all"):
            if library == "dali" and op in DALI_MISSING:
                continue
            try:
                epoch, close = _build(library, op, batch, args.threads, args.batches, root)
                try:
                    results["ops"][op] = _common.time_repeats(epoch, repeats=args.repeats, warmup=1).summary()
                finally:
                    close()
            except ImportError:
                raise
            except Exception:
                results["ops"][op] = {"error": traceback.format_exc()[-2000:]}
        if library == "streamflow":
            results["numpy_blur"] = _common.time_repeats(lambda: numpy_blur(batch), repeats=args.repeats,
                                                         warmup=1).summary()
    except ImportError as exc:
        results["skipped"] = f"{exc} {_common.SKIP_HINT}"
    _common.print_result(results)


SYSTEMS = ("streamflow", "streamflow-ref", "dali")


def run(system: str, python: str, args: argparse.Namespace) -> dict[str, Any]:
    if system not in SYSTEMS:
        return {"system": system, "error": f"unknown system; choose from {', '.join(SYSTEMS)}"}
    worker_args = ["--batch-size", str(args.batch_size), "--threads", str(args.threads), "--repeats",
                   str(args.repeats), "--batches", str(args.batches), "--ops", args.ops]
    if system == "streamflow-ref":
        if not args.ref_root:
            return {"system": system, "skipped": "give --ref-root DIR (a checkout with a built streamflow)"}
        worker_args += ["--ref-root", str(Path(args.ref_root).resolve())]
    return _common.run_worker(__file__, system, python, worker_args)


def rounds_medians(results: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """system -> op -> the median over rounds of each round's median rate (img/s)."""
    rates: dict[str, dict[str, list[float]]] = {}
    for r in results:
        for op, entry in (r.get("ops") or {}).items():
            if isinstance(entry, dict) and entry.get("rate_median") is not None:
                rates.setdefault(r["system"], {}).setdefault(op, []).append(float(entry["rate_median"]))
    return {s: {op: float(np.median(v)) for op, v in ops.items()} for s, ops in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--batches", type=int, default=4, help="batches per timed epoch")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ops", default="all", help="comma-separated names from OPS, or all")
    _common.add_system_args(parser, quick_help="tiny batches, 1 repeat (smoke run)")
    parser.add_argument("--rounds", type=int, default=1, help="repeat the comparison, rotating the systems' order")
    parser.add_argument("--ref-root", default=None, help="checkout whose streamflow package streamflow-ref runs")
    parser.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.quick:
        args.batch_size, args.batches, args.repeats = 2, 1, 1
    info = _common.machine_info()
    _common.print_machine(info)
    systems = args.systems.split(",")
    results = []
    for round_index in range(max(1, args.rounds)):
        order = systems[round_index % len(systems):] + systems[:round_index % len(systems)]
        for s in order:
            result = run(s, _common.interpreter(s, args), args)
            if args.rounds > 1:
                result["round"] = round_index + 1
            results.append(result)
    medians = rounds_medians(results)
    rows = []
    for op in OPS:
        cells = [op]
        for system in systems:
            r = medians.get(system, {}).get(op)
            cells.append("-" if r is None else f"{r:.0f}")
        sf, dali = medians.get("streamflow", {}).get(op), medians.get("dali", {}).get(op)
        cells.append(f"{sf / dali:.2f}x" if sf and dali else "-")
        rows.append(cells)
    print(_common.format_table(["operator", *(f"{s} img/s" for s in systems), "streamflow / DALI"], rows))
    if args.rounds > 1:
        print(f"(median of {args.rounds} rounds' medians)")
    base = next((r.get("numpy_blur") for r in results if r.get("system") == "streamflow" and r.get("numpy_blur")),
                None)
    if base:
        print(f"\nbaseline, plain numpy separable blur (sigma 2, one thread): {base['rate_median']:.0f} img/s")
    _common.save_results("augment_ops", args, info, results)


if __name__ == "__main__":
    main()
