"""CPU image pipeline throughput: streamflow vs DALI (CPU) vs PyTorch DataLoader.

The standard ImageNet training pipeline, on the CPU only:
read -> decode (RGB) -> resize to 256x256 -> centre crop 224x224 with random
mirror -> normalize (ImageNet mean/std on the 0-255 scale) -> CHW float32,
batched by ``--batch-size``, over a realistic JPEG set built by ``_dataset.py``.

Each system runs in its own subprocess (so thread pools and worker processes
of one never compete with the next for the cores), checks its first batch
(shape ``(B, 3, 224, 224)``, float32, values inside the normalized range),
warms up for one epoch, then times ``--repeats`` full epochs. Reported: images
per second, median and best over the repeats, and ratios of medians vs DALI and
vs the DataLoader. The machine is printed first; everything goes to JSON.

    python benchmarks/cpu_pipeline.py                       # all systems, 512 images
    python benchmarks/cpu_pipeline.py --systems torch,dali --repeats 5
    python benchmarks/cpu_pipeline.py --quick --json /tmp/q.json   # smoke run
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _common, _dataset when imported

import _common
import _dataset

SYSTEMS: tuple[str, ...] = ("streamflow", "torch", "dali")
LABELS: dict[str, str] = {
    "streamflow": "streamflow",
    "torch": "torch DataLoader+Pillow",
    "dali": "DALI (CPU)",
}
RESIZE: int = 256
CROP: int = 224
MEAN_255: tuple[float, float, float] = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD_255: tuple[float, float, float] = (0.229 * 255, 0.224 * 255, 0.225 * 255)
SEED: int = 42


@dataclass(frozen=True)
class BenchConfig:
    """One benchmark run's settings (shared by every system)."""

    images: int = 512
    batch_size: int = 64
    threads: int = 2
    repeats: int = 3
    warmup_epochs: int = 1
    data_dir: str = ""

    def worker_args(self) -> list[str]:
        """Command-line flags that rebuild this config in a worker process."""
        return ["--images", str(self.images), "--batch-size", str(self.batch_size),
                "--threads", str(self.threads), "--repeats", str(self.repeats),
                "--warmup-epochs", str(self.warmup_epochs), "--data-dir", self.data_dir]


class SkipSystem(Exception):
    """The system cannot run here (package missing, API not ready); not a failure."""


class CheckFailed(Exception):
    """A system's output is not what the standard pipeline must produce."""


class Runner(Protocol):
    """A built pipeline of one system."""

    def epoch(self, check: bool = False) -> int:
        """Run one epoch; return the images delivered. ``check``: verify batch 1."""
        ...

    def close(self) -> None:
        """Release threads, worker processes and files."""
        ...


# --------------------------------------------------------------------------- checks


def to_numpy(x: Any) -> Any:
    """A batch of any system (torch tensor, DALI or streamflow TensorList) as numpy."""
    import numpy as np

    if hasattr(x, "numpy") and callable(x.numpy):  # torch.Tensor
        return x.numpy()
    if hasattr(x, "as_cpu"):
        x = x.as_cpu()
    if hasattr(x, "as_tensor"):
        x = x.as_tensor()
    return np.asarray(x)


def check_batch(system: str, images: Any, labels: Any, batch_size: int) -> dict[str, Any]:
    """Check that a first batch is what the standard pipeline produces.

    Raises:
        CheckFailed: wrong shape, dtype, label count or value range.

    Returns:
        The shapes and dtypes found, for the JSON.
    """
    import numpy as np

    arr, lab = to_numpy(images), to_numpy(labels)
    want = (batch_size, 3, CROP, CROP)
    if arr.shape != want or arr.dtype != np.float32:
        raise CheckFailed(f"{system}: images are {arr.shape} {arr.dtype}, expected {want} "
                          "float32 (CHW, normalized)")
    if lab.shape[0] != batch_size:
        raise CheckFailed(f"{system}: {lab.shape[0]} labels for a batch of {batch_size}")
    mean, std = np.array(MEAN_255), np.array(STD_255)
    lo, hi = float((-mean / std).min()) - 1e-3, float(((255 - mean) / std).max()) + 1e-3
    if not np.isfinite(arr).all() or arr.min() < lo or arr.max() > hi or arr.std() < 0.1:
        raise CheckFailed(f"{system}: values span [{arr.min():.3f}, {arr.max():.3f}] with std "
                          f"{arr.std():.3f}; expected inside [{lo:.3f}, {hi:.3f}], not constant "
                          "(is normalization on the 0-255 scale?)")
    return {"images": [list(arr.shape), str(arr.dtype)],
            "labels": [list(lab.shape), str(lab.dtype)]}


