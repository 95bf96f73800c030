"""Generate docs/performance.md (and its plots) from the result files in benchmarks/results/.

    python benchmarks/report.py                  # -> docs/performance.md, docs/img/scaling_*.png
    python benchmarks/report.py --check          # exit 1 if docs/performance.md is out of date

Every benchmark in ``BENCHMARKS`` gets a section; each of its result files
(``benchmarks/results/<benchmark>-<tag>.json``, the key is the file's
``benchmark`` field) gets a table with its provenance: file, machine, load
average, packages, command, date. A benchmark without a result file gets a
"not measured yet" line with the command that measures it. Every comparison
in which streamflow is slower than the baseline of its table is listed under
"Where streamflow is behind", computed from the same numbers.

Before/after checks of one change (``"runs"`` of two versions, not headline
numbers) live in ``benchmarks/results/comparisons/`` and get a short section
of their own. A result file whose benchmark has no renderer here is listed
under "Result files without a renderer" (and a unit test fails) rather than
dropped.

Only the standard library is needed, except for drawing the plots
(matplotlib; without it existing PNGs are kept).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common

DOC = _common.REPO_ROOT / "docs" / "performance.md"
IMG_DIR = _common.REPO_ROOT / "docs" / "img"
COMPARISONS = "comparisons"

Json = dict[str, Any]


@dataclass
class Part:
    """What a renderer makes of one result file."""

    text: str
    behind: list[str] = field(default_factory=list)  # comparisons streamflow loses, one sentence each
    headline: str = ""  # one line for the summary table ("" = none)


@dataclass(frozen=True)
class Benchmark:
    key: str  # the result files' ``benchmark`` field
    title: str
    command: str  # how to measure it (README and "not measured yet")
    render: Callable[[Json, str], Part]  # (data, file stem) -> Part


# --------------------------------------------------------------------------- loading


def load_json(path: Path) -> Json | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        print(f"skipping {path}: {exc}", file=sys.stderr)
        return None
    return data if isinstance(data, dict) else None


def is_comparison(data: Json) -> bool:
    """A before/after record: runs of several versions, no headline ``results``."""
    return "runs" in data and "results" not in data


def load_results(results_dir: Path) -> tuple[dict[str, list[tuple[Path, Json]]], list[tuple[Path, Json]]]:
    """Headline result files by their ``benchmark`` key, and the before/after comparison files.

    The key is the file name's prefix where the ``benchmark`` field is missing.
    A comparison file outside ``comparisons/`` still goes to the comparisons
    (with a warning), so it cannot empty a headline table.
    """
    found: dict[str, list[tuple[Path, Json]]] = {}
    comparisons: list[tuple[Path, Json]] = []
    for path in sorted(results_dir.glob("*.json")):
        data = load_json(path)
        if data is None:
            continue
        if is_comparison(data):
            print(f"{path.name} is a before/after comparison: move it to {results_dir / COMPARISONS}/",
                  file=sys.stderr)
            comparisons.append((path, data))
            continue
        key = data.get("benchmark") or path.stem.split("-")[0]
        found.setdefault(key, []).append((path, data))
    for path in sorted((results_dir / COMPARISONS).glob("*.json")):
        data = load_json(path)
        if data is not None:
            comparisons.append((path, data))
    return found, comparisons


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


def rate(x: float | None) -> str:
    """A throughput with as many digits as its size deserves."""
    if x is None:
        return "-"
    return fmt(x, 0 if x >= 100 else 1 if x >= 10 else 2)


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def config_line(cfg: Json, skip: Iterable[str] = ()) -> str:
    """``Config: k v, ...`` without paths of the machine that ran it."""
    items = [f"{k} {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in cfg.items()
             if k not in set(skip) and v not in (None, "") and not (isinstance(v, str) and v.startswith("/"))]
    return f"Config: {', '.join(items)}." if items else ""


def rel(path: Path) -> str:
    return str(path.relative_to(_common.REPO_ROOT)) if path.is_relative_to(_common.REPO_ROOT) else str(path)


def command_of(data: Json) -> str:
    cmd = data.get("command")
    if not cmd:
        return "not recorded in the result file"
    return " ".join(cmd) if isinstance(cmd, list) else str(cmd)


def date_of(data: Json) -> str:
    return str(data.get("date") or data.get("when") or data.get("time") or "not recorded in the result file")


def system_records(data: Json) -> list[tuple[str, Json]]:
    """(system, record) of every per-system record that carries its own process's machine or packages."""
    results = data.get("results")
    if not isinstance(results, list):
        return []
    return [(str(r.get("system", "?")), r) for r in results if isinstance(r, dict)]


def packages_of(data: Json) -> str:
    """Versions of the parent process and of every system's own process (DALI often runs in another venv)."""
    seen: dict[str, str] = {}
    sources = [(data.get("machine") or {}).get("packages") or {}]
    for _, r in system_records(data):
        sources.append(((r.get("machine") or {}).get("packages")) or r.get("packages") or {})
    for pk in sources:
        for k, v in pk.items():
            if v and k not in seen:
                seen[k] = str(v)
    return ", ".join(f"{k} {v}" for k, v in seen.items()) or "-"


def load_text(data: Json) -> str:
    m = data.get("machine") or {}
    la = m.get("load_average")
    cores = m.get("usable_cores")
    if la:
        text = f"{la[0]:.1f} (1, 5, 15 min: {', '.join(f'{x:.1f}' for x in la)})"
        if isinstance(cores, int) and la[0] >= cores:
            text += f"; more runnable work than the {cores} usable cores: other jobs shared the machine"
    else:
        text = "not recorded in the result file"
    per = [f"{s} {(r.get('machine') or {})['load_average'][0]:.1f}" for s, r in system_records(data)
           if (r.get("machine") or {}).get("load_average")]
    if per:
        text += f"; at each system's start: {', '.join(per)}"
    return text


