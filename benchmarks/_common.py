"""Shared helpers for the benchmarks: machine description, timing, JSON output.

Only the standard library is imported here, so every benchmark (and its smoke
test) can describe the machine and time things even where numpy is missing.

Habits (see STYLE.md): print the machine first, warm up, repeat, report the
median and the best, and write everything, raw times included, to JSON.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT: Path = Path(__file__).resolve().parent.parent
RESULTS_DIR: Path = REPO_ROOT / "benchmarks" / "results"

#: Distributions whose versions every benchmark records (missing ones are None).
DEFAULT_PACKAGES: tuple[str, ...] = (
    "streamflow",
    "numpy",
    "pillow",
    "aiofiles",
    "nvidia-nvimgcodec-cu13",
    "torch",
    "nvidia-dali-cuda130",
)


# --------------------------------------------------------------------------- machine


def _cpu_model() -> str:
    """CPU model name from /proc/cpuinfo, falling back to ``platform.processor()``."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else (platform.processor() or "unknown")


def _memory_gib() -> float | None:
    """Total memory [GiB] from /proc/meminfo, or None where unreadable."""
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    match = re.search(r"^MemTotal:\s*(\d+)\s*kB", text, re.MULTILINE)
    return round(int(match.group(1)) / 2**20, 1) if match else None


def _usable_cores() -> int:
    """Cores this process may run on (affinity), which can be fewer than cpu_count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def package_versions(names: Iterable[str] = DEFAULT_PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``names`` (distribution names); None for missing ones."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_revision(repo: Path = REPO_ROOT) -> str | None:
    """``git describe --always --dirty`` of the checkout, or None (no git, no commits)."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=repo, capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def machine_tag() -> str:
    """Short name for result files: ``$BENCH_MACHINE_TAG`` or the host name, sanitised."""
    raw = os.environ.get("BENCH_MACHINE_TAG") or socket.gethostname() or "unknown"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-") or "unknown"


def machine_info(packages: Iterable[str] = DEFAULT_PACKAGES) -> dict[str, Any]:
    """Everything needed to tell two result files' machines apart."""
    return {
        "hostname": socket.gethostname(),
        "tag": machine_tag(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "usable_cores": _usable_cores(),
        "memory_gib": _memory_gib(),
        # Other work on the machine when the benchmark started (1, 5, 15 min): a busy machine's
        # numbers are comparable within one run only.
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "executable": sys.executable,
        "packages": package_versions(packages),
        "git": git_revision(),
    }


def print_machine(info: Mapping[str, Any]) -> None:
    """Print the machine block that starts every benchmark's output."""
    print(f"machine : {info['hostname']} (tag {info['tag']})")
    print(f"cpu     : {info['cpu_model']}, {info['usable_cores']} usable of "
          f"{info['cpu_count']} cores, {info['memory_gib']} GiB")
    print(f"os      : {info['platform']}")
    if info.get("load_average"):
        print(f"load    : {', '.join(f'{x:.1f}' for x in info['load_average'])} (1, 5, 15 min)")
    print(f"python  : {info['python']} ({info['python_implementation']}) {info['executable']}")
    pkgs = ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v is not None)
    missing = ", ".join(k for k, v in info["packages"].items() if v is None)
    print(f"packages: {pkgs}")
    if missing:
        print(f"missing : {missing}")
    print(f"git     : {info['git']}")
    print()


# --------------------------------------------------------------------------- timing


@dataclass
class Timing:
    """Raw epoch timings of one system.

    Attributes:
        seconds: wall time of each timed repeat [s].
        items: items (images) delivered in each timed repeat.
        warmup_seconds: wall time of the warm-up, not included in ``seconds`` [s].
    """

    seconds: list[float] = field(default_factory=list)
    items: list[int] = field(default_factory=list)
    warmup_seconds: float = 0.0

    def rates(self) -> list[float]:
        """Throughput of each repeat [items/s]."""
        return [n / s for n, s in zip(self.items, self.seconds, strict=True) if s > 0]

    def median_rate(self) -> float:
        """Median throughput over the repeats [items/s]."""
        return statistics.median(self.rates())

    def best_rate(self) -> float:
        """Best (highest) throughput over the repeats [items/s]."""
        return max(self.rates())

    def summary(self) -> dict[str, Any]:
        """Raw times plus median/best rates, ready for JSON."""
        rates = self.rates()
        return {
            **asdict(self),
            "rates": rates,
            "rate_median": statistics.median(rates) if rates else None,
            "rate_best": max(rates) if rates else None,
            "seconds_median": statistics.median(self.seconds) if self.seconds else None,
            "seconds_min": min(self.seconds) if self.seconds else None,
        }