def _batch_len(x: Any) -> int:
    """Samples in a batch: ``len()`` where the type has it, else the leading dimension."""
    try:
        return len(x)
    except TypeError:
        return int(to_numpy(x).shape[0])


def _dense(x: Any) -> Any:
    """The batch as one dense tensor, as a training step would take it."""
    return x.as_tensor() if hasattr(x, "as_tensor") else x


# --------------------------------------------------------------------------- the graph


def graph(fn: Any, types: Any, root: str) -> tuple[Any, Any]:
    """The benchmark's pipeline, one text for streamflow and DALI (each passes its own ``fn`` / ``types``).

    Read with shuffling, decode to RGB, resize, centre crop, random mirror and
    normalize to float CHW.
    """
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
    images = fn.resize(images, resize_x=RESIZE, resize_y=RESIZE)
    images = fn.crop_mirror_normalize(
        images, crop=(CROP, CROP), dtype=types.FLOAT, output_layout="CHW",
        mean=list(MEAN_255), std=list(STD_255), mirror=fn.random.coin_flip())
    return images, labels


# --------------------------------------------------------------------------- streamflow


class StreamflowRunner:
    """streamflow, written exactly as a user would (DESIGN.md, "What users write")."""

    def __init__(self, cfg: BenchConfig) -> None:
        repo = str(_common.REPO_ROOT)
        if repo not in sys.path:
            sys.path.insert(0, repo)  # benchmark the checkout, installed or not
        try:  # typed as modules (Any attributes): the API is still being written
            sf = importlib.import_module("streamflow")
            fn = importlib.import_module("streamflow.fn")
            types = importlib.import_module("streamflow.types")
        except Exception as exc:
            raise SkipSystem(f"`import streamflow` failed: {type(exc).__name__}: {exc}") from exc
        try:
            @sf.pipeline_def(batch_size=cfg.batch_size, num_threads=cfg.threads,
                             device_id=None, seed=SEED)
            def pipe(root: str) -> Any:
                return graph(fn, types, root)

            self.pipe = pipe(cfg.data_dir)
        except Exception as exc:
            raise SkipSystem(f"building the streamflow pipeline failed: "
                             f"{type(exc).__name__}: {exc}") from exc
        self.batch_size = cfg.batch_size
        # Which streamflow ran: it may be the checkout, not an installed version.
        self.output: dict[str, Any] = {"streamflow": {
            "version": getattr(sf, "__version__", None), "path": getattr(sf, "__file__", None)}}

    def epoch(self, check: bool = False) -> int:
        n = 0
        for images, labels in self.pipe.iter():
            if check and n == 0:
                self.output.update(check_batch("streamflow", images, labels, self.batch_size))
            _dense(images)
            n += _batch_len(labels)
        return n

    def close(self) -> None:
        self.pipe.close()


# --------------------------------------------------------------------------- torch


