"""GPU training pipeline benchmark: streamflow (mixed decode + GPU ops) vs baselines.

The ImageNet-style pipeline: ``decoders.image_random_crop(device="mixed")``,
``resize`` to 224x224 and ``crop_mirror_normalize`` (float, CHW, random
mirror) on the GPU, batch 256, on ~2000 realistic JPEGs
(``_dataset.build_jpeg_set``). Beside it, in the same run:

* ``nvimgcodec-decode``: nvImageCodec batch decoding of the same files, bytes
  already in memory, nothing else: the ceiling for a decode-bound pipeline;
* ``torchvision``: ``torchvision.io.decode_jpeg(device="cuda")`` on the batch,
  then per image a random crop, ``F.interpolate(antialias=True)``, flip and
  normalize with torch ops (what a PyTorch user would write);
* ``dali``: the same pipeline in NVIDIA DALI, when it can be imported.

Each system: one warm-up epoch, then ``--repeats`` timed epochs; img/s median
and best; JSON in ``benchmarks/results/gpu_pipeline-<tag>.json`` with the
GPU, driver and command. Without a usable GPU it prints why and exits with 3.

    python benchmarks/gpu_pipeline.py            # full run
    python benchmarks/gpu_pipeline.py --quick    # 512 images, batch 64, 1 repeat
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import (
    RESULTS_DIR,
    format_table,
    machine_info,
    machine_tag,
    now_iso,
    print_machine,
    time_repeats,
    write_json,
)
from _dataset import build_jpeg_set

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def gpu_description() -> dict[str, Any]:
    from streamflow.backend import driver_version, gpu_info

    info: dict[str, Any] = {"gpus": gpu_info(), "cuda_driver": driver_version()}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        info["nvidia_smi"] = smi.stdout.strip()
    except Exception as exc:  # pragma: no cover - no nvidia-smi
        info["nvidia_smi"] = f"unavailable: {exc}"
    return info


# --------------------------------------------------------------------------- systems


def run_streamflow(root: Path, batch: int, threads: int) -> Any:
    import streamflow as sf
    from streamflow import fn, types

    @sf.pipeline_def(batch_size=batch, num_threads=threads, device_id=0, seed=0, prefetch_queue_depth=2)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(root), random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB)
        images = fn.resize(images, resize_x=224, resize_y=224, device="gpu")
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(), device="gpu")
        return images, labels

    p = pipe()
    p.build()

    def epoch() -> int:
        n = 0
        for images, _labels in p.iter():
            n += len(images)  # delivered batches are finished on the device
        return n

    return p, epoch


def run_nvimgcodec(files: list[Path], batch: int, threads: int) -> Any:
    import cupy as cp
    from nvidia import nvimgcodec as nv

    data = [f.read_bytes() for f in files]
    stream = cp.cuda.Stream(non_blocking=True)
    dec = nv.Decoder(device_id=0, max_num_cpu_threads=threads, backends=[
        nv.Backend(nv.BackendKind.HW_GPU_ONLY), nv.Backend(nv.BackendKind.GPU_ONLY),
        nv.Backend(nv.BackendKind.HYBRID_CPU_GPU), nv.Backend(nv.BackendKind.CPU_ONLY)])
    params = nv.DecodeParams(color_spec=nv.ColorSpec.SRGB, sample_format=nv.SampleFormat.I_RGB)

    def epoch() -> int:
        n, keep = 0, []
        for i in range(0, len(data), batch):
            out = dec.decode(data[i: i + batch], params=params, cuda_stream=stream.ptr)
            n += sum(o is not None for o in out)
            keep.append(out)
            if len(keep) > 2:
                keep.pop(0)
        stream.synchronize()
        return n

    return None, epoch


def run_torchvision(files: list[Path], batch: int) -> Any:
    import torch
    import torch.nn.functional as F
    import torchvision
    from torchvision.io import decode_jpeg

    raw = [torchvision.io.read_file(str(f)) for f in files]
    mean = torch.tensor(MEAN, device="cuda").view(3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(3, 1, 1)
    gen = torch.Generator().manual_seed(0)

    def rrc_window(h: int, w: int) -> tuple[int, int, int, int]:
        for _ in range(10):
            area = h * w * float(torch.empty(1).uniform_(0.08, 1.0, generator=gen))
            ratio = float(torch.exp(torch.empty(1).uniform_(-0.2877, 0.2877, generator=gen)))
            cw, ch = round((area * ratio) ** 0.5), round((area / ratio) ** 0.5)
            if 0 < cw <= w and 0 < ch <= h:
                y = int(torch.randint(0, h - ch + 1, (1,), generator=gen))
                x = int(torch.randint(0, w - cw + 1, (1,), generator=gen))
                return y, x, ch, cw
        return 0, 0, h, w

    def epoch() -> int:
        n = 0
        for i in range(0, len(raw), batch):
            images = decode_jpeg(raw[i: i + batch], device="cuda")
            out = []
            for img in images:
                y, x, h, w = rrc_window(img.shape[1], img.shape[2])
                crop = img[:, y: y + h, x: x + w].unsqueeze(0).float()
                r = F.interpolate(crop, size=(224, 224), mode="bilinear", antialias=True, align_corners=False)[0]
                if bool(torch.rand(1, generator=gen) < 0.5):
                    r = r.flip(-1)
                out.append((r - mean) / std)
            torch.stack(out)
            n += len(images)
        torch.cuda.synchronize()
        return n

    return None, epoch


def run_dali(root: Path, batch: int, threads: int) -> Any:
    from nvidia.dali import fn as dfn
    from nvidia.dali import pipeline_def, types
    from nvidia.dali.plugin.base_iterator import LastBatchPolicy  # noqa: F401

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0, seed=0)
    def pipe():
        jpegs, labels = dfn.readers.file(file_root=str(root), random_shuffle=True, name="Reader")
        images = dfn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB)
        images = dfn.resize(images, resize_x=224, resize_y=224)
        images = dfn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                           mirror=dfn.random.coin_flip())
        return images, labels

    p = pipe()
    p.build()
    size = p.epoch_size("Reader")

    def epoch() -> int:
        n = 0
        while n < size:
            out = p.run()
            n += len(out[0])
        return n

    return p, epoch


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=8, help="CPU threads (streamflow num_threads, decoder threads)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--systems", default="streamflow,nvimgcodec-decode,torchvision,dali")
    ap.add_argument("--quick", action="store_true", help="512 images, batch 64, 1 repeat")
    ap.add_argument("--tag", default=None, help="result file tag (default: the machine tag)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.images, args.batch, args.repeats = min(args.images, 512), min(args.batch, 64), 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from streamflow.backend import gpu_count

    if gpu_count() == 0:
        print("gpu_pipeline: no usable CUDA GPU here (cupy cannot see one); nothing was measured. "
              "Run this on a GPU machine (see docs/gpu.md).")
        return 3
    info = machine_info()
    print_machine(info)
    gpu = gpu_description()
    print(f"gpu     : {gpu['nvidia_smi']} (CUDA driver {gpu['cuda_driver']})\n")
    files = build_jpeg_set(n=args.images)
    root = files[0].parent.parent
    print(f"data    : {len(files)} JPEGs under {root}, batch {args.batch}, {args.repeats} repeats\n")
    makers = {
        "streamflow": lambda: run_streamflow(root, args.batch, args.threads),
        "nvimgcodec-decode": lambda: run_nvimgcodec(files, args.batch, args.threads),
        "torchvision": lambda: run_torchvision(files, args.batch),
        "dali": lambda: run_dali(root, args.batch, args.threads),
    }
    results: dict[str, Any] = {}
    for name in [s.strip() for s in args.systems.split(",") if s.strip()]:
        try:
            owner, epoch = makers[name]()
        except ImportError as exc:
            print(f"{name:18s} skipped: {exc}")
            results[name] = {"skipped": str(exc)}
            continue
        except Exception as exc:
            print(f"{name:18s} FAILED to set up: {type(exc).__name__}: {exc}")
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        try:
            t0 = time.perf_counter()
            timing = time_repeats(epoch, repeats=args.repeats, warmup=args.warmup)
            results[name] = timing.summary()
            print(f"{name:18s} {timing.median_rate():9.0f} img/s median, {timing.best_rate():9.0f} best "
                  f"({time.perf_counter() - t0:.1f} s)")
        except Exception as exc:
            print(f"{name:18s} FAILED: {type(exc).__name__}: {exc}")
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            if owner is not None and hasattr(owner, "close"):
                owner.close()
    rows = []
    ceiling = results.get("nvimgcodec-decode", {}).get("rate_median")
    for name, r in results.items():
        rate = r.get("rate_median")
        rows.append([name, f"{rate:.0f}" if rate else "-",
                     f"{rate / ceiling:.2f}x" if rate and ceiling else "-"])
    print()
    print(format_table(["system", "img/s (median)", "vs decode alone"], rows))
    payload = {
        "benchmark": "gpu_pipeline",
        "when": now_iso(),
        "command": " ".join([sys.executable, *sys.argv]),
        "machine": info,
        "gpu": gpu,
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "results": results,
    }
    out = args.out or RESULTS_DIR / f"gpu_pipeline-{args.tag or machine_tag()}.json"
    print(f"\nwrote {write_json(out, payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