def gpu_text(data: Json) -> str:
    gpu = data.get("gpu") or (data.get("machine") or {}).get("gpu")
    if not isinstance(gpu, dict):
        return ""
    if gpu.get("nvidia_smi") or gpu.get("name"):
        driver = f" (CUDA driver {gpu['cuda_driver']})" if gpu.get("cuda_driver") else ""
        return f"; GPU: {gpu.get('nvidia_smi') or gpu.get('name')}{driver}"
    if gpu.get("skipped"):
        return f"; GPU: not used: {gpu['skipped']}"
    return "; GPU: none"


def provenance(path: Path, data: Json) -> str:
    m = data.get("machine") or {}
    return "\n".join([
        f"- **file**: `{rel(path)}`",
        f"- **machine**: {m.get('hostname', '?')} (tag {m.get('tag', '?')}): {m.get('cpu_model', '?')}, "
        f"{m.get('usable_cores', '?')} usable of {m.get('cpu_count', '?')} cores, {m.get('memory_gib', '?')} GiB, "
        f"{m.get('platform', '?')}, Python {m.get('python', '?')}{gpu_text(data)}",
        f"- **load average at start**: {load_text(data)}",
        f"- **packages**: {packages_of(data)}; git {m.get('git') or 'not recorded'}",
        f"- **command**: `{command_of(data)}`",
        f"- **date**: {date_of(data)}",
    ])


def timing_of(r: Json) -> Json | None:
    """The ``Timing.summary()`` of a record: under ``timing`` or inline; None when it did not run."""
    t = r.get("timing") if isinstance(r.get("timing"), dict) else r
    return t if isinstance(t, dict) and t.get("rate_median") is not None else None


def slower(stem: str, what: str, sf: float, base: float, base_name: str, unit: str) -> str:
    where = f"`{stem}` {what}" if what else f"`{stem}`"
    return (f"{where}: streamflow reaches {sf / base:.2f}x the throughput of {base_name} "
            f"({rate(sf)} vs {rate(base)} {unit}).")


# --------------------------------------------------------------------------- CPU / GPU image pipelines


def pipeline_table(data: Json, stem: str, unit: str = "img/s") -> Part:
    """cpu_pipeline results: one row per system, ratios vs DALI and the DataLoader."""
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

        def vs(ref: str) -> str:
            return ratio(t["rate_median"], ok[ref]["timing"]["rate_median"]) if ref in ok else "-"

        start = (r.get("build_s") or 0) + (r.get("first_epoch_s") or 0)
        rows.append([label, fmt(t["rate_median"]), fmt(t["rate_best"]), vs("dali"), vs("torch"), fmt(start, 2)])
    text = md_table(["system", f"{unit} median", f"{unit} best", "vs DALI", "vs DataLoader",
                     "build + 1st epoch [s]"], rows)
    cfg = config_line(data.get("config", {}), skip=("data_dir",))
    if cfg:
        text = cfg + "\n\n" + text
    if notes:
        text += "\n\n" + "\n".join(notes)
    sf = next((r for r in results if r.get("system") == "streamflow"), None)
    headline = []
    if sf and sf.get("status") != "ok":
        behind.append(f"`{stem}`: streamflow has no number: it was {sf.get('status')} ({sf.get('reason')}). "
                      "Re-run the benchmark.")
    elif sf:
        for ref, name in (("dali", "DALI (CPU)"), ("torch", "the PyTorch DataLoader")):
            if ref in ok:
                x, y = sf["timing"]["rate_median"], ok[ref]["timing"]["rate_median"]
                headline.append(f"{x / y:.2f}x {name}")
                if x < y:
                    behind.append(slower(stem, "", x, y, name, unit))
    return Part(text, behind, ", ".join(headline))


GPU_BASELINES = (("dali", "DALI (GPU)"), ("torchvision", "torchvision"))


def gpu_table(data: Json, stem: str) -> Part:
    """gpu_pipeline results: {system: timing | {"skipped"} | {"error"}}; ratios vs DALI, torchvision, decode alone."""
    results: Json = data.get("results") or {}
    rates = {k: t["rate_median"] for k, v in results.items() if (t := timing_of(v))}
    rows, notes = [], []
    for name, r in results.items():
        t = timing_of(r)
        if t is None:
            why = r.get("skipped") or r.get("error") or "no timing"
            rows.append([name, "skipped" if "skipped" in r else "failed", "-", "-", "-", "-"])
            notes.append(f"- {name}: {why}")
            continue
        rows.append([name, rate(t["rate_median"]), rate(t["rate_best"]), ratio(t["rate_median"], rates.get("dali")),
                     ratio(t["rate_median"], rates.get("torchvision")),
                     ratio(t["rate_median"], rates.get("nvimgcodec-decode"))])
    text = "\n\n".join(x for x in [
        config_line(data.get("config", {}), skip=("out", "tag")),
        md_table(["system", "img/s median", "img/s best", "vs DALI", "vs torchvision", "vs decode alone"], rows),
        "`nvimgcodec-decode` decodes the batch and nothing else: the ceiling of a decode-bound pipeline.",
        "\n".join(notes)] if x)
    behind, headline = [], []
    sf = rates.get("streamflow")
    for ref, name in GPU_BASELINES:
        if sf and rates.get(ref):
            headline.append(f"{sf / rates[ref]:.2f}x {name}")
            if sf < rates[ref]:
                behind.append(slower(stem, "(GPU)", sf, rates[ref], name, "img/s"))
    if "streamflow" in results and not sf:
        behind.append(f"`{stem}`: streamflow has no number ({results['streamflow']}).")
    return Part(text, behind, ", ".join(headline))


