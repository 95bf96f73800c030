"""Soak test: the CPU pipeline for many batches; resident memory must not grow after warm-up.

The pipeline is the usual training one on small images: read -> decode (RGB)
-> resize to 48x48 -> crop_mirror_normalize to 40x40 with a random mirror,
batch 32, ``on_error="skip"``, over ``--images`` 64x64 JPEGs cut from the real
photos of ``tests/data/photos`` (plus ``--bad`` broken files, so that the
skip-and-replace path runs all the time too). It runs for ``--batches``
batches (default 20,000) or ``--minutes``, whichever comes first, with
epochs back to back, and samples the resident set size (``/proc/self/statm``)
every ``--sample-every`` batches.

Reported: RSS at the start (right after ``--warmup`` batches), in the middle
and at the end, the largest sample, threads and open file descriptors at the
start and end, throughput, and the number of skipped samples. Exit status 1
if the end RSS exceeds the post-warm-up RSS by more than ``--tolerance``
(default 5%), or if threads or file descriptors grew. JSON goes to
``benchmarks/results/soak-<tag>.json``.

    python benchmarks/soak.py                     # 20,000 batches
    python benchmarks/soak.py --batches 2000 --tag quick
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common

PHOTOS = _common.REPO_ROOT / "tests" / "data" / "photos"


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def build_images(root: Path, count: int, bad: int, seed: int = 0) -> None:
    """``count`` 64x64 JPEG crops of the real photos in 4 classes, plus ``bad`` broken files."""
    from PIL import Image

    rng = random.Random(seed)
    photos = []
    for p in sorted(PHOTOS.iterdir()):
        with Image.open(p) as im:
            photos.append(im.convert("RGB"))
    for i in range(count):
        photo = photos[i % len(photos)]
        w, h = photo.size
        side = rng.randrange(64, min(w, h) + 1)
        x, y = rng.randrange(w - side + 1), rng.randrange(h - side + 1)
        folder = root / f"class_{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        photo.crop((x, y, x + side, y + side)).resize((64, 64)).save(
            folder / f"img_{i:04d}.jpg", quality=rng.randrange(75, 96))
    good = (root / "class_0" / "img_0000.jpg").read_bytes()
    for j in range(bad):
        # Alternately truncated and garbage: decode errors, skipped and replaced.
        data = good[: len(good) // 2] if j % 2 == 0 else bytes(rng.randrange(256) for _ in range(500))
        (root / f"class_{j % 4}" / f"bad_{j:02d}.jpg").write_bytes(data)


def make_pipeline(root: Path, batch_size: int, threads: int) -> Any:
    import streamflow as sf
    from streamflow import fn

    @sf.pipeline_def(batch_size=batch_size, num_threads=threads, seed=1, on_error="skip")
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(root), random_shuffle=True)
        images = fn.resize(fn.decoders.image(jpegs), size=(48, 48))
        out = fn.crop_mirror_normalize(images, crop=(40, 40), mirror=fn.random.coin_flip(),
                                       mean=[124.0, 116.0, 104.0], std=[58.0, 57.0, 57.0])
        return out, labels

    return pipe()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=20_000)
    ap.add_argument("--minutes", type=float, default=30.0, help="stop earlier after this long")
    ap.add_argument("--warmup", type=int, default=500, help="batches before the start RSS is taken")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--bad", type=int, default=4, help="broken files among the images")
    ap.add_argument("--sample-every", type=int, default=250)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--tag", default=None, help="result file suffix (default: the machine tag)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    info = _common.machine_info()
    _common.print_machine(info)
    workdir = Path(tempfile.mkdtemp(prefix="sf-soak-"))
    try:
        build_images(workdir / "images", args.images, args.bad)
        # Threads and descriptors are judged with no pipeline, before and after: while
        # it runs, reads in flight hold files open, so mid-run counts vary.
        before = {"threads": threading.active_count(), "fds": open_fds()}
        pipe = make_pipeline(workdir / "images", args.batch_size, args.threads)
        began = time.monotonic()
        deadline = began + args.minutes * 60
        samples: list[tuple[int, float, int]] = []  # (batch, seconds, rss)
        done, epochs, short = 0, 0, 0
        start: dict[str, Any] = {}
        while done < args.batches and time.monotonic() < deadline:
            for batch in pipe.iter():
                if len(batch[0]) != args.batch_size:
                    short += 1
                done += 1
                if done == args.warmup:
                    import gc

                    gc.collect()
                    start = {"batch": done, "rss": rss_bytes(), "threads": threading.active_count(),
                             "fds": open_fds(), "time": time.monotonic()}
                if done % args.sample_every == 0:
                    samples.append((done, round(time.monotonic() - began, 2), rss_bytes()))
                if done >= args.batches or time.monotonic() >= deadline:
                    break
            epochs += 1
        import gc

        gc.collect()
        end = {"batch": done, "rss": rss_bytes(), "threads": threading.active_count(), "fds": open_fds(),
               "time": time.monotonic()}
        skipped = pipe.stats().skipped_total
        pipe.close()
        after_close = {"threads": threading.active_count(), "fds": open_fds()}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    if not start:
        print(f"only {done} batches ran, fewer than the warm-up of {args.warmup}: nothing to compare")
        return 1
    after = [s for s in samples if s[0] >= start["batch"]]
    middle = min(after, key=lambda s: abs(s[0] - (start["batch"] + done) / 2)) if after else (done, 0, end["rss"])
    growth = end["rss"] / start["rss"] - 1
    seconds = end["time"] - start["time"]
    mib = 2**20
    ok_rss = growth <= args.tolerance
    ok_res = after_close["threads"] <= before["threads"] and after_close["fds"] <= before["fds"]
    print(f"batches : {done} of {args.batches} asked ({epochs} epochs, batch {args.batch_size}, "
          f"{args.threads} threads, {args.images} images + {args.bad} bad), partial batches (epoch ends): {short}")
    print(f"speed   : {(done - start['batch']) / seconds:.0f} batches/s after warm-up "
          f"({(done - start['batch']) * args.batch_size / seconds:.0f} images/s)")
    print(f"RSS     : start {start['rss'] / mib:.1f} MiB (after {start['batch']} batches), "
          f"middle {middle[2] / mib:.1f} MiB (batch {middle[0]}), end {end['rss'] / mib:.1f} MiB, "
          f"max {max(s[2] for s in after) / mib if after else 0:.1f} MiB: growth {growth * 100:+.2f}% "
          f"(limit {args.tolerance * 100:.0f}%)")
    print(f"threads : {before['threads']} before the pipeline, {end['threads']} running, "
          f"{after_close['threads']} after close; fds {before['fds']} / {end['fds']} / {after_close['fds']}; "
          f"skipped samples counted: {skipped}")
    print("PASS" if ok_rss and ok_res else "FAIL")
    payload = {
        "benchmark": "soak",
        "time": _common.now_iso(),
        "machine": info,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "batches": done,
        "epochs": epochs,
        "short_batches": short,
        "rss_start_bytes": start["rss"],
        "rss_start_batch": start["batch"],
        "rss_middle_bytes": middle[2],
        "rss_middle_batch": middle[0],
        "rss_end_bytes": end["rss"],
        "rss_growth": growth,
        "threads": [before["threads"], end["threads"], after_close["threads"]],
        "fds": [before["fds"], end["fds"], after_close["fds"]],
        "skipped": skipped,
        "batches_per_s": (done - start["batch"]) / seconds,
        "samples": samples,
        "passed": ok_rss and ok_res,
    }
    tag = args.tag or _common.machine_tag()
    path = args.json or _common.RESULTS_DIR / f"soak-{tag}.json"
    _common.write_json(path, payload)
    print(f"results : {path}")
    return 0 if ok_rss and ok_res else 1


if __name__ == "__main__":
    sys.exit(main())