def _torch_dataset(root: str) -> Any:
    """An ImageFolder-like Dataset with the standard transforms in Pillow + numpy + torch.

    torchvision has no CPU build here, so the transforms are written out:
    RGB -> resize((256, 256), BILINEAR) -> centre crop 224 -> random hflip ->
    float CHW -> normalize (what ToTensor + Normalize do, on the 0-255 scale).
    """
    import numpy as np
    import torch
    from PIL import Image

    mean = torch.tensor(MEAN_255, dtype=torch.float32).view(3, 1, 1)
    std = torch.tensor(STD_255, dtype=torch.float32).view(3, 1, 1)
    off = (RESIZE - CROP) // 2
    box = (off, off, off + CROP, off + CROP)

    class FolderJpegs(torch.utils.data.Dataset):
        def __init__(self) -> None:
            classes = sorted(d for d in Path(root).iterdir() if d.is_dir())
            self.samples = [(f, k) for k, d in enumerate(classes)
                            for f in sorted(d.glob("*.jpg"))]

        def __len__(self) -> int:
            return len(self.samples)

        def __getitem__(self, i: int) -> tuple[Any, int]:
            path, label = self.samples[i]
            with Image.open(path) as f:
                rgb = f.convert("RGB")
            img = rgb.resize((RESIZE, RESIZE), Image.Resampling.BILINEAR).crop(box)
            if torch.rand(1).item() < 0.5:
                img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
            chw = torch.from_numpy(np.array(img)).permute(2, 0, 1).contiguous()
            return chw.to(torch.float32).sub_(mean).div_(std), label

    return FolderJpegs()


class TorchRunner:
    """PyTorch DataLoader, ``threads`` persistent worker processes, Pillow transforms."""

    def __init__(self, cfg: BenchConfig) -> None:
        try:
            import numpy  # noqa: F401
            import PIL  # noqa: F401
            import torch
        except ImportError as exc:
            raise SkipSystem(f"{exc.name} is not installed "
                             "(pip install torch==2.13.0 numpy pillow)") from exc
        gen = torch.Generator().manual_seed(SEED)
        self.loader = torch.utils.data.DataLoader(
            _torch_dataset(cfg.data_dir), batch_size=cfg.batch_size, shuffle=True,
            num_workers=cfg.threads, persistent_workers=cfg.threads > 0, pin_memory=False,
            drop_last=False, generator=gen)
        self.batch_size = cfg.batch_size
        self.output: dict[str, Any] = {}

    def epoch(self, check: bool = False) -> int:
        n = 0
        for images, labels in self.loader:
            if check and n == 0:
                self.output = check_batch("torch", images, labels, self.batch_size)
            n += len(labels)
        return n

    def close(self) -> None:
        it = getattr(self.loader, "_iterator", None)
        if it is not None and hasattr(it, "_shutdown_workers"):
            it._shutdown_workers()  # persistent workers would otherwise live until GC
        del self.loader


# --------------------------------------------------------------------------- DALI


class DaliRunner:
    """NVIDIA DALI's CPU pipeline (``device_id=None``), the same graph with DALI ops."""

    def __init__(self, cfg: BenchConfig) -> None:
        try:  # as modules: DALI's stubs do not admit device_id=None
            dali = importlib.import_module("nvidia.dali")
            fn = importlib.import_module("nvidia.dali.fn")
            types = importlib.import_module("nvidia.dali.types")
        except ImportError as exc:
            raise SkipSystem("nvidia.dali is not importable "
                             f"(pip install nvidia-dali-cuda130): {exc}") from exc

        @dali.pipeline_def(batch_size=cfg.batch_size, num_threads=cfg.threads, device_id=None,
                           seed=SEED)
        def pipe(root: str) -> Any:
            return graph(fn, types, root)

        self.pipe = pipe(cfg.data_dir)
        self.pipe.build()
        # DALI readers wrap around: an "epoch" is enough batches to cover the set once.
        self.batches = math.ceil(self.pipe.epoch_size("Reader") / cfg.batch_size)
        self.batch_size = cfg.batch_size
        self.output: dict[str, Any] = {}

    def epoch(self, check: bool = False) -> int:
        n = 0
        for i in range(self.batches):
            images, labels = self.pipe.run()
            if check and i == 0:
                self.output = check_batch("dali", images, labels, self.batch_size)
            _dense(images)
            n += len(labels)
        return n

    def close(self) -> None:
        del self.pipe