# --------------------------------------------------------------------------- DALI-style pipelines


def _dali_pipeline_table(data: Json, stem: str, what: str, unit: str) -> Part:
    """detection_pipeline-style results: [{system, timing | skipped | error}], streamflow vs DALI."""
    results = [r for r in data.get("results", []) if isinstance(r, dict)]
    rates = {r["system"]: t["rate_median"] for r in results if (t := timing_of(r))}
    rows, notes = [], []
    for r in results:
        t = timing_of(r)
        if t is None:
            rows.append([r.get("system"), "skipped" if "skipped" in r else "failed", "-", "-", "-"])
            notes.append(f"- {r.get('system')}: {r.get('skipped') or r.get('error') or r.get('reason')}")
            continue
        rows.append([r["system"], rate(t["rate_median"]), rate(t["rate_best"]),
                     ratio(t["rate_median"], rates.get("dali")), fmt(t.get("warmup_seconds"), 1)])
    text = "\n\n".join(x for x in [
        config_line(data.get("config", {}), skip=("json", "quick", "data_dir", "annotations", "dali_python")),
        md_table(["system", f"{unit} median", f"{unit} best", "vs DALI", "warm-up epoch [s]"], rows),
        "\n".join(notes)] if x)
    sf, dali = rates.get("streamflow"), rates.get("dali")
    behind = [slower(stem, what, sf, dali, "DALI (CPU)", unit)] if sf and dali and sf < dali else []
    return Part(text, behind, f"{sf / dali:.2f}x DALI (CPU)" if sf and dali else "")


def detection_table(data: Json, stem: str) -> Part:
    return _dali_pipeline_table(data, stem, "(SSD pipeline)", "img/s")


def python_step_table(data: Json, stem: str) -> Part:
    rows, behind = [], []
    threads = (data.get("config") or {}).get("threads", 1)
    rates: dict[str, tuple[float, float]] = {}
    for r in data.get("results", []):
        if "with_step" not in r:
            rows.append([r.get("system"), "-", "-", "-", "-"])
            continue
        plain, stepped = r["without_step"]["rate_median"], r["with_step"]["rate_median"]
        rates[r["system"]] = (plain, stepped)
        cost = 1000 * threads * (1 / stepped - 1 / plain)
        rows.append([r["system"], fmt(plain), fmt(stepped), f"{stepped / plain:.2f}", fmt(cost, 2)])
    text = md_table(["system", "img/s without the step", "img/s with the step", "throughput kept",
                     "step cost [ms of core time per image]"], rows)
    cfg = config_line(data.get("config", {}), skip=("json", "quick", "data_dir", "dali_python"))
    if cfg:
        text = cfg + "\n\n" + text
    x = (data.get("summary") or {}).get("with_step_vs_dali")
    if x:
        text += f"\n\nWith the Python step, streamflow delivers {x:.2f}x DALI's throughput."
        if x < 1.0:
            behind.append(f"`{stem}`: with a Python step streamflow gives {x:.2f}x DALI's throughput "
                          f"({rate(rates['streamflow'][1])} vs {rate(rates['dali'][1])} img/s)."
                          if "streamflow" in rates and "dali" in rates else
                          f"`{stem}`: with a Python step streamflow gives {x:.2f}x DALI's throughput.")
    if "streamflow" in rates and "dali" in rates and rates["streamflow"][0] < rates["dali"][0]:
        behind.append(slower(stem, "without the step", rates["streamflow"][0], rates["dali"][0], "DALI (CPU)",
                             "img/s"))
    return Part(text, behind, f"{x:.2f}x DALI (CPU) with the step" if x else "")


AUDIO_LABELS = {"dali": "DALI (CPU)", "numpy": "numpy loader (soundfile, soxr, librosa)"}


def audio_table(data: Json, stem: str) -> Part:
    """audio_pipeline results: one record per system (and round, with ``--rounds``); clips/s and audio s/s."""
    results = [r for r in data.get("results", []) if isinstance(r, dict)]
    clips, seconds = data.get("clips"), data.get("audio_seconds")
    summary = data.get("summary") or {}
    rounds = max((int(r.get("round", 1)) for r in results), default=1)
    systems = list(dict.fromkeys(r.get("system", "?") for r in results))
    med: dict[str, float] = {}
    rows, notes = [], []
    for s in systems:
        ok = [r for r in results if r.get("system") == s and r.get("status") == "ok" and timing_of(r)]
        if not ok:
            bad = next(r for r in results if r.get("system") == s)
            notes.append(f"- {s}: {bad.get('status')}: {bad.get('reason')}")
            continue
        per_round = [timing_of(r)["rate_median"] for r in ok]  # type: ignore[index]
        med[s] = (summary.get("systems") or {}).get(s, {}).get("rate_median") or statistics.median(per_round)
    for s in systems:
        label = AUDIO_LABELS.get(s, s)
        if s not in med:
            rows.append([label, "skipped/failed", *["-"] * (7 if rounds > 1 else 6)])
            continue
        ok = [r for r in results if r.get("system") == s and r.get("status") == "ok" and timing_of(r)]
        first = timing_of(ok[0]) or {}
        row = [label, rate(med[s]), rate(max(timing_of(r)["rate_best"] for r in ok)),  # type: ignore[index]
               fmt(med[s] * seconds / clips, 0) if clips and seconds else "-",
               ratio(med[s], med.get("dali")), ratio(med[s], med.get("numpy")),
               (first.get("items") or ["-"])[0], fmt(ok[0].get("build_s"), 2)]
        if rounds > 1:
            row.append(", ".join(rate(timing_of(r)["rate_median"]) for r in ok))  # type: ignore[index]
        rows.append(row)
    headers = ["system", "clips/s median", "clips/s best", "audio s per s", "vs DALI", "vs numpy loader",
               "clips per epoch", "build [s]"]
    if rounds > 1:
        headers.append("each round's median")
    parts = [config_line(data.get("config", {}), skip=("json", "quick", "files", "data", "dali_python", "ref_root"))]
    if clips and seconds:
        parts.append(f"{clips} clips, {seconds:,.0f} s of 16 kHz speech. A pipeline epoch counts whole batches (its "
                     "reader fills the last one), so its clip count can exceed the data set's.")
    if rounds > 1:
        parts.append(f"{rounds} rounds, each starting with another system; the rates are the median of the "
                     "rounds' medians.")
    parts.append(md_table(headers, rows))
    for other, r in (summary.get("ratios") or {}).items():
        if rounds > 1 and r.get("per_round"):
            parts.append(f"streamflow / {other} per round: {', '.join(f'{x:.2f}' for x in r['per_round'])} "
                         f"(median {r['median']:.2f}x).")
    parts.append("\n".join(notes))
    behind, headline = [], []
    sf = med.get("streamflow")
    for ref in ("dali", "numpy"):
        if sf and med.get(ref):
            headline.append(f"{sf / med[ref]:.2f}x {AUDIO_LABELS[ref].replace(' (soundfile, soxr, librosa)', '')}")
            if sf < med[ref]:
                behind.append(slower(stem, "(RNN-T speech preprocessing)", sf, med[ref], AUDIO_LABELS[ref],
                                     "clips/s"))
    return Part("\n\n".join(p for p in parts if p), behind, ", ".join(headline))


