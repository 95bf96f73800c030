"""Micro-benchmark of the C image kernels: resize 256 fused with a 224 centre
crop, then crop_mirror_normalize to CHW float32, per image, 1 and 2 threads.

Run: python benchmarks/kernels_micro.py [--n 400]
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from streamflow._native import imgproc as K

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
PHOTOS = Path(__file__).resolve().parents[1] / "tests" / "data" / "photos"


def images() -> list[np.ndarray]:
    """500x640 RGB inputs: crops of real photos (plus noise if Pillow is missing)."""
    out = []
    try:
        from PIL import Image

        for name in ("motorcycle_left.png", "coffee.png", "rocket.jpg", "astronaut.png"):
            with Image.open(PHOTOS / name) as im:
                a = np.asarray(im.convert("RGB").resize((640, 500), Image.BILINEAR))
            out.append(np.ascontiguousarray(a))
    except ImportError:
        rng = np.random.default_rng(0)
        out = [rng.integers(0, 256, (500, 640, 3), np.uint8) for _ in range(4)]
    return out


def one(img: np.ndarray, out: np.ndarray, mirror: bool) -> None:
    win = K.resampled_size_window((256, 256), (224, 224))
    crop = K.resample(img, (256, 256), window=win)
    K.crop_mirror_normalize(crop, mirror=mirror, mean=MEAN, std=STD, out=out)


def bench(n: int, threads: int, imgs: list[np.ndarray]) -> float:
    batch = np.empty((n, 3, 224, 224), np.float32)
    work = [(imgs[i % len(imgs)], batch[i], bool(i & 1)) for i in range(n)]
    if threads == 1:
        t = time.perf_counter()
        for a in work:
            one(*a)
        return time.perf_counter() - t
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(lambda a: one(*a), work[:threads]))  # warm up the pool
        t = time.perf_counter()
        list(ex.map(lambda a: one(*a), work))
        return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400)
    args = ap.parse_args()
    imgs = images()
    win = K.resampled_size_window((256, 256), (224, 224))
    crop = K.resample(imgs[0], (256, 256), window=win)
    reps = 200
    for name, fn in [
        ("resample 500x640->256 (224 window)", lambda: K.resample(imgs[0], (256, 256), window=win)),
        ("resample 500x640->256 full", lambda: K.resample(imgs[0], (256, 256))),
        (
            "crop_mirror_normalize 224 CHW f32",
            lambda: K.crop_mirror_normalize(crop, mirror=True, mean=MEAN, std=STD),
        ),
    ]:
        fn()
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        print(f"{name:40s} {(time.perf_counter() - t) / reps * 1e3:.3f} ms")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    bench(50, 1, imgs)
    t1 = min(bench(args.n, 1, imgs) for _ in range(3))
    print(
        f"fused resize+crop+CMN, 1 thread : {t1 / args.n * 1e3:.3f} ms/img "
        f"({args.n / t1:.0f} img/s)"
    )
    for th in (2,):
        tt = min(bench(args.n, th, imgs) for _ in range(3))
        print(
            f"fused resize+crop+CMN, {th} threads: {tt / args.n * 1e3:.3f} ms/img wall "
            f"({args.n / tt:.0f} img/s, x{t1 / tt:.2f}; {cores} cores)"
        )


if __name__ == "__main__":
    main()