FACTORIES: dict[str, Callable[[BenchConfig], Runner]] = {
    "streamflow": StreamflowRunner,
    "torch": TorchRunner,
    "dali": DaliRunner,
}


# --------------------------------------------------------------------------- running


def run_system(name: str, cfg: BenchConfig) -> dict[str, Any]:
    """Build, check, warm up and time one system in this process.

    Returns:
        ``status`` ok/skipped/failed, plus ``reason`` or the timings.
    """
    result: dict[str, Any] = {"system": name, "label": LABELS[name]}
    start = time.perf_counter()
    try:
        runner = FACTORIES[name](cfg)
    except SkipSystem as exc:
        return {**result, "status": "skipped", "reason": str(exc)}
    except Exception as exc:
        return {**result, "status": "failed", "reason": f"build: {exc!r}",
                "traceback": traceback.format_exc()}
    result["build_s"] = time.perf_counter() - start
    try:
        start = time.perf_counter()
        runner.epoch(check=True)  # first warm-up epoch; checks batch 1
        result["first_epoch_s"] = time.perf_counter() - start
        result["output"] = runner.output  # type: ignore[attr-defined]
        timing = _common.time_repeats(runner.epoch, cfg.repeats, cfg.warmup_epochs - 1)
    except Exception as exc:
        return {**result, "status": "failed", "reason": repr(exc),
                "traceback": traceback.format_exc()}
    finally:
        runner.close()
    return {**result, "status": "ok", "timing": timing.summary()}


def run_isolated(name: str, cfg: BenchConfig) -> dict[str, Any]:
    """Run one system in a fresh Python process; its output goes to our terminal."""
    with tempfile.TemporaryDirectory(prefix="sf-bench-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name,
               "--worker-out", str(out), *cfg.worker_args()]
        proc = subprocess.run(cmd, check=False)
        if out.is_file():
            result: dict[str, Any] = json.loads(out.read_text())
            return result
    return {"system": name, "label": LABELS[name], "status": "failed",
            "reason": f"worker exited with code {proc.returncode} and no result"}


# --------------------------------------------------------------------------- report


def _ratio(a: dict[str, Any], b: dict[str, Any] | None) -> str:
    """``a``'s median rate over ``b``'s, formatted, or '-' when either is missing."""
    if b is None or a.get("status") != "ok" or b.get("status") != "ok":
        return "-"
    return f"{a['timing']['rate_median'] / b['timing']['rate_median']:.2f}x"