def _augment_ops_by_system(records: list[Json]) -> dict[str, Json]:
    """system -> op -> the median (over rounds) of the rounds' median rates and the best rate; errors kept."""
    merged: dict[str, Json] = {}
    for r in records:
        for op, entry in (r.get("ops") or {}).items():
            slot = merged.setdefault(str(r.get("system")), {}).setdefault(op, {"medians": [], "best": [], "error": False})
            t = timing_of(entry) if isinstance(entry, dict) else None
            if t is None:
                slot["error"] = True
            else:
                slot["medians"].append(t["rate_median"])
                slot["best"].append(t["rate_best"])
    return {s: {op: ({"rate_median": statistics.median(v["medians"]), "rate_best": max(v["best"])}
                     if v["medians"] else {"error": True}) for op, v in ops.items()}
            for s, ops in merged.items()}


def augment_table(data: Json, stem: str) -> Part:
    """augment_ops results: per system (and round, with ``--rounds``) {ops: {op: timing | {"error"}}}, plus
    streamflow's numpy blur baseline; ``streamflow-ref`` (another checkout) as an extra column."""
    records = [r for r in data.get("results", []) if isinstance(r, dict)]
    by = {r.get("system"): r for r in records}
    merged = _augment_ops_by_system(records)
    rounds = max((int(r.get("round", 1)) for r in records), default=1)
    sf_ops: Json = merged.get("streamflow") or {}
    dali_ops: Json = merged.get("dali") or {}
    ref_ops: Json | None = merged.get("streamflow-ref")
    rows, slow = [], []
    for op in list(dict.fromkeys([*sf_ops, *dali_ops])):
        cells: list[Any] = [op]
        rates: dict[str, float] = {}
        for name, ops in (("streamflow", sf_ops), ("dali", dali_ops)):
            entry = ops.get(op)
            t = timing_of(entry) if isinstance(entry, dict) else None
            if t is None:
                cells += ["error" if isinstance(entry, dict) else "not run", "-"]
                continue
            rates[name] = t["rate_median"]
            cells += [rate(t["rate_median"]), rate(t["rate_best"])]
        cells.append(ratio(rates.get("streamflow"), rates.get("dali")))
        if ref_ops is not None:
            ref = timing_of(ref_ops.get(op) or {})
            cells += [rate(ref["rate_median"]) if ref else "-",
                      ratio(rates.get("streamflow"), ref["rate_median"] if ref else None)]
        rows.append(cells)
        if len(rates) == 2 and rates["streamflow"] < rates["dali"]:
            slow.append(f"{op} {rates['streamflow'] / rates['dali']:.2f}x "
                        f"({rate(rates['streamflow'])} vs {rate(rates['dali'])})")
    headers = ["operator", "streamflow img/s median", "best", "DALI img/s median", "best", "streamflow / DALI"]
    if ref_ops is not None:
        headers += ["streamflow-ref img/s median", "streamflow / ref"]
    parts = [config_line(data.get("config", {}), skip=("json", "quick", "dali_python")),
             md_table(headers, rows),
             "`not run`: the benchmark does not run that operator on that system (DALI 2.4 has "
             "`median_blur` on the GPU only)."]
    if rounds > 1:
        parts.append(f"{rounds} rounds, each starting with another system; a median is the median of the "
                     "rounds' medians, a best the best epoch of all rounds.")
    if ref_ops is not None:
        ref_root = next((r.get("ref_root") for r in records if r.get("ref_root")), "another checkout")
        parts.append(f"`streamflow-ref`: the streamflow package of `{ref_root}` in the same runs "
                     "(the code before the change being measured).")
    for system, r in by.items():
        if "skipped" in r or "error" in r:
            parts.append(f"- {system}: {r.get('skipped') or r.get('error')}")
    blur = (by.get("streamflow") or {}).get("numpy_blur")
    gb = timing_of(sf_ops.get("gaussian_blur s=2") or {})
    if blur and timing_of(blur):
        parts.append(f"Baseline without either library: a plain numpy separable Gaussian blur (sigma 2, one "
                     f"thread) runs at {rate(blur['rate_median'])} img/s"
                     + (f"; streamflow's `gaussian_blur` is {gb['rate_median'] / blur['rate_median']:.2f}x that."
                        if gb else "."))
    ratios = [float(c[-1][:-1]) for c in rows if c[-1] != "-"]
    behind = ([f"`{stem}`: streamflow is slower than DALI (CPU) on {len(slow)} of {len(ratios)} operators "
               f"(streamflow / DALI, img/s): {'; '.join(slow)}."] if slow else [])
    headline = (f"{min(ratios):.2f}x to {max(ratios):.2f}x DALI (CPU) per operator, median "
                f"{statistics.median(ratios):.2f}x" if ratios else "")
    return Part("\n\n".join(p for p in parts if p), behind, headline)


