"""Video sequences per second: streamflow's video reader vs plain PyAV loops, torchvision.io and DALI CPU.

Data: ``--videos`` clips of ``--frames`` frames (320x240, 25 fps, a keyframe
every 25 frames), encoded once with PyAV under ``.bench-data/video/`` in H.264
and in VP9 (DALI 2.4's CPU reader decodes VP9, not H.264). Task: every
sequence of ``--sequence-length`` frames (step = length) of every clip,
decoded to FHWC uint8 RGB, in file order (``sequential``) or shuffled
(``shuffled``: each sequence is a random access, where seeking to the
keyframe before it matters).

Systems (each on the same clips, same sequences):

* ``streamflow``: ``fn.experimental.readers.video`` (``--threads`` worker threads, batch ``--batch-size``);
* ``pyav loop``: the plain baseline: sequential: decode each file once and cut
  it into sequences; shuffled: per sequence, open, seek to the keyframe
  before it, decode forward (one thread);
* ``pyav threads``: the same loop over ``--threads`` threads (PyAV decodes without the GIL);
* ``torchvision``: ``torchvision.io.read_video`` per sequence, when importable;
* ``dali cpu``: ``fn.experimental.readers.video(device="cpu")`` run by ``--dali-python``
  (a Python with DALI 2.4), on the VP9 clips only.

Warm-up one epoch, then ``--repeats`` timed epochs; median and best rates.
Writes ``benchmarks/results/video_pipeline-<machine tag>.json``.

Usage::

    python benchmarks/video_pipeline.py [--dali-python /path/to/python-with-dali]
    python benchmarks/video_pipeline.py --quick      # a few seconds, for the smoke test
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common

DATA = _common.REPO_ROOT / ".bench-data" / "video"
CODECS = {"h264": (".mp4", "libx264", {"preset": "veryfast", "crf": "23"}), "vp9": (".webm", "libvpx-vp9", {"deadline": "realtime", "cpu-used": "8"})}


def make_clips(codec: str, count: int, frames: int, folder: Path = DATA) -> list[str]:
    """``count`` clips of moving patterns (made once, reused)."""
    import av

    suffix, encoder, options = CODECS[codec]
    folder.mkdir(parents=True, exist_ok=True)
    yy, xx = np.mgrid[0:240, 0:320]
    paths = []
    for k in range(count):
        path = folder / f"{codec}_{frames}f_{k:03d}{suffix}"
        if not path.exists():
            tmp = path.with_name("tmp-" + path.name)
            with av.open(str(tmp), "w", format="mp4" if suffix == ".mp4" else "webm") as container:
                stream: Any = container.add_stream(encoder, rate=25)
                stream.width, stream.height, stream.pix_fmt, stream.gop_size = 320, 240, "yuv420p", 25
                stream.options = dict(options)
                for i in range(frames):
                    rgb = np.stack([(xx + 3 * i + 17 * k) % 256, (yy + 2 * i) % 256,
                                    ((xx // 16 + yy // 16 + i // 5) % 2) * 180 + 30], axis=-1).astype(np.uint8)
                    for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                        container.mux(packet)
                for packet in stream.encode():
                    container.mux(packet)
            tmp.rename(path)
        paths.append(str(path))
    return paths


def sequences_of(paths: list[str], length: int, frames: int) -> list[tuple[str, int]]:
    return [(p, s) for p in paths for s in range(0, frames - length + 1, length)]


def _flags() -> Any:
    from av.video.reformatter import Interpolation as I

    return I.BILINEAR | I.FULL_CHR_H_INT | I.ACCURATE_RND


def pyav_file(path: str, length: int) -> list[np.ndarray]:
    """Decode a whole file once and cut it into sequences (the sequential baseline)."""
    import av

    flags = _flags()
    with av.open(path) as c:
        frames = [f.to_ndarray(format="rgb24", interpolation=flags) for f in c.decode(video=0)]
    return [np.stack(frames[s:s + length]) for s in range(0, len(frames) - length + 1, length)]


def pyav_sequence(path: str, start: int, length: int) -> np.ndarray:
    """One sequence by random access: seek to the keyframe before ``start``, decode forward."""
    import av

    flags = _flags()
    with av.open(path) as c:
        stream = c.streams.video[0]
        period = 1 / (float(stream.average_rate) * float(stream.time_base))
        c.seek(int(start * period), stream=stream, backward=True)
        out = []
        for frame in c.decode(stream):
            index = round(frame.pts / period)
            if index >= start:
                out.append(frame.to_ndarray(format="rgb24", interpolation=flags))
                if len(out) == length:
                    break
    return np.stack(out)


def run_pyav(paths: list[str], seqs: list[tuple[str, int]], length: int, shuffled: bool, threads: int) -> Callable[[], int]:
    pool = ThreadPoolExecutor(threads) if threads > 1 else None

    def once() -> int:
        if shuffled:
            order = list(seqs)
            random.Random(0).shuffle(order)
            work = [lambda p=p, s=s: [pyav_sequence(p, s, length)] for p, s in order]
        else:
            work = [lambda p=p: pyav_file(p, length) for p in paths]
        results = list(pool.map(lambda w: w(), work)) if pool else [w() for w in work]
        return sum(len(r) for r in results)

    return once


def run_streamflow(paths: list[str], length: int, shuffled: bool, threads: int, batch: int) -> Callable[[], int]:
    import streamflow as sf
    from streamflow import fn

    @sf.pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=0, prefetch_queue_depth=2)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.experimental.readers.video(filenames=paths, sequence_length=length, random_shuffle=shuffled,
                                             initial_fill=256, name="R")

    p = pipe()
    p.build()

    def once() -> int:
        return sum(len(batch[0]) for batch in p.iter())

    return once


def run_torchvision(seqs: list[tuple[str, int]], length: int, shuffled: bool) -> Callable[[], int]:
    import torchvision.io as tvio

    read_video = tvio.read_video

    def once() -> int:
        order = list(seqs)
        if shuffled:
            random.Random(0).shuffle(order)
        for path, start in order:
            read_video(path, start_pts=start / 25, end_pts=(start + length - 1) / 25, pts_unit="sec")
        return len(order)

    return once


DALI_SCRIPT = r"""
import json, sys, time
from nvidia.dali import fn, pipeline_def
cfg = json.loads(sys.argv[1])
@pipeline_def(batch_size=cfg["batch"], num_threads=cfg["threads"], device_id=None, seed=0)
def pipe():
    return fn.experimental.readers.video(device="cpu", filenames=cfg["paths"], sequence_length=cfg["length"],
                                         random_shuffle=cfg["shuffled"], initial_fill=256, name="R")