def ratios(results: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Median-over-median ratios of every ok system vs DALI and vs the DataLoader."""
    ok = {r["system"]: r["timing"]["rate_median"] for r in results if r["status"] == "ok"}
    return {name: {f"vs_{ref}": rate / ok[ref] for ref in ("dali", "torch") if ref in ok}
            for name, rate in ok.items()}


def report_table(results: list[dict[str, Any]]) -> str:
    """The img/s table: median, best, ratios, start-up, and why a row is missing."""
    by_name = {r["system"]: r for r in results}
    headers = ["system", "img/s median", "img/s best", "vs DALI", "vs DataLoader",
               "build+1st epoch [s]"]
    rows: list[list[str]] = []
    notes: list[str] = []
    for r in results:
        if r["status"] != "ok":
            rows.append([r["label"], r["status"], "-", "-", "-", "-"])
            notes.append(f"  {r['label']}: {r['status']}: {r['reason']}")
            continue
        t = r["timing"]
        rows.append([r["label"], f"{t['rate_median']:.0f}", f"{t['rate_best']:.0f}",
                     _ratio(r, by_name.get("dali")), _ratio(r, by_name.get("torch")),
                     f"{r['build_s'] + r['first_epoch_s']:.2f}"])
    return _common.format_table(headers, rows) + ("\n" + "\n".join(notes) if notes else "")


# --------------------------------------------------------------------------- CLI


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line flags; ``--quick`` shrinks every size for the smoke test."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=None, help="images in the set (512)")
    ap.add_argument("--batch-size", type=int, default=None, help="batch size (64)")
    ap.add_argument("--threads", type=int, default=2,
                    help="DALI/streamflow num_threads and DataLoader workers (2)")
    ap.add_argument("--repeats", type=int, default=None, help="timed epochs (3)")
    ap.add_argument("--warmup-epochs", type=int, default=1, help="untimed epochs first (1)")
    ap.add_argument("--systems", default=",".join(SYSTEMS),
                    help=f"comma-separated subset of {','.join(SYSTEMS)}")
    ap.add_argument("--json", type=Path, default=None,
                    help="result file (benchmarks/results/cpu_pipeline-<tag>.json)")
    ap.add_argument("--data-dir", default=None, help="JPEG set folder (.bench-data/...)")
    ap.add_argument("--quick", action="store_true",
                    help="tiny run (16 images, batch 8, 1 repeat) to check the machinery")
    ap.add_argument("--no-isolate", action="store_true",
                    help="run systems in this process, one after another (faster start)")
    ap.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(args.systems) - set(SYSTEMS))
    if unknown:
        ap.error(f"unknown system(s) {unknown}; choose from {list(SYSTEMS)}")
    if args.warmup_epochs < 1:
        ap.error("--warmup-epochs must be >= 1 (the first epoch also checks the output)")
    return args


def make_config(args: argparse.Namespace) -> BenchConfig:
    """Apply the defaults (normal or ``--quick``) to the flags left unset."""
    quick = args.quick
    images = args.images or (16 if quick else 512)
    data_dir = args.data_dir or str(_dataset.default_out_dir(images))
    return BenchConfig(images=images,
                       batch_size=args.batch_size or (8 if quick else 64),
                       threads=args.threads,
                       repeats=args.repeats or (1 if quick else 3),
                       warmup_epochs=args.warmup_epochs,
                       data_dir=data_dir)


def default_json_path(quick: bool) -> Path:
    """Real runs land in benchmarks/results; quick runs in the git-ignored .bench-data."""
    name = f"cpu_pipeline-{_common.machine_tag()}.json"
    return (_dataset.DEFAULT_DATA_ROOT / f"quick-{name}") if quick else (
        _common.RESULTS_DIR / name)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit code 1 when a system failed (skips are fine)."""
    args = parse_args(argv)
    cfg = make_config(args)
    if args.worker:  # child process: one system, result to a file
        result = run_system(args.worker, cfg)
        _common.write_json(args.worker_out, result)
        return 0

    info = _common.machine_info()
    _common.print_machine(info)
    files = _dataset.build_jpeg_set(cfg.data_dir, n=cfg.images)
    size = sum(f.stat().st_size for f in files)
    print(f"data    : {len(files)} JPEGs, {size / 2**20:.1f} MiB in {cfg.data_dir}")
    print(f"config  : {asdict(cfg)}\n")

    results = []
    for name in args.systems:
        print(f"--- {LABELS[name]}", flush=True)
        result = run_system(name, cfg) if args.no_isolate else run_isolated(name, cfg)
        results.append(result)
        if result["status"] == "ok":
            t = result["timing"]
            print(f"    {t['rate_median']:.0f} img/s median, {t['rate_best']:.0f} best, "
                  f"epochs {[round(s, 3) for s in t['seconds']]} s", flush=True)
        else:
            print(f"    {result['status']}: {result['reason']}", flush=True)

    print()
    print(report_table(results))
    path = args.json or default_json_path(args.quick)
    _common.write_json(path, {
        "benchmark": "cpu_pipeline",
        "date": _common.now_iso(),
        "command": shlex.join([sys.executable, *sys.argv]) if argv is None
        else shlex.join([sys.executable, __file__, *argv]),
        "isolated": not args.no_isolate,
        "config": asdict(cfg),
        "dataset": {"dir": cfg.data_dir, "images": len(files), "bytes": size},
        "machine": info,
        "results": results,
        "ratios": ratios(results),
    })
    print(f"\nwrote {path}")
    return 1 if any(r["status"] == "failed" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