VIDEO_BASELINES = ("pyav loop", "pyav", "torchvision", "dali")


def video_table(data: Json, stem: str) -> Part:
    """video_pipeline rows: {codec, order, system, timing... | unavailable}; sequences/s, streamflow vs each."""
    settings = data.get("settings") or data.get("config") or {}
    length = settings.get("sequence_length")
    groups: dict[tuple[str, str], list[Json]] = {}
    for r in data.get("rows", []):
        groups.setdefault((r.get("codec", "?"), r.get("order", "?")), []).append(r)
    rows, behind, unavailable = [], [], {}
    vs: dict[str, list[float]] = {}
    for (codec, order), group in groups.items():
        sf = next((r["rate_median"] for r in group if r.get("system") == "streamflow" and timing_of(r)), None)
        for r in group:
            if not timing_of(r):
                rows.append([f"{codec} {order}", r.get("system"), "unavailable", "-", "-", "-"])
                unavailable[r.get("system")] = r.get("unavailable", "?")
                continue
            own = r.get("system") == "streamflow"
            rows.append([f"{codec} {order}", r.get("system"), rate(r["rate_median"]), rate(r["rate_best"]),
                         rate(r["rate_median"] * length) if length else "-",
                         "-" if own else ratio(sf, r["rate_median"])])
            if not own and sf:
                vs.setdefault(r["system"], []).append(sf / r["rate_median"])
                if sf < r["rate_median"]:
                    behind.append(slower(stem, f"{codec} {order}", sf, r["rate_median"], r["system"], "sequences/s"))
    parts = [config_line(settings, skip=("quick", "output", "dali_python")),
             f"Sequences of {length} frames per second (frames/s = sequences/s x {length}); `streamflow / this` "
             "is streamflow's rate over the row's." if length else "",
             md_table(["data", "system", "sequences/s median", "best", "frames/s median", "streamflow / this"], rows),
             "\n".join(f"- {k}: unavailable: {v}" for k, v in unavailable.items())]
    head = ", ".join(f"{min(x):.2f}x" + (f" to {max(x):.2f}x" if len(x) > 1 else "") + f" {name}"
                     for name, x in vs.items())
    return Part("\n\n".join(p for p in parts if p), behind, head)


SHARD_LABELS = {
    "sf-file": "streamflow readers.file, loose JPEGs",
    "sf-wds": "streamflow readers.webdataset, local shards",
    "sf-tfrecord": "streamflow readers.tfrecord, local shards",
    "sf-wds-s3": "streamflow readers.webdataset, S3 (moto, loopback)",
    "sf-tfrecord-s3": "streamflow readers.tfrecord, S3 (moto, loopback)",
    "wds-torch": "webdataset + DataLoader, local shards",
    "wds-torch-s3": "webdataset + DataLoader, S3 over HTTP (curl)",
}


def shard_baseline(system: str) -> str | None:
    """The baseline that reads the same storage: webdataset + DataLoader, local or over S3."""
    if not system.startswith("sf-"):
        return None
    return "wds-torch-s3" if system.endswith("-s3") else "wds-torch"


def shard_table(data: Json, stem: str) -> Part:
    """shard_readers results: {system: {status, timing...} | {status: failed, error}}."""
    results: Json = data.get("results") or {}
    rates = {k: t["rate_median"] for k, v in results.items() if (t := timing_of(v))}
    rows, notes, behind, head = [], [], [], []
    for name, r in results.items():
        t = timing_of(r)
        if t is None:
            rows.append([name, SHARD_LABELS.get(name, ""), r.get("status", "failed"), "-", "-", "-"])
            notes.append(f"- {name}: {r.get('error') or r.get('reason')}")
            continue
        base = shard_baseline(name)
        rows.append([name, SHARD_LABELS.get(name, ""), rate(t["rate_median"]), rate(t["rate_best"]),
                     ratio(t["rate_median"], rates.get(base)) if base else "-", fmt(t.get("warmup_seconds"), 1)])
        if base and rates.get(base):
            if name in ("sf-wds", "sf-wds-s3"):
                head.append(f"{t['rate_median'] / rates[base]:.2f}x {base}")
            if t["rate_median"] < rates[base]:
                behind.append(slower(stem, name, t["rate_median"], rates[base], base, "img/s"))
    parts = [config_line(data.get("config", {}), skip=("quick", "data_dir", "output")),
             "Every system decodes, resizes to 256, crops 224, flips and normalizes each image; the ratio is "
             "against webdataset + DataLoader on the same storage (local or S3).",
             md_table(["system", "reads", "img/s median", "img/s best", "vs webdataset + DataLoader",
                       "warm-up epoch [s]"], rows),
             "\n".join(notes)]
    return Part("\n\n".join(p for p in parts if p), behind, ", ".join(head))


# --------------------------------------------------------------------------- reads, decoding, calls


