"""Generate docs/performance.md (and its plots) from the result files in benchmarks/results/.

    python benchmarks/report.py                  # -> docs/performance.md, docs/img/scaling_*.png
    python benchmarks/report.py --check          # exit 1 if docs/performance.md is out of date

One table per benchmark (CPU pipeline, GPU pipeline, numpy ROI, serving),
each with the machine, command and date of its result file; the scaling plots
from ``plot_scaling.py`` results; and a section that says where streamflow is
behind, computed from the same numbers. A benchmark without a result file is
listed as "not measured yet". Only the standard library is needed, except
for drawing the plots (matplotlib; without it existing PNGs are kept).
Several result files of one benchmark (several machines) each get a table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common

DOC = _common.REPO_ROOT / "docs" / "performance.md"
IMG_DIR = _common.REPO_ROOT / "docs" / "img"

# (benchmark key in the JSON, title, script, how to run it)
SECTIONS: list[tuple[str, str, str]] = [
    ("cpu_pipeline", "CPU image pipeline", "benchmarks/cpu_pipeline.py"),
    ("gpu_pipeline", "GPU image pipeline", "benchmarks/gpu_pipeline.py"),
    ("numpy_roi", "numpy region-of-interest reads", "benchmarks/numpy_roi.py"),
    ("dynamic_overhead", "Dynamic mode: the cost of one call", "benchmarks/dynamic_overhead.py"),
    ("serve_bench", "Inference serving (dynamic batching)", "benchmarks/serve_bench.py"),
    ("python_step", "A Python step in the pipeline (python_function)", "benchmarks/python_step.py"),
]


def load_results(results_dir: Path) -> dict[str, list[tuple[Path, dict[str, Any]]]]:
    """Result files by their ``benchmark`` key (file name prefix when the key is missing)."""
    found: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for path in sorted(results_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            print(f"skipping {path}: {exc}", file=sys.stderr)
            continue
        key = data.get("benchmark") or path.stem.split("-")[0]
        found.setdefault(key, []).append((path, data))
    return found


# --------------------------------------------------------------------------- formatting


def md_table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(x: Any) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def fmt(x: Any, digits: int = 0) -> str:
    if x is None:
        return "-"
    if isinstance(x, (int, float)):
        return f"{x:,.{digits}f}"
    return str(x)


def command_of(data: dict[str, Any]) -> str:
    cmd = data.get("command")
    if not cmd:
        return "not recorded in the result file"
    return " ".join(cmd) if isinstance(cmd, list) else str(cmd)


def provenance(path: Path, data: dict[str, Any]) -> str:
    m = data.get("machine", {})
    pk = m.get("packages", {}) or {}
    pkgs = ", ".join(f"{k} {v}" for k, v in pk.items() if v) or "-"
    gpu = data.get("gpu") or m.get("gpu")
    gpu_txt = ""
    if isinstance(gpu, dict):
        gpu_txt = f"; GPU: {gpu.get('name') or ('not used: ' + str(gpu.get('skipped')) if gpu.get('skipped') else 'none')}"
    return "\n".join([
        f"- **file**: `{path.relative_to(_common.REPO_ROOT) if path.is_relative_to(_common.REPO_ROOT) else path}`",
        f"- **machine**: {m.get('hostname', '?')} (tag {m.get('tag', '?')}): {m.get('cpu_model', '?')}, "
        f"{m.get('usable_cores', '?')} usable of {m.get('cpu_count', '?')} cores, {m.get('memory_gib', '?')} GiB, "
        f"{m.get('platform', '?')}, Python {m.get('python', '?')}{gpu_txt}"
        + (f"; load average at start {m['load_average'][0]:.1f} (other work on the machine)"
           if m.get("load_average") else ""),
        f"- **packages**: {pkgs}; git {m.get('git') or 'not recorded'}",
        f"- **command**: `{command_of(data)}`",
        f"- **date**: {data.get('date') or data.get('when') or 'not recorded'}",
    ])


# --------------------------------------------------------------------------- per benchmark


def pipeline_table(data: dict[str, Any], unit: str = "img/s") -> tuple[str, list[str]]:
    """cpu_pipeline-style results: one row per system; returns (markdown, 'behind' notes)."""
    results = data.get("results", [])
    ok = {r["system"]: r for r in results if r.get("status") == "ok"}
    rows, notes, behind = [], [], []
    for r in results:
        label = r.get("label", r.get("system"))
        if r.get("status") != "ok":
            rows.append([label, r.get("status", "?"), "-", "-", "-", "-"])
            notes.append(f"- {label}: {r.get('status')}: {r.get('reason')}")
            continue
        t = r["timing"]

        def ratio(ref: str) -> str:
            return f"{t['rate_median'] / ok[ref]['timing']['rate_median']:.2f}x" if ref in ok else "-"

        start = (r.get("build_s") or 0) + (r.get("first_epoch_s") or 0)
        rows.append([label, fmt(t["rate_median"]), fmt(t["rate_best"]), ratio("dali"), ratio("torch"), fmt(start, 2)])
    text = md_table([ "system", f"{unit} median", f"{unit} best", "vs DALI", "vs DataLoader", "build + 1st epoch [s]"], rows)
    cfg = data.get("config", {})
    if cfg:
        text = (f"Config: {', '.join(f'{k} {v}' for k, v in cfg.items() if k != 'data_dir')}.\n\n") + text
    if notes:
        text += "\n\n" + "\n".join(notes)
    sf = results and next((r for r in results if r.get("system") == "streamflow"), None)
    if sf and sf.get("status") != "ok":
        behind.append(f"streamflow has no number in `{data.get('benchmark')}` ({data.get('date', '?')[:10]}): "
                      f"it was {sf.get('status')} ({sf.get('reason')}). Re-run the benchmark.")
    elif sf:
        for ref, name in (("dali", "DALI (CPU)"), ("torch", "the PyTorch DataLoader")):
            if ref in ok:
                x = sf["timing"]["rate_median"] / ok[ref]["timing"]["rate_median"]
                if x < 1.0:
                    behind.append(f"`{data.get('benchmark')}`: streamflow reaches {x:.2f}x the throughput of {name} "
                                  f"({fmt(sf['timing']['rate_median'])} vs {fmt(ok[ref]['timing']['rate_median'])} {unit}).")
    return text, behind


def numpy_roi_table(data: dict[str, Any]) -> tuple[str, list[str]]:
    results = data.get("results", [])
    cases: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    methods: list[str] = []
    for r in results:
        key = (r.get("shape"), r.get("fraction"), r.get("cache"))
        cases.setdefault(key, {})[r["method"]] = r
        if r["method"] not in methods:
            methods.append(r["method"])
    rows, behind = [], []
    for (shape, fraction, cache), by in cases.items():
        row = [shape, f"{100 * fraction:g} %" if isinstance(fraction, (int, float)) else fraction, cache]
        for m in methods:
            r = by.get(m)
            row.append("-" if r is None else f"{r['gbps_median']:.2f} ({r.get('amplification', 0):.2f}x)")
        rows.append(row)
        base = by.get("np.load(mmap)")
        sfs = [by[m] for m in methods if m.startswith("streamflow") and m in by]
        if base and sfs:
            best = max(sfs, key=lambda r: r["gbps_median"])
            if best["gbps_median"] < base["gbps_median"]:
                behind.append(f"`numpy_roi` {shape} {fraction:g} {cache} cache: the best streamflow read "
                              f"({best['method']}, {best['gbps_median']:.2f} GB/s) is "
                              f"{best['gbps_median'] / base['gbps_median']:.2f}x np.load(mmap) "
                              f"({base['gbps_median']:.2f} GB/s).")
    text = ("GB/s of the region read, median over the repeats, and in brackets the read amplification "
            "(bytes read / bytes wanted).\n\n")
    cfg = data.get("config", {})
    if cfg:
        text += f"Config: {', '.join(f'{k} {v}' for k, v in cfg.items())}.\n\n"
    text += md_table(["region", "of the array", "cache", *methods], rows)
    gpu = data.get("gpu") or {}
    if not gpu.get("ran"):
        text += f"\n\nGPU path (kvikio/GDS): not measured ({gpu.get('skipped', 'no GPU')})."
    return text, behind


def serve_table(data: dict[str, Any]) -> tuple[str, list[str]]:
    rows, behind = [], []
    for m in data.get("modes", []):
        if m.get("status") != "ok":
            rows.append([m.get("mode"), m.get("max_batch_size"), m.get("status"), "-", "-", "-", "-", "-"])
            continue
        for lv in m["levels"]:
            lat = lv["latency_ms"]
            rows.append([m["mode"], m.get("max_batch_size"), lv["concurrency"], fmt(lv["req_per_s"], 1),
                         fmt(lat["p50"], 1), fmt(lat["p95"], 1), fmt(lat["p99"], 1),
                         fmt(lv.get("batch_size_mean"), 1), lv["requests"] - lv["ok"]])
    speed = data.get("speedup_vs_baseline", {})
    text = md_table(["mode", "max batch", "clients", "req/s", "p50 [ms]", "p95 [ms]", "p99 [ms]",
                     "mean batch", "errors"], rows)
    if speed:
        text += "\n\nBatched / per-request throughput: " + ", ".join(
            f"{c} clients {x:.2f}x" for c, x in speed.items()) + "."
        for c, x in speed.items():
            if x < 1.0:
                behind.append(f"`serve_bench` with {c} client(s): dynamic batching gives {x:.2f}x the throughput "
                              "of one request at a time (likely cause: with one client a batch never fills, "
                              "so each request waits out `max_delay_ms`).")
    return text, behind


def dynamic_table(data: dict[str, Any]) -> tuple[str, list[str]]:
    """Per system: loop median per call, and the 10th percentile of single calls (load-proof) vs the kernel."""
    results = data.get("results", {})
    kernel = (results.get("kernel") or {}).get("p10_single_us")
    rows = []
    for name, r in results.items():
        if "skipped" in r:
            rows.append([name, "skipped", "-", "-"])
            continue
        p10 = r.get("p10_single_us")
        over = f"{p10 - kernel:+.1f}" if p10 is not None and kernel is not None else "-"
        rows.append([name, fmt(r.get("median_us"), 1), fmt(p10, 1), over])
    cfg = data.get("config", {})
    text = md_table(["system", "median [µs/call]", "p10 single call [µs]", "p10 vs kernel [µs]"], rows)
    text += (f"\n\nResize {cfg.get('size')}x{cfg.get('size')}x3 uint8 to {cfg.get('out_size')}; "
             "`dynamic batch` is per image of a batch of "
             f"{cfg.get('batch')}. Loop medians include time other jobs hold the cores; the 10th percentile "
             "of single calls is an uninterrupted call.")
    return text, []


def scaling_section(found: list[tuple[Path, dict[str, Any]]], draw: bool) -> tuple[str, list[str]]:
    if not found:
        return ("Not measured yet: run `python benchmarks/plot_scaling.py` (writes "
                "`benchmarks/results/scaling-<tag>.json` and the plots).", [])
    parts, behind = [], []
    for i, (path, data) in enumerate(found):
        suffix = "" if i == 0 else f"-{data.get('machine', {}).get('tag', i)}"
        pngs = [IMG_DIR / f"scaling_batch_size{suffix}.png", IMG_DIR / f"scaling_threads{suffix}.png"]
        if draw:
            try:
                import plot_scaling

                pngs = plot_scaling.plot(data, IMG_DIR, suffix)
            except ImportError:
                print("matplotlib missing: keeping the existing plots", file=sys.stderr)
        parts.append(provenance(path, data))
        cfg = data.get("config", {})
        parts.append(f"\nSweep: {', '.join(f'{k} {v}' for k, v in cfg.items())}.\n")
        for png in pngs:
            if png.exists():
                parts.append(f"![{png.stem}](img/{png.name})\n")
            else:
                parts.append(f"(plot `{png.name}` not drawn yet: needs matplotlib)\n")
        points = data.get("points", [])
        seen, rows = set(), []
        for p in points:
            key = (p["system"], p["batch_size"], p["threads"])
            if key in seen:
                continue
            seen.add(key)
            rows.append([p["label"], p["batch_size"], p["threads"],
                         fmt(p["rate_median"]) if p["status"] == "ok" else p["status"]])
        parts.append(md_table(["system", "batch size", "num_threads", "img/s median"], rows))
        by_point: dict[tuple[int, int], dict[str, float]] = {}
        for p in points:
            if p["status"] == "ok":
                by_point.setdefault((p["batch_size"], p["threads"]), {})[p["system"]] = p["rate_median"]
        for (b, t), rates in sorted(by_point.items()):
            others = {k: v for k, v in rates.items() if k != "streamflow"}
            if "streamflow" in rates and others:
                best = max(others, key=others.get)  # type: ignore[arg-type]
                if rates["streamflow"] < others[best]:
                    behind.append(f"scaling, batch {b}, {t} threads: streamflow {fmt(rates['streamflow'])} img/s "
                                  f"vs {best} {fmt(others[best])} img/s "
                                  f"({rates['streamflow'] / others[best]:.2f}x).")
        if data.get("config", {}).get("images", 512) < 512 or data.get("config", {}).get("repeats", 3) < 3:
            parts.append("\n**A small sweep** (few images or one repeat): its numbers are noisy; the full "
                         "sweep is `python benchmarks/plot_scaling.py`.")
    return "\n".join(parts), behind


# --------------------------------------------------------------------------- the page


def python_step_table(data: dict[str, Any]) -> tuple[str, list[str]]:
    rows, behind = [], []
    threads = (data.get("config") or {}).get("threads", 1)
    for r in data.get("results", []):
        if "with_step" not in r:
            rows.append([r.get("system"), "-", "-", "-", "-"])
            continue
        plain, stepped = r["without_step"]["rate_median"], r["with_step"]["rate_median"]
        cost = 1000 * threads * (1 / stepped - 1 / plain)
        rows.append([r["system"], fmt(plain), fmt(stepped), f"{stepped / plain:.2f}", fmt(cost, 2)])
    text = md_table(["system", "img/s without the step", "img/s with the step", "throughput kept",
                     "step cost [ms of core time per image]"], rows)
    ratio = (data.get("summary") or {}).get("with_step_vs_dali")
    if ratio:
        text += f"\n\nWith the Python step, streamflow delivers {ratio:.2f}x DALI's throughput."
        if ratio < 1.0:
            behind.append(f"`python_step`: with a Python step streamflow gives {ratio:.2f}x DALI's throughput.")
    return text, behind


def render(results_dir: Path, draw: bool = True) -> str:
    found = load_results(results_dir)
    out = [
        "# Performance",
        "",
        "<!-- Generated by `python benchmarks/report.py` from benchmarks/results/*.json; do not edit by hand. -->",
        "",
        "Every number below comes from a committed result file in `benchmarks/results/`; each table says "
        "which machine, command and date produced it. Regenerate the page with `python benchmarks/report.py`. "
        "How each benchmark measures is in `benchmarks/README.md`; to find the slow stage of your own "
        "pipeline use `streamflow profile` (end of this page).",
        "",
    ]
    behind: list[str] = []
    for key, title, script in SECTIONS:
        out += [f"## {title}", ""]
        files = found.get(key, [])
        if not files:
            out += [f"Not measured yet: no `benchmarks/results/{key}-*.json`. Run `python {script}`.", ""]
            continue
        for path, data in files:
            out += [provenance(path, data), ""]
            if key == "numpy_roi":
                text, b = numpy_roi_table(data)
            elif key == "dynamic_overhead":
                text, b = dynamic_table(data)
            elif key == "serve_bench":
                text, b = serve_table(data)
            elif key == "python_step":
                text, b = python_step_table(data)
            else:
                text, b = pipeline_table(data)
            out += [text, ""]
            behind += b
    out += ["## Scaling: batch size and num_threads", ""]
    text, b = scaling_section(found.get("scaling", []), draw)
    out += [text, ""]
    behind += b
    out += ["## Where streamflow is behind", ""]
    if behind:
        out += [f"- {line}" for line in behind]
    else:
        out += ["Nowhere in the measured results."]
    missing = [title for key, title, _ in SECTIONS if key not in found]
    if missing:
        out += ["", f"Not measured yet, so no claim either way: {', '.join(missing)}."]
    out += [
        "",
        "## Finding the slow stage of a pipeline",
        "",
        "```sh",
        "streamflow profile my_pipeline.py --batches 100 --trace trace.json",
        "```",
        "",
        "runs the pipeline that `my_pipeline.py` defines (a module-level function `pipeline()` returning "
        "a `Pipeline`, or `--pipeline-name NAME`) and prints per stage the share of time busy, waiting for "
        "input and waiting for output space, the queue occupancy, per operator the time per batch, and the "
        "bottleneck; `trace.json` opens in `chrome://tracing` or ui.perfetto.dev. From Python: "
        "`streamflow.profile.profile(pipe, batches=100, consumer=train_step)`. What the numbers mean: "
        "`streamflow/runtime/stats.py`.",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=_common.RESULTS_DIR)
    ap.add_argument("--out", type=Path, default=DOC)
    ap.add_argument("--no-plots", action="store_true", help="do not redraw the PNGs")
    ap.add_argument("--check", action="store_true", help="exit 1 if --out differs from what would be written")
    args = ap.parse_args(argv)
    text = render(args.results, draw=not (args.no_plots or args.check))
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is out of date: run python benchmarks/report.py")
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
