"""The RNN-T / QuartzNet speech preprocessing chain: streamflow beside DALI (CPU) and a numpy baseline.

The chain (``examples/asr_preprocessing.py: rnnt_pipeline``): decode with
speed perturbation (resampling by a random factor in [0.85, 1.15]), trim
silence (``nonsilent_region`` + ``slice``), preemphasis, power spectrogram
(512-point FFT, 20 ms windows every 10 ms), 80 mel filters, natural log,
per-feature normalization, pad to the batch's longest. Systems:

* ``streamflow``: the example, as written.
* ``dali``: the same file with DALI's import (DALI 2.4 CPU, ``device_id=None``);
  runs in the interpreter given by ``--dali-python`` (default: this one), and
  is skipped when ``nvidia.dali`` does not import there.
* ``numpy``: a plain Python loader with no streamflow: soundfile decoding,
  soxr resampling, numpy STFT and librosa's mel matrix, on a thread pool of
  ``--threads`` workers (a user's hand-written loader; torchaudio is not
  installable here).

* ``streamflow-ref`` (with ``--ref-root DIR``): the same example run on the
  streamflow package of another checkout (e.g. the commit before a change),
  for before/after comparisons on the same machine in the same run.

The data set is ``--clips`` WAV files (16 kHz mono, 1.5 to 4 s) cut from the
speech recordings of ``tests/data/audio`` with random gains, written once
into ``--data``. Each system runs in its own process: one warm-up epoch, then
``--repeats`` timed epochs; throughput in clips/s and seconds of audio per
second, and the process's CPU time per clip (all threads, user + system:
what a clip costs, whatever share of a shared machine the process got). ``--rounds N`` repeats the whole comparison N times, each round
starting with another system, so that on a shared, noisy machine every
system meets the same load changes; every round's times are kept. Results
(machine first, raw times included) go to
``benchmarks/results/audio_pipeline-<machine>.json``.

    python benchmarks/audio_pipeline.py --dali-python /path/to/dali-venv/bin/python
    python benchmarks/audio_pipeline.py --dali-python ... --systems streamflow,dali --rounds 5
    python benchmarks/audio_pipeline.py --quick          # 48 clips, 1 repeat
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import _common

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "tests" / "data" / "audio" / n for n in ("arctic_a0007.wav", "arctic_a0009.wav")]
SYSTEMS = ("streamflow", "dali", "numpy")
SAMPLE_RATE = 16000


# --------------------------------------------------------------------------- data


def build_clips(folder: Path, n: int, seed: int = 0) -> tuple[list[str], float]:
    """``n`` WAV clips cut from the shipped recordings (written once); returns (paths, total seconds)."""
    import numpy as np
    import soundfile

    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / f"clips-{n}-{seed}.json"
    if marker.is_file():
        meta = json.loads(marker.read_text())
        return meta["files"], meta["seconds"]
    rng = np.random.default_rng(seed)
    speech = [soundfile.read(str(p), dtype="float32")[0] for p in SOURCES]
    files, total = [], 0.0
    for i in range(n):
        source = speech[i % len(speech)]
        length = int(rng.uniform(1.5, min(4.0, len(source) / SAMPLE_RATE)) * SAMPLE_RATE)
        start = int(rng.integers(0, len(source) - length + 1))
        clip = np.clip(source[start : start + length] * rng.uniform(0.5, 1.5), -1, 1)
        path = folder / f"clip{i:05d}.wav"
        soundfile.write(str(path), clip, SAMPLE_RATE, subtype="PCM_16")
        files.append(str(path))
        total += length / SAMPLE_RATE
    marker.write_text(json.dumps({"files": files, "seconds": total}))
    return files, total


# --------------------------------------------------------------------------- systems


class Skip(Exception):
    """The system cannot run here (a package is missing)."""


def load_example(backend: str) -> dict[str, Any]:
    """examples/asr_preprocessing.py, with DALI's import line for ``backend="dali"``."""
    source = (ROOT / "examples" / "asr_preprocessing.py").read_text()
    if backend == "dali":
        line = "from streamflow import fn, pipeline_def, types"
        source = source.replace(line, "from nvidia.dali import fn, pipeline_def, types")
    namespace: dict[str, Any] = {"__name__": "asr_preprocessing",
                                 "__file__": str(ROOT / "examples" / "asr_preprocessing.py")}
    exec(compile(source, "asr_preprocessing.py", "exec"), namespace)
    return namespace


def pipeline_runner(backend: str, files: list[str], batch: int, threads: int, ref_root: str | None = None) -> Any:
    if backend == "dali":
        try:
            import nvidia.dali  # noqa: F401
        except ImportError as exc:
            raise Skip(f"nvidia.dali does not import in {sys.executable} ({exc})") from None
    else:
        sys.path.insert(0, ref_root or str(ROOT))
    example = load_example(backend)
    pipe = example["rnnt_pipeline"](files, list(range(len(files))), batch, num_threads=threads)
    pipe.build()
    batches = math.ceil(len(files) / batch)

    def epoch() -> int:
        for _ in range(batches):
            pipe.run()
        return batches * batch

    return epoch