def numpy_roi_table(data: Json, stem: str) -> Part:
    results = data.get("results", [])
    cases: dict[tuple[Any, ...], dict[str, Json]] = {}
    methods: list[str] = []
    for r in results:
        key = (r.get("shape"), r.get("fraction"), r.get("cache"))
        cases.setdefault(key, {})[r["method"]] = r
        if r["method"] not in methods:
            methods.append(r["method"])
    rows, behind, xs = [], [], []
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
            xs.append(best["gbps_median"] / base["gbps_median"])
            if best["gbps_median"] < base["gbps_median"]:
                share = f"{100 * fraction:g} %" if isinstance(fraction, (int, float)) else fraction
                behind.append(f"`{stem}` {shape} of {share}, {cache} cache: the best streamflow read "
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
    head = f"{min(xs):.2f}x to {max(xs):.2f}x np.load(mmap) over {len(xs)} cases" if xs else ""
    return Part(text, behind, head)


def decode_table(data: Json, stem: str) -> Part:
    """decode_micro results: {streamflow, pillow: {cpu_median, cpu_best, wall_median, ...}} in ms per image."""
    results: Json = data.get("results") or {}
    pil = (results.get("pillow") or {}).get("cpu_median")
    rows = [[name, fmt(r.get("cpu_median"), 3), fmt(r.get("cpu_best"), 3), fmt(r.get("wall_median"), 3),
             ratio(pil, r.get("cpu_median")) if name != "pillow" else "-"] for name, r in results.items()]
    text = "\n\n".join([
        f"{data.get('images', '?')} JPEGs, {data.get('repeats', '?')} repeats, one thread; milliseconds per image. "
        "CPU time is far less disturbed by other jobs than wall time; `speed vs Pillow` is Pillow's CPU time over "
        "the row's.",
        md_table(["decoder", "CPU ms/img median", "CPU best", "wall ms/img median", "speed vs Pillow (CPU)"], rows)])
    sf = (results.get("streamflow") or {}).get("cpu_median")
    behind = ([f"`{stem}`: streamflow's JPEG decode takes {sf:.3f} ms of CPU per image vs Pillow's {pil:.3f} "
               f"({pil / sf:.2f}x Pillow's speed)."] if sf and pil and sf > pil else [])
    return Part(text, behind, f"{pil / sf:.2f}x Pillow's decode speed (CPU time)" if sf and pil else "")


DYNAMIC_USER_CALLS = ("dynamic", "dynamic batch", "aio")  # what users call; kernel/operator are internals


def dynamic_table(data: Json, stem: str) -> Part:
    """dynamic_overhead results: {system: {median_us, best_us, p10_single_us, ...} | {"skipped"}}."""
    results: Json = data.get("results") or {}
    kernel = (results.get("kernel") or {}).get("p10_single_us")
    pillow = (results.get("pillow") or {}).get("p10_single_us")
    rows = []
    for name, r in results.items():
        if "skipped" in r:
            rows.append([name, "skipped", "-", "-", "-", "-"])
            continue
        p10 = r.get("p10_single_us")
        rows.append([name, fmt(r.get("median_us"), 1), fmt(r.get("best_us"), 1), fmt(p10, 1),
                     f"{p10 - kernel:+.1f}" if p10 is not None and kernel is not None else "-",
                     ratio(pillow, p10) if name != "pillow" else "-"])
    cfg = data.get("config", {})
    text = "\n\n".join([
        md_table(["system", "median [µs/call]", "best [µs/call]", "p10 single call [µs]", "p10 vs kernel [µs]",
                  "speed vs Pillow (p10)"], rows),
        f"Resize {cfg.get('size')}x{cfg.get('size')}x3 uint8 to {cfg.get('out_size')}; `dynamic batch` is per "
        f"image of a batch of {cfg.get('batch')}; `pipeline` builds and runs a pipeline per call. Loop medians "
        "include time other jobs hold the cores; the 10th percentile of single calls is an uninterrupted call. "
        "Pillow's filter differs (close, not identical, values)."])
    behind = []
    for name in DYNAMIC_USER_CALLS:
        p10 = (results.get(name) or {}).get("p10_single_us")
        if p10 and pillow and p10 > pillow:
            behind.append(f"`{stem}`: one `{name}` call takes {p10:.1f} µs (10th percentile of single calls) vs "
                          f"Pillow's resize {pillow:.1f} µs: {pillow / p10:.2f}x Pillow's speed.")
    dyn = (results.get("dynamic") or {}).get("p10_single_us")
    head = f"a dynamic call {dyn - kernel:+.1f} µs over the kernel (p10)" if dyn and kernel else ""
    return Part(text, behind, head)


# --------------------------------------------------------------------------- serving, soak


def serve_table(data: Json, stem: str) -> Part:
    rows, behind = [], []
    for m in data.get("modes", []):
        if m.get("status") != "ok":
            rows.append([m.get("mode"), m.get("max_batch_size"), m.get("status"), "-", "-", "-", "-", "-", "-"])
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
                behind.append(f"`{stem}` with {c} client(s): dynamic batching gives {x:.2f}x the throughput "
                              "of one request at a time (likely cause: with one client a batch never fills, "
                              "so each request waits out `max_delay_ms`).")
    head = (f"batching {max(speed.values()):.2f}x one-at-a-time at best, {min(speed.values()):.2f}x at worst"
            if speed else "")
    return Part(text, behind, head)


def soak_table(data: Json, stem: str) -> Part:
    """soak: RSS after warm-up, middle, end; threads and file descriptors before, running, after close."""
    mib = 2**20
    args = data.get("args") or {}
    threads, fds = data.get("threads") or ["-"] * 3, data.get("fds") or ["-"] * 3
    growth, tol = data.get("rss_growth"), args.get("tolerance")
    verdict = {True: "pass", False: "FAIL"}.get(bool(data["passed"])) if "passed" in data else "not recorded"
    rows: list[list[Any]] = [
        ["batches", f"{data.get('batches')} ({data.get('epochs')} epochs, batch {args.get('batch_size')}, "
                    f"{args.get('images')} images + {args.get('bad')} broken)"],
        ["throughput after warm-up", f"{fmt(data.get('batches_per_s'), 1)} batches/s"],
        ["RSS after warm-up", f"{fmt((data.get('rss_start_bytes') or 0) / mib, 1)} MiB (batch "
                              f"{data.get('rss_start_batch')})"],
        ["RSS middle", f"{fmt((data.get('rss_middle_bytes') or 0) / mib, 1)} MiB (batch "
                       f"{data.get('rss_middle_batch')})"],
        ["RSS end", f"{fmt((data.get('rss_end_bytes') or 0) / mib, 1)} MiB"],
        ["RSS growth", f"{growth * 100:+.2f} % (limit {tol * 100:g} %)" if growth is not None and tol else "-"],
        ["threads before / running / after close", " / ".join(map(str, threads))],
        ["file descriptors before / running / after close", " / ".join(map(str, fds))],
        ["broken samples skipped", data.get("skipped")],
        ["verdict", verdict],
    ]
    behind = []
    if data.get("passed") is False:
        behind.append(f"`{stem}`: the soak run failed (RSS growth {fmt((growth or 0) * 100, 2)} %, threads "
                      f"{threads}, fds {fds}).")
    return Part(md_table(["", "value"], rows), behind,
                f"RSS {growth * 100:+.2f} % over {data.get('batches')} batches" if growth is not None else "")


# --------------------------------------------------------------------------- scaling (plots)


def scaling_section(found: list[tuple[Path, Json]], draw: bool) -> Part:
    if not found:
        return Part("Not measured yet: run `python benchmarks/plot_scaling.py` (writes "
                    "`benchmarks/results/scaling-<tag>.json` and the plots).")
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
                best = max(others, key=others.__getitem__)
                if rates["streamflow"] < others[best]:
                    behind.append(f"`{path.stem}` batch {b}, {t} threads: streamflow {fmt(rates['streamflow'])} "
                                  f"img/s vs {best} {fmt(others[best])} img/s "
                                  f"({rates['streamflow'] / others[best]:.2f}x).")
        if cfg.get("images", 512) < 512 or cfg.get("repeats", 3) < 3:
            parts.append("\n**A small sweep** (few images or one repeat): its numbers are noisy; the full "
                         "sweep is `python benchmarks/plot_scaling.py`.")
    return Part("\n".join(parts), behind)


# --------------------------------------------------------------------------- before/after comparisons


def _comparison_metrics(run: Json) -> dict[str, float]:
    """The numbers of one run of a before/after file: a cpu_pipeline result or decode_micro's systems."""
    if isinstance(run.get("result"), dict) and (t := timing_of(run["result"])):
        return {"img/s median": t["rate_median"]}
    out = {}
    for name, r in (run.get("results") or {}).items():
        if isinstance(r, dict) and r.get("cpu_median") is not None:
            out[f"{name} CPU ms/img"] = r["cpu_median"]
    return out


def comparison_table(path: Path, data: Json) -> str:
    """Runs of two (or more) versions side by side, and the median of each version."""
    runs = [r for r in data.get("runs", []) if isinstance(r, dict)]
    versions = list(dict.fromkeys(str(r.get("version", "?")) for r in runs))
    metrics = list(dict.fromkeys(m for r in runs for m in _comparison_metrics(r)))
    by_index: dict[Any, dict[str, dict[str, float]]] = {}
    for i, r in enumerate(runs):
        idx = r.get("pair", r.get("run", i + 1))
        by_index.setdefault(idx, {})[str(r.get("version", "?"))] = _comparison_metrics(r)
    headers = ["run", *[f"{v}: {m}" for m in metrics for v in versions]]
    rows = [[idx, *[fmt(vals.get(v, {}).get(m), 3 if "ms" in m else 0) for m in metrics for v in versions]]
            for idx, vals in by_index.items()]
    meds = {(v, m): statistics.median(xs) for m in metrics for v in versions
            if (xs := [vals[v][m] for vals in by_index.values() if m in vals.get(v, {})])}
    rows.append(["median", *[fmt(meds.get((v, m)), 3 if "ms" in m else 0) for m in metrics for v in versions]])
    dates = [str(r["date"]) for r in runs if r.get("date")]
    m = data.get("machine") or {}
    lines = [f"**`{rel(path)}`**: {data.get('what', '')}".rstrip(": "),
             "",
             f"- machine {m.get('hostname', '?')} (tag {m.get('tag', '?')}), {m.get('usable_cores', '?')} usable "
             f"cores; load average at start: {load_text(data)}; git {m.get('git') or 'not recorded'}",
             f"- command: `{command_of(data)}`",
             f"- date: {dates[0] + ' to ' + dates[-1] if dates else date_of(data)}"]
    if data.get("note"):
        lines.append(f"- note: {data['note']}")
    lines += ["", md_table(headers, rows)]
    if len(versions) == 2:
        a, b = versions
        changes = [f"{mm} {meds[(b, mm)] / meds[(a, mm)]:.2f}x" for mm in metrics
                   if (a, mm) in meds and (b, mm) in meds]
        if changes:
            lines += ["", f"{b} / {a}, medians: {', '.join(changes)}."]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the page


BENCHMARKS: list[Benchmark] = [
    Benchmark("cpu_pipeline", "CPU image pipeline", "python benchmarks/cpu_pipeline.py --repeats 5", pipeline_table),
    Benchmark("gpu_pipeline", "GPU image pipeline", "python benchmarks/gpu_pipeline.py", gpu_table),
    Benchmark("python_step", "A Python step in the pipeline (python_function)",
              "python benchmarks/python_step.py --dali-python /path/to/dali-venv/bin/python --repeats 5",
              python_step_table),
    Benchmark("detection_pipeline", "Detection training pipeline (SSD on COCO-format data)",
              "python benchmarks/detection_pipeline.py --dali-python /path/to/dali-venv/bin/python",
              detection_table),
    Benchmark("augment_ops", "Augmentation operators",
              "python benchmarks/augment_ops.py --dali-python /path/to/dali-venv/bin/python", augment_table),
    Benchmark("audio_pipeline", "Speech preprocessing (RNN-T)",
              "python benchmarks/audio_pipeline.py --dali-python /path/to/dali-venv/bin/python", audio_table),
    Benchmark("video_pipeline", "Video sequences",
              "python benchmarks/video_pipeline.py --dali-python /path/to/dali-venv/bin/python", video_table),
    Benchmark("shard_readers", "Sharded data sets (WebDataset, TFRecord; local and S3)",
              "python benchmarks/shard_readers.py", shard_table),
    Benchmark("numpy_roi", "numpy region-of-interest reads", "python benchmarks/numpy_roi.py", numpy_roi_table),
    Benchmark("decode_micro", "JPEG decoding alone", "python benchmarks/decode_micro.py", decode_table),
    Benchmark("dynamic_overhead", "Dynamic mode: the cost of one call", "python benchmarks/dynamic_overhead.py",
              dynamic_table),
    Benchmark("serve_bench", "Inference serving (dynamic batching)", "python benchmarks/serve_bench.py",
              serve_table),
    Benchmark("soak", "Long runs: memory, threads and files (soak)", "python benchmarks/soak.py", soak_table),
]
SCALING = Benchmark("scaling", "Scaling: batch size and num_threads", "python benchmarks/plot_scaling.py",
                    lambda data, stem: Part(""))
RENDERED = {b.key for b in [*BENCHMARKS, SCALING]}


def render(results_dir: Path, draw: bool = True) -> str:
    found, comparisons = load_results(results_dir)
    out = [
        "# Performance",
        "",
        "<!-- Generated by `python benchmarks/report.py` from benchmarks/results/*.json; do not edit by hand. -->",
        "",
        "Every number below comes from a committed result file in `benchmarks/results/`; each table says "
        "which file, machine, load, command and date produced it. Regenerate the page with "
        "`python benchmarks/report.py`. How each benchmark measures is in `benchmarks/README.md`; to find the "
        "slow stage of your own pipeline use `streamflow profile` (end of this page).",
        "",
        "Most results come from a 2-core development machine shared with other jobs: compare systems by their "
        "ratios within one file (measured in the same run), and look at the load average before trusting an "
        "absolute number.",
        "",
    ]
    sections: list[str] = []
    behind: list[str] = []
    summary: list[list[str]] = []
    compared = {d.get("benchmark") or p.stem.split("-")[0] for p, d in comparisons}
    for bench in BENCHMARKS:
        sections += [f"## {bench.title}", ""]
        files = found.get(bench.key, [])
        if not files:
            checks = " Its before/after checks are under \"Before/after checks\"." if bench.key in compared else ""
            sections += [f"Not measured yet: no `benchmarks/results/{bench.key}-*.json`. Run `{bench.command}`."
                         + checks, ""]
            summary.append([bench.title, "not measured yet", "-"])
            continue
        if len(files) > 1:
            sections += [f"{len(files)} result files: the spread between runs of one machine is the noise.", ""]
        for path, data in files:
            part = bench.render(data, path.stem)
            sections += [provenance(path, data), "", part.text, ""]
            behind += part.behind
            summary.append([bench.title, part.headline or "see the table", f"`{path.name}`"])
    sections += [f"## {SCALING.title}", ""]
    scaling = scaling_section(found.get("scaling", []), draw)
    sections += [scaling.text, ""]
    behind += scaling.behind
    summary.append([SCALING.title, "plots" if found.get("scaling") else "not measured yet",
                    ", ".join(f"`{p.name}`" for p, _ in found.get("scaling", [])) or "-"])
    unknown = {k: v for k, v in found.items() if k not in RENDERED}
    if unknown:
        sections += ["## Result files without a renderer", "",
                     "These files have no section renderer in `benchmarks/report.py` yet (add one):", ""]
        for key, files in unknown.items():
            for path, data in files:
                sections += [f"### `{key}`", "", provenance(path, data), ""]
    sections += ["## Before/after checks", "",
                 "Runs of one change's before and after versions, alternating on the same machine: they say "
                 "whether the change moved the speed, not how fast streamflow is against other systems, so they "
                 "stay out of the tables above. Files: `benchmarks/results/comparisons/`.", ""]
    if comparisons:
        for path, data in comparisons:
            sections += [comparison_table(path, data), ""]
    else:
        sections += ["None committed.", ""]
    sections += ["## Where streamflow is behind", ""]
    if behind:
        sections += [f"- {line}" for line in behind]
    else:
        sections += ["Nowhere in the measured results."]
    missing = [b.title for b in [*BENCHMARKS, SCALING] if b.key not in found]
    if missing:
        sections += ["", f"Not measured yet, so no claim either way: {', '.join(missing)}."]
    out += ["## Summary", "",
            "streamflow against the baselines of each result file (median over median; above 1.00x is faster). "
            "Details and provenance in the sections below.", "",
            md_table(["benchmark", "streamflow vs baseline", "file"], summary), ""]
    out += sections
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
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
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
        print(f"{args.out} is up to date")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
