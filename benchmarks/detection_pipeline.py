"""DALI's SSD training pipeline (examples/ssd_coco.py): streamflow vs DALI 2.4, the same source.

The pipeline file is run by each library with its own ``fn`` / ``types`` /
``pipeline_def`` in place of the import line (and, for CPU-only runs in both,
the ``.gpu()`` copies dropped), over a COCO-format set built here: the
realistic JPEGs of ``_dataset.py`` with 1 to 8 random boxes (and polygons)
per image. Reading, decoding, the IoU-constrained random crop, slice, resize,
colour jitter, mirror, normalization and SSD box encoding (8732 anchors) are
all on the CPU.

Each system runs in its own subprocess (DALI may live in another virtual
environment: ``--dali-python``). The machine is printed first, one epoch
warms up, ``--repeats`` epochs are timed, everything goes to JSON.

    python benchmarks/detection_pipeline.py
    python benchmarks/detection_pipeline.py --dali-python /path/to/venv-with-dali/bin/python --repeats 5
    python benchmarks/detection_pipeline.py --quick            # smoke run (32 images, 1 repeat)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _dataset

EXAMPLE = _common.REPO_ROOT / "examples" / "ssd_coco.py"
IMPORT_LINE = "from streamflow import fn, pipeline_def, types"


def build_coco_set(root: Path, n: int, seed: int = 0) -> Path:
    """JPEGs plus ``annotations.json`` with random boxes and polygons; returns the annotations path."""
    import numpy as np
    from PIL import Image

    files = _dataset.build_jpeg_set(root, n=n, seed=seed)
    rng = np.random.default_rng(seed)
    images, annotations = [], []
    for k, path in enumerate(files):
        with Image.open(path) as im:
            w, h = im.size
        images.append({"id": k + 1, "file_name": str(path.relative_to(root)), "width": w, "height": h})
        for _ in range(int(rng.integers(1, 9))):
            bw, bh = rng.uniform(0.05, 0.6) * w, rng.uniform(0.05, 0.6) * h
            x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            poly = [x, y, x + bw, y, x + bw / 2, y + bh]
            annotations.append({"id": len(annotations) + 1, "image_id": k + 1, "category_id": int(rng.integers(1, 81)),
                                "iscrowd": 0, "bbox": [x, y, bw, bh], "area": bw * bh, "segmentation": [poly]})
    doc = {"images": images, "annotations": annotations,
           "categories": [{"id": c, "name": f"class{c}"} for c in range(1, 81)]}
    out = root / "annotations.json"
    out.write_text(json.dumps(doc))
    return out


def _load_pipeline(fn: Any, types: Any, pipeline_def: Any, cpu_only: bool) -> dict[str, Any]:
    source = EXAMPLE.read_text().replace(IMPORT_LINE, "")
    if cpu_only:
        source = source.replace(".gpu()", "")
    namespace: dict[str, Any] = {"fn": fn, "types": types, "pipeline_def": pipeline_def, "__name__": "ssd",
                                 "__file__": str(EXAMPLE)}
    exec(compile(source, str(EXAMPLE), "exec"), namespace)
    return namespace


def _pipeline(system: str, args: argparse.Namespace) -> Any:
    if system == "streamflow":
        sys.path.insert(0, str(_common.REPO_ROOT))
        from streamflow import fn, pipeline_def, types
    else:
        from nvidia.dali import fn, pipeline_def, types
    ns = _load_pipeline(fn, types, pipeline_def, cpu_only=True)
    pipe_args = ns["parse_args"](["--root", args.data_dir, "--annotations", args.annotations])
    p = ns["create_coco_pipeline"](ns["DefaultBoxes"](), pipe_args, batch_size=args.batch_size,
                                   num_threads=args.threads, device_id=None, seed=1)
    p.build()
    batches = -(-p.epoch_size("Reader") // args.batch_size)

    def epoch() -> int:
        return sum(len(p.run()[0]) for _ in range(batches))

    return epoch, getattr(p, "close", lambda: None)


def worker(args: argparse.Namespace) -> None:
    """Subprocess: time one system; print JSON."""
    results: dict[str, Any] = {"system": args.worker, "machine": _common.machine_info()}
    try:
        epoch, close = _pipeline(args.worker, args)
        try:
            results["timing"] = _common.time_repeats(epoch, repeats=args.repeats, warmup=1).summary()
        finally:
            close()
    except ImportError as exc:
        results["skipped"] = f"{exc} {_common.SKIP_HINT}"
    except Exception:
        results["error"] = traceback.format_exc()
    _common.print_result(results)


def run(system: str, python: str, args: argparse.Namespace) -> dict[str, Any]:
    return _common.run_worker(__file__, system, python, [
        "--data-dir", args.data_dir, "--annotations", args.annotations, "--batch-size", str(args.batch_size),
        "--threads", str(args.threads), "--repeats", str(args.repeats)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    _common.add_system_args(parser, quick_help="32 images, 1 repeat (smoke run)")
    parser.add_argument("--data-dir", default="")
    parser.add_argument("--annotations", default="")
    parser.add_argument("--worker", choices=["streamflow", "dali"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.quick:
        args.images, args.repeats, args.batch_size = 32, 1, 8
    info = _common.machine_info()
    _common.print_machine(info)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(args.data_dir) if args.data_dir else Path(scratch) / "coco"
        if not args.annotations:
            args.annotations = str(build_coco_set(root, args.images))
        args.data_dir = str(root)
        results = [run(s, _common.interpreter(s, args), args) for s in args.systems.split(",")]
    rows = []
    for r in results:
        if "timing" not in r:
            rows.append([r["system"], "-", "-", r.get("skipped", "error")[:70]])
            continue
        t = r["timing"]
        rows.append([r["system"], f"{t['rate_median']:.1f}", f"{t['rate_best']:.1f}", ""])
    print(_common.format_table(["system", "img/s (median)", "img/s (best)", "note"], rows))
    ok = {r["system"]: r["timing"] for r in results if "timing" in r}
    summary: dict[str, Any] = {}
    if "streamflow" in ok and "dali" in ok:
        summary["streamflow_vs_dali"] = ok["streamflow"]["rate_median"] / ok["dali"]["rate_median"]
        print(f"\nSSD pipeline: streamflow {summary['streamflow_vs_dali']:.2f}x DALI (CPU)")
    _common.save_results("detection_pipeline", args, info, results, summary)


if __name__ == "__main__":
    main()