def numpy_runner(files: list[str], batch: int, threads: int) -> Any:
    """The same chain, hand-written with soundfile, soxr, numpy and librosa's mel matrix, on a thread pool."""
    try:
        import librosa
        import numpy as np
        import soundfile
        import soxr
    except ImportError as exc:
        raise Skip(f"the numpy baseline needs soundfile, soxr and librosa ({exc})") from None
    from concurrent.futures import ThreadPoolExecutor

    mel = librosa.filters.mel(sr=SAMPLE_RATE, n_fft=512, n_mels=80).astype(np.float32)
    t = np.arange(320)
    window = (0.5 * (1 - np.cos(2 * np.pi * (t + 0.5) / 320))).astype(np.float32)
    rng = np.random.default_rng(0)

    def one(path: str, speed: float) -> Any:
        x, rate = soundfile.read(path, dtype="float32")
        x = soxr.resample(x, rate, SAMPLE_RATE * speed)
        sums = np.concatenate([[0.0], np.cumsum(x.astype(np.float64) ** 2)])
        power = (sums[2048:] - sums[:-2048]) / 2048
        loud = np.flatnonzero(power >= power.max() * 1e-6)
        x = x[loud[0] : loud[-1] + 2048] if loud.size else x
        x = np.append(x[0] * 0.03, x[1:] - 0.97 * x[:-1]).astype(np.float32)
        padded = np.pad(x, 160, mode="reflect")
        count = len(x) // 160 + 1
        frames = np.lib.stride_tricks.sliding_window_view(padded, 320)[::160][:count] * window
        spec = np.abs(np.fft.rfft(frames, 512, axis=1)) ** 2
        log = np.log(np.maximum(mel @ spec.T.astype(np.float32), 1e-20))
        return (log - log.mean(axis=1, keepdims=True)) / (log.std(axis=1, keepdims=True) + 1e-5)

    pool = ThreadPoolExecutor(threads)

    def epoch() -> int:
        for start in range(0, len(files), batch):
            part = files[start : start + batch]
            feats = list(pool.map(one, part, rng.uniform(0.85, 1.15, len(part))))
            longest = max(f.shape[1] for f in feats)
            np.stack([np.pad(f, ((0, 0), (0, longest - f.shape[1]))) for f in feats])
        return len(files)

    return epoch


def run_system(name: str, files: list[str], batch: int, threads: int, repeats: int,
               ref_root: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"system": name, "python": sys.executable}
    if name == "streamflow-ref":
        result["ref_root"] = ref_root
    start = time.perf_counter()
    try:
        if name == "numpy":
            epoch = numpy_runner(files, batch, threads)
        elif name == "streamflow-ref":
            epoch = pipeline_runner("streamflow", files, batch, threads, ref_root)
        else:
            epoch = pipeline_runner(name, files, batch, threads)
    except Skip as exc:
        return {**result, "status": "skipped", "reason": str(exc)}
    except Exception as exc:
        return {**result, "status": "failed", "reason": repr(exc), "traceback": traceback.format_exc()}
    result["build_s"] = time.perf_counter() - start
    if name.startswith("streamflow"):
        result["streamflow_path"] = str(Path(sys.modules["streamflow"].__file__ or "").parent)
    cpu_seconds: list[float] = []

    def timed_epoch() -> int:
        # the process's CPU time (all its threads, user + system) per epoch: the cost of a clip
        # whatever share of the shared machine the process got
        before = os.times()
        items = epoch()
        after = os.times()
        cpu_seconds.append((after.user - before.user) + (after.system - before.system))
        return items

    try:
        timing = _common.time_repeats(timed_epoch, repeats, warmup=1)
    except Exception as exc:
        return {**result, "status": "failed", "reason": repr(exc), "traceback": traceback.format_exc()}
    timed_cpu = cpu_seconds[1:]
    result["cpu_seconds"] = timed_cpu
    result["cpu_ms_per_clip"] = 1e3 * statistics.median(c / n for c, n in zip(timed_cpu, timing.items))
    return {**result, "status": "ok", "timing": timing.summary(),
            "packages": _common.package_versions(("streamflow", "numpy", "nvidia-dali-cuda130", "soundfile", "soxr",
                                                  "librosa"))}