def time_repeats(run_once: Callable[[], int], repeats: int = 3, warmup: int = 1) -> Timing:
    """Time ``run_once`` ``repeats`` times after ``warmup`` untimed calls.

    Args:
        run_once: does one unit of work (an epoch) and returns the items it
            delivered.
        repeats: timed calls (at least 1).
        warmup: untimed calls first, so caches, thread pools and worker
            processes are up before timing starts.

    Returns:
        The raw timings.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    timing = Timing()
    start = time.perf_counter()
    for _ in range(warmup):
        run_once()
    timing.warmup_seconds = time.perf_counter() - start
    for _ in range(repeats):
        start = time.perf_counter()
        items = run_once()
        timing.seconds.append(time.perf_counter() - start)
        timing.items.append(items)
    return timing


# --------------------------------------------------------------------------- output


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain-text table with right-aligned columns (the first left-aligned)."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        parts = [str(c).ljust(w) if i == 0 else str(c).rjust(w)
                 for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(parts)

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def now_iso() -> str:
    """Current local time, ISO 8601 with offset, to the second."""
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")


def write_json(path: Path, payload: Mapping[str, Any]) -> Path:
    """Write ``payload`` as indented JSON (parents created, written atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n")
    tmp.replace(path)
    return path


# --------------------------------------------------------------------------- one subprocess per system

#: Line prefix of a worker's JSON result on its stdout.
RESULT_PREFIX = "RESULT "
#: Why a worker skips a system whose library it could not import.
SKIP_HINT = "(install it, or pass --dali-python)"


def add_system_args(parser: argparse.ArgumentParser, quick_help: str) -> None:
    """The flags of the streamflow-vs-DALI comparisons: which systems, DALI's interpreter, smoke run, output."""
    parser.add_argument("--systems", default="streamflow,dali")
    parser.add_argument("--dali-python", default=sys.executable, help="interpreter with nvidia-dali-cuda130")
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", type=Path, default=None)


def interpreter(system: str, args: argparse.Namespace) -> str:
    """The Python that runs ``system``: ``--dali-python`` for DALI, this one otherwise."""
    return str(args.dali_python) if system == "dali" else sys.executable


def print_result(results: Mapping[str, Any]) -> None:
    """A worker's last word: its results as one JSON line that :func:`run_worker` picks up."""
    print(RESULT_PREFIX + json.dumps(results, default=str))


def run_worker(script: str, system: str, python: str, worker_args: Sequence[str]) -> dict[str, Any]:
    """Run ``python script --worker system *worker_args`` and return the result it printed.

    Each system runs in its own process (DALI may live in another virtual
    environment); a worker that printed no result gives an ``error`` entry
    with the end of its stderr.
    """
    cmd = [python, script, "--worker", system, *worker_args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            result: dict[str, Any] = json.loads(line[len(RESULT_PREFIX):])
            result["interpreter"] = python
            return result
    return {"system": system, "error": done.stderr[-3000:] or f"exit {done.returncode}", "interpreter": python}


def save_results(benchmark: str, args: argparse.Namespace, info: Mapping[str, Any], results: Any,
                 summary: Mapping[str, Any] | None = None) -> None:
    """Write ``results/<benchmark>-<tag>.json`` (or ``--json``); a ``--quick`` run writes only to ``--json``."""
    out = args.json or RESULTS_DIR / f"{benchmark}-{machine_tag()}.json"
    if args.quick and not args.json:
        return
    payload: dict[str, Any] = {
        "benchmark": benchmark, "when": now_iso(), "machine": info, "command": " ".join(sys.argv),
        "config": {k: v for k, v in vars(args).items() if k != "worker"}, "results": results,
    }
    if summary is not None:
        payload["summary"] = summary
    write_json(out, payload)
    print(f"wrote {out}")