p = pipe(); p.build()
n = p.epoch_size("R"); iters = -(-n // cfg["batch"])
def epoch():
    for _ in range(iters): p.run()
    return iters * cfg["batch"]
t = time.perf_counter(); epoch(); warm = time.perf_counter() - t
secs, items = [], []
for _ in range(cfg["repeats"]):
    t = time.perf_counter(); items.append(epoch()); secs.append(time.perf_counter() - t)
print(json.dumps({"seconds": secs, "items": items, "warmup_seconds": warm}))
"""


def run_dali(python: str, paths: list[str], length: int, shuffled: bool, threads: int, batch: int,
             repeats: int) -> _common.Timing:
    cfg = dict(paths=paths, length=length, shuffled=shuffled, threads=threads, batch=batch, repeats=repeats)
    out = subprocess.run([python, "-c", DALI_SCRIPT, json.dumps(cfg)], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "DALI run failed")
    raw = json.loads(out.stdout.strip().splitlines()[-1])
    return _common.Timing(seconds=raw["seconds"], items=raw["items"], warmup_seconds=raw["warmup_seconds"])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=16)
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--sequence-length", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dali-python", help="a Python with DALI 2.4, for the DALI CPU row")
    parser.add_argument("--quick", action="store_true", help="tiny run (smoke test)")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if args.quick:
        args.videos, args.frames, args.repeats = 2, 40, 1
    info = _common.machine_info((*_common.DEFAULT_PACKAGES, "av", "torchvision"))
    _common.print_machine(info)
    L = args.sequence_length
    rows: list[dict[str, Any]] = []
    for codec in ("h264", "vp9"):
        paths = make_clips(codec, args.videos, args.frames, DATA if not args.quick else DATA / "quick")
        seqs = sequences_of(paths, L, args.frames)
        for shuffled in (False, True):
            scenario = "shuffled" if shuffled else "sequential"
            systems: dict[str, Callable[[], _common.Timing]] = {
                "streamflow": lambda: _common.time_repeats(
                    run_streamflow(paths, L, shuffled, args.threads, args.batch_size), args.repeats),
                "pyav loop": lambda: _common.time_repeats(run_pyav(paths, seqs, L, shuffled, 1), args.repeats),
                f"pyav {args.threads} threads": lambda: _common.time_repeats(
                    run_pyav(paths, seqs, L, shuffled, args.threads), args.repeats),
                "torchvision": lambda: _common.time_repeats(run_torchvision(seqs, L, shuffled), args.repeats),
            }
            if codec == "vp9" and args.dali_python:
                systems["dali cpu"] = lambda: run_dali(args.dali_python, paths, L, shuffled, args.threads,
                                                       args.batch_size, args.repeats)
            for name, run in systems.items():
                row: dict[str, Any] = {"codec": codec, "order": scenario, "system": name}
                try:
                    timing = run()
                    row.update(timing.summary())
                except Exception as err:  # a missing or broken optional system is reported, not fatal
                    row["unavailable"] = f"{type(err).__name__}: {err}"[:300]
                rows.append(row)
                rate = f"{row['rate_median']:.1f} (best {row['rate_best']:.1f})" if "rate_median" in row else \
                    f"unavailable: {row['unavailable']}"
                print(f"{codec:5s} {scenario:10s} {name:16s} {rate}", flush=True)
    table = [[f"{r['codec']} {r['order']}", r["system"],
              f"{r['rate_median']:.1f}" if "rate_median" in r else "-",
              f"{r['rate_best']:.1f}" if "rate_best" in r else "-"] for r in rows]
    print()
    print(_common.format_table(["data", "system", "seq/s median", "seq/s best"], table))
    payload = {"benchmark": "video_pipeline", "time": _common.now_iso(), "machine": info,
               "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
               "rows": rows}
    out = args.output or (_common.REPO_ROOT / ".bench-data" / f"quick-video_pipeline-{info['tag']}.json" if args.quick
                          else _common.RESULTS_DIR / f"video_pipeline-{info['tag']}.json")
    _common.write_json(out, payload)
    print(f"\nwrote {out}")
    return payload


if __name__ == "__main__":
    main()