def run_isolated(name: str, python: str, args: argparse.Namespace, files_json: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sf-audio-bench-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [python, str(Path(__file__).resolve()), "--worker", name, "--worker-out", str(out),
               "--files", str(files_json), "--batch-size", str(args.batch_size), "--threads", str(args.threads),
               "--repeats", str(args.repeats)]
        root = str(ROOT)
        if name == "streamflow-ref":
            if not args.ref_root:
                return {"system": name, "status": "skipped", "reason": "give --ref-root DIR"}
            root = str(Path(args.ref_root).resolve())
            cmd += ["--ref-root", root]
        proc = subprocess.run(cmd, check=False, env={**os.environ, "PYTHONPATH": root})
        if out.is_file():
            return json.loads(out.read_text())  # type: ignore[no-any-return]
    return {"system": name, "status": "failed", "reason": f"worker exited with code {proc.returncode}"}


def summarize(results: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    """Per system: each round's median rate and their median; streamflow's ratio to each other system per round."""
    rates: dict[str, dict[int, float]] = {}
    for r in results:
        if r["status"] == "ok":
            rates.setdefault(r["system"], {})[r["round"]] = r["timing"]["rate_median"]
    cpu: dict[str, list[float]] = {}
    for r in results:
        if r["status"] == "ok":
            cpu.setdefault(r["system"], []).append(r["cpu_ms_per_clip"])
    out: dict[str, Any] = {"systems": {}, "ratios": {}}
    for name in systems:
        if name in rates:
            values = [rates[name][k] for k in sorted(rates[name])]
            out["systems"][name] = {"rates": values, "rate_median": statistics.median(values),
                                    "cpu_ms_per_clip": cpu[name], "cpu_ms_per_clip_median": statistics.median(cpu[name])}
    for other in systems:
        if other == "streamflow" or other not in rates or "streamflow" not in rates:
            continue
        rounds = sorted(set(rates["streamflow"]) & set(rates[other]))
        if rounds:
            per_round = [rates["streamflow"][k] / rates[other][k] for k in rounds]
            out["ratios"][other] = {"per_round": per_round, "median": statistics.median(per_round)}
    return out


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clips", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help=f"comma-separated, from {', '.join(SYSTEMS)} and streamflow-ref (needs --ref-root)")
    p.add_argument("--rounds", type=int, default=1, help="repeat the comparison, rotating the systems' order")
    p.add_argument("--ref-root", default=None, help="checkout whose streamflow package the streamflow-ref row runs")
    p.add_argument("--dali-python", default=sys.executable, help="interpreter with nvidia-dali for the dali row")
    p.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "streamflow-audio-bench"))
    p.add_argument("--json", default=None, help="result file (default: benchmarks/results/audio_pipeline-<tag>.json)")
    p.add_argument("--quick", action="store_true", help="48 clips, batch 16, 1 repeat (smoke run)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    p.add_argument("--files", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.clips, args.batch_size, args.repeats = 48, 16, 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        meta = json.loads(Path(args.files).read_text())
        result = run_system(args.worker, meta["files"], args.batch_size, args.threads, args.repeats, args.ref_root)
        _common.write_json(Path(args.worker_out), result)
        return 0
    info = _common.machine_info(("streamflow", "numpy", "soundfile", "soxr", "librosa", "nvidia-dali-cuda130"))
    _common.print_machine(info)
    files, seconds = build_clips(Path(args.data), args.clips)
    files_json = Path(args.data) / f"files-{args.clips}.json"
    files_json.write_text(json.dumps({"files": files}))
    print(f"data    : {len(files)} clips, {seconds:.0f} s of 16 kHz speech; batch {args.batch_size}, "
          f"{args.threads} threads, {args.repeats} repeats after 1 warm-up epoch\n")
    systems = args.systems.split(",")
    results = []
    for round_index in range(max(1, args.rounds)):
        order = systems[round_index % len(systems):] + systems[: round_index % len(systems)]
        if args.rounds > 1:
            print(f"round {round_index + 1}: {', '.join(order)}")
        for name in order:
            python = args.dali_python if name == "dali" else sys.executable
            result = run_isolated(name, python, args, files_json)
            result["round"] = round_index + 1
            results.append(result)
            if result["status"] == "ok":
                t = result["timing"]
                rate = t["rate_median"]
                print(f"{name:15s} {rate:8.1f} clips/s  {rate * seconds / len(files):8.0f} s audio/s  "
                      f"{result['cpu_ms_per_clip']:5.2f} ms CPU/clip  "
                      f"(best {t['rate_best']:.1f} clips/s; epochs {', '.join(f'{s:.2f}' for s in t['seconds'])} s)")
            else:
                print(f"{name:15s} {result['status']}: {result.get('reason')}")
    summary = summarize(results, systems)
    print()
    for name, row in summary["systems"].items():
        print(f"{name:15s} median of the rounds' medians {row['rate_median']:8.1f} clips/s "
              f"(rounds: {', '.join(f'{r:.1f}' for r in row['rates'])}); "
              f"CPU {row['cpu_ms_per_clip_median']:.2f} ms/clip")
    for other, row in summary["ratios"].items():
        print(f"streamflow / {other}: {row['median']:.2f}x (per round: {', '.join(f'{r:.2f}' for r in row['per_round'])})")
    payload = {"benchmark": "audio_pipeline", "machine": info, "config": {k: v for k, v in vars(args).items()
                                                                            if not k.startswith("worker")},
               "clips": len(files), "audio_seconds": seconds, "results": results, "summary": summary}
    out = Path(args.json) if args.json else _common.RESULTS_DIR / f"audio_pipeline-{_common.machine_tag()}.json"
    _common.write_json(out, payload)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
