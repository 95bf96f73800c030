"""Throughput against batch size and against num_threads: streamflow vs its baselines.

Runs the CPU pipeline of ``cpu_pipeline.py`` (read -> decode -> resize 256
-> crop 224 + mirror -> normalize, CHW float32) for every system at each
point of two sweeps, each system in its own subprocess (``run_isolated``), and
writes one JSON file plus two PNG plots:

* batch size sweep at ``--threads`` (default 2): ``--batch-sizes`` 16,32,64,128;
* thread sweep at ``--batch-size`` (default 64): ``--thread-counts`` 1,2,4.

    python benchmarks/plot_scaling.py                          # full sweep -> results/scaling-<tag>.json + docs/img
    python benchmarks/plot_scaling.py --images 128 --repeats 1 --batch-sizes 16,32 --thread-counts 1,2   # tiny
    python benchmarks/plot_scaling.py --plot-only benchmarks/results/scaling-vm.json

The plots need matplotlib (``pip install matplotlib``); the sweep does not.
A point where a system is skipped or fails is left out of its line, and the
JSON says why. On a machine with few cores, more threads than cores cannot
help; the plot marks the usable core count.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _dataset
import cpu_pipeline

IMG_DIR = _common.REPO_ROOT / "docs" / "img"
STYLE = {  # system -> (colour, marker)
    "streamflow": ("tab:blue", "o"),
    "torch": ("tab:orange", "s"),
    "dali": ("tab:green", "^"),
}


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def sweep(args: argparse.Namespace) -> dict[str, Any]:
    """Run both sweeps; returns the JSON payload."""
    info = _common.machine_info()
    _common.print_machine(info)
    data_dir = args.data_dir or str(_dataset.default_out_dir(args.images))
    files = _dataset.build_jpeg_set(data_dir, n=args.images)
    print(f"data    : {len(files)} JPEGs in {data_dir}\n")
    points: list[dict[str, Any]] = []
    plan = [("batch_size", b, args.threads) for b in args.batch_sizes]
    plan += [("threads", args.batch_size, t) for t in args.thread_counts]
    done: dict[tuple[str, int, int], dict[str, Any]] = {}
    for sweep_name, batch, threads in plan:
        cfg = cpu_pipeline.BenchConfig(images=args.images, batch_size=batch, threads=threads,
                                       repeats=args.repeats, warmup_epochs=1, data_dir=data_dir)
        for system in args.systems:
            key = (system, batch, threads)
            if key not in done:  # the two sweeps share their middle point
                print(f"--- {sweep_name}: {cpu_pipeline.LABELS[system]}, batch {batch}, {threads} threads", flush=True)
                done[key] = cpu_pipeline.run_isolated(system, cfg)
                r = done[key]
                if r["status"] == "ok":
                    print(f"    {r['timing']['rate_median']:.0f} img/s median", flush=True)
                else:
                    print(f"    {r['status']}: {r.get('reason')}", flush=True)
            r = done[key]
            points.append({
                "sweep": sweep_name, "system": system, "label": cpu_pipeline.LABELS[system],
                "batch_size": batch, "threads": threads, "status": r["status"],
                "reason": r.get("reason"),
                "rate_median": r["timing"]["rate_median"] if r["status"] == "ok" else None,
                "rate_best": r["timing"]["rate_best"] if r["status"] == "ok" else None,
                "timing": r.get("timing"),
            })
    return {
        "benchmark": "scaling",
        "date": _common.now_iso(),
        "command": shlex.join([sys.executable, *sys.argv]),
        "config": {"images": args.images, "repeats": args.repeats, "batch_sizes": args.batch_sizes,
                   "threads_for_batch_sweep": args.threads, "thread_counts": args.thread_counts,
                   "batch_for_thread_sweep": args.batch_size, "systems": args.systems,
                   "pipeline": "read -> decode -> resize 256 -> crop 224 + mirror -> normalize (CPU)"},
        "dataset": {"dir": data_dir, "images": len(files)},
        "machine": info,
        "points": points,
    }


def plot(payload: dict[str, Any], out_dir: Path = IMG_DIR, suffix: str = "") -> list[Path]:
    """Draw ``scaling_batch_size<suffix>.png`` and ``scaling_threads<suffix>.png``; returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    machine = payload.get("machine", {})
    where = (f"{machine.get('cpu_model', '?')}, {machine.get('usable_cores', '?')} cores; "
             f"{payload.get('config', {}).get('images', '?')} images; {payload.get('date', '')[:10]}")
    written = []
    for sweep_name, xkey, xlabel, fixed in [
        ("batch_size", "batch_size", "batch size", f"num_threads = {payload['config'].get('threads_for_batch_sweep')}"),
        ("threads", "threads", "num_threads (DataLoader: num_workers)", f"batch size = {payload['config'].get('batch_for_thread_sweep')}"),
    ]:
        pts = [p for p in payload["points"] if p["sweep"] == sweep_name]
        fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
        for system in dict.fromkeys(p["system"] for p in pts):
            ok = sorted((p[xkey], p["rate_median"], p["rate_best"]) for p in pts
                        if p["system"] == system and p["status"] == "ok")
            colour, marker = STYLE.get(system, (None, "x"))
            label = next(p["label"] for p in pts if p["system"] == system)
            if not ok:
                ax.plot([], [], color=colour, marker=marker, label=f"{label} (not measured)")
                continue
            xs, med, best = zip(*ok)
            ax.plot(xs, med, color=colour, marker=marker, label=label)
            ax.scatter(xs, best, color=colour, marker=marker, alpha=0.35, s=14)
        if sweep_name == "threads" and machine.get("usable_cores"):
            ax.axvline(machine["usable_cores"], color="grey", linestyle=":", linewidth=1)
            ax.text(machine["usable_cores"], ax.get_ylim()[0], " cores", color="grey", va="bottom", fontsize=8)
        xs_all = sorted({p[xkey] for p in pts})
        if xs_all:
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs_all, [str(x) for x in xs_all])
        ax.set_xlabel(xlabel)
        ax.set_ylabel("images / s (median; faint: best)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"CPU pipeline throughput vs {xlabel.split(' (')[0]} ({fixed})", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.text(0.01, 0.01, where, fontsize=7, color="grey")
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        path = out_dir / f"scaling_{sweep_name}{suffix}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-sizes", type=_ints, default=[16, 32, 64, 128])
    ap.add_argument("--threads", type=int, default=2, help="num_threads of the batch-size sweep")
    ap.add_argument("--thread-counts", type=_ints, default=[1, 2, 4])
    ap.add_argument("--batch-size", type=int, default=64, help="batch size of the thread sweep")
    ap.add_argument("--systems", default=",".join(cpu_pipeline.SYSTEMS))
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--json", type=Path, default=None, help="result file (results/scaling-<tag>.json)")
    ap.add_argument("--img-dir", type=Path, default=IMG_DIR, help="where the PNGs go (docs/img)")
    ap.add_argument("--no-plot", action="store_true", help="sweep only")
    ap.add_argument("--plot-only", type=Path, default=None, metavar="JSON", help="plot an existing result file")
    args = ap.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if args.plot_only:
        payload = json.loads(args.plot_only.read_text())
    else:
        payload = sweep(args)
        path = args.json or _common.RESULTS_DIR / f"scaling-{_common.machine_tag()}.json"
        _common.write_json(path, payload)
        print(f"\nwrote {path}")
    if not args.no_plot:
        try:
            for p in plot(payload, args.img_dir):
                print(f"wrote {p}")
        except ImportError:
            print("matplotlib is not installed: no plots (pip install matplotlib)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
