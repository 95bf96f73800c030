"""Inference serving: dynamic batching vs one request at a time, over HTTP.

Starts ``examples/inference_server.py`` on 127.0.0.1 in a subprocess (JPEG
bytes in, streamflow preprocessing, a small torch CNN on the CPU, JSON out),
then drives it with a closed-loop load generator at each concurrency
level (default 1, 8, 64, 256): ``c`` clients each send a request, wait for the
answer and send the next, until the level's request count or time limit is
reached. Two servers in one run: with dynamic batching (``--max-batch-size``,
default 32) and with ``--max-batch-size 1`` (the per-request baseline). At
each level the two take turns, ``--repeats`` timed runs each (default 3),
and the run with the median throughput is reported (all runs' req/s are in
the JSON). Reported per level: requests/s, latency p50/p95/p99 as the client
sees it, errors, the server's mean batch size, the CPU time per request of
the server and of the load generator, and where the server's time went.

    python benchmarks/serve_bench.py                     # full run, JSON to results/
    python benchmarks/serve_bench.py --quick             # smoke run (small, short)
    python benchmarks/serve_bench.py --levels 1,64 --requests 2000

Loopback only; every loop is bounded in requests and seconds. The load
generator shares the machine with the server (2 cores on the dev VM), so it
is a lean keep-alive HTTP/1.1 client (``_http_load.py``) rather than aiohttp's:
it uses ~3x less CPU per request, which would otherwise be taken from the
server. Its CPU per request is reported; compare the two modes by their ratio.
Needs aiohttp and torch (see docs/serving.md for the venv).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _common, _dataset

import _common
import _dataset
from _http_load import LoadConnection

REPO = _common.REPO_ROOT
SERVER = REPO / "examples" / "inference_server.py"
HOST = "127.0.0.1"
PACKAGES = (*_common.DEFAULT_PACKAGES, "aiohttp")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process [s] (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return math.nan
    k = (len(sorted_values) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


class Server:
    """The example server in a subprocess (started and stopped with a bounded wait)."""

    def __init__(self, max_batch_size: int, args: argparse.Namespace, log_path: Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        cmd = [
            sys.executable, str(SERVER), "--port", str(self.port),
            "--max-batch-size", str(max_batch_size),
            "--max-delay-ms", str(args.max_delay_ms),
            "--threads", str(args.threads),
            "--torch-threads", str(args.torch_threads),
            "--max-queue", str(args.max_queue),
            "--batches-in-flight", str(args.batches_in_flight),
            "--model", args.model,
        ]
        cmd += ["--dispatch-when-idle", args.dispatch_when_idle]
        self.cmd = cmd
        self._log = open(log_path, "wb")
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self.url = f"http://{HOST}:{self.port}"

    async def wait_ready(self, session: Any, timeout: float = 60.0) -> None:
        import aiohttp

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}): {self.log_tail()}")
            try:
                async with session.get(self.url + "/health") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)
        raise RuntimeError(f"the server was not ready in {timeout:.0f} s: {self.log_tail()}")

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode


async def run_level(server: Server, images: list[bytes], concurrency: int,
                    max_requests: int, max_seconds: float) -> dict[str, Any]:
    """``concurrency`` closed-loop clients, each on its own keep-alive connection;
    at most ``max_requests`` / ``max_seconds``."""
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    batch_sizes: list[int] = []
    issued = 0
    deadline = time.perf_counter() + max_seconds

    async def client(k: int) -> None:
        nonlocal issued
        conn = LoadConnection(HOST, server.port, timeout=max_seconds + 30)
        try:
            while issued < max_requests and time.perf_counter() < deadline:
                data = images[issued % len(images)]
                issued += 1
                began = time.perf_counter()
                try:
                    code, body = await conn.post("/predict", data)
                    status = str(code)
                except Exception as e:
                    status, body = type(e).__name__, b""
                record(status, body, time.perf_counter() - began)
        finally:
            conn.close()

    def record(status: str, body: bytes, took: float) -> None:
        statuses[status] = statuses.get(status, 0) + 1
        if status == "200":
            latencies.append(took)
            batch_sizes.append(json.loads(body)["batch_size"])

    began = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(client(k) for k in range(concurrency))), max_seconds + 60)
    wall = time.perf_counter() - began
    lat = sorted(latencies)
    return {
        "concurrency": concurrency,
        "requests": sum(statuses.values()),
        "ok": len(latencies),
        "statuses": statuses,
        "wall_s": wall,
        "req_per_s": len(latencies) / wall if wall > 0 else 0.0,
        "latency_ms": {
            "p50": percentile(lat, 50) * 1e3,
            "p95": percentile(lat, 95) * 1e3,
            "p99": percentile(lat, 99) * 1e3,
            "mean": (sum(lat) / len(lat) * 1e3) if lat else math.nan,
            "max": lat[-1] * 1e3 if lat else math.nan,
        },
        "batch_size_mean": sum(batch_sizes) / len(batch_sizes) if batch_sizes else math.nan,
    }


async def measure_level(session: Any, server: Server, images: list[bytes], c: int,
                        args: argparse.Namespace) -> dict[str, Any]:
    """One timed run of ``c`` clients against ``server``, with the server's own counters."""
    before = await _server_stats(session, server.url)
    load_before = os.getloadavg()[0]
    cpu_before = process_cpu_seconds(server.proc.pid), time.process_time()
    n = max(args.requests, 4 * c)
    level = await run_level(server, images, c, n, args.level_seconds)
    cpu_after = process_cpu_seconds(server.proc.pid), time.process_time()
    after = await _server_stats(session, server.url)
    level["cpu_ms_per_request"] = _cpu_per_request(cpu_before, cpu_after, level["ok"])
    level["server"] = _server_delta(before, after)
    # 1-minute load average: > ~2.5 on 2 cores means other jobs shared the machine.
    level["loadavg_1min"] = [load_before, os.getloadavg()[0]]
    return level


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median throughput (the lower middle one for an even count), plus every run's req/s."""
    ordered = sorted(runs, key=lambda lv: lv["req_per_s"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["req_per_s_runs"] = [lv["req_per_s"] for lv in runs]
    return chosen


async def run_modes(sizes: dict[str, int], images: list[bytes], args: argparse.Namespace,
                    log_dir: Path) -> list[dict[str, Any]]:
    """Both servers up at once; at each level the modes take turns, ``--repeats`` times each.

    The machine is shared (a VM): its speed drifts by several percent within
    a minute. Alternating the modes (A B, then B A...) exposes both to the
    same drift, and the median of the repeats ignores a disturbed run. The
    idle server uses no CPU while the other one is measured.
    """
    import aiohttp

    servers = {name: Server(size, args, log_dir / f"server-{name}.log") for name, size in sizes.items()}
    results = {
        name: {"mode": name, "max_batch_size": size, "server_cmd": servers[name].cmd, "levels": []}
        for name, size in sizes.items()
    }
    alive: list[str] = []
    try:
        connector = aiohttp.TCPConnector(limit=0)
        timeout = aiohttp.ClientTimeout(total=args.level_seconds + 30)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            for name, server in servers.items():
                try:
                    await server.wait_ready(session)
                    # Warm-up: first calls (thread pools, torch kernels), untimed.
                    await run_level(server, images, min(8, max(args.levels)), args.warmup, 30)
                    alive.append(name)
                except Exception as e:
                    _mark_failed(results[name], server, e)
            for c in args.levels:
                runs: dict[str, list[dict[str, Any]]] = {name: [] for name in alive}
                for r in range(args.repeats):
                    for name in (alive if r % 2 == 0 else alive[::-1]):
                        if results[name].get("status") == "failed":
                            continue
                        try:
                            runs[name].append(await measure_level(session, servers[name], images, c, args))
                        except Exception as e:
                            _mark_failed(results[name], servers[name], e)
                for name in alive:
                    if not runs[name] or results[name].get("status") == "failed":
                        continue
                    level = median_run(runs[name])
                    results[name]["levels"].append(level)
                    print(
                        f"  {name:>9} c={c:<4} {level['req_per_s']:8.1f} req/s  p50 {level['latency_ms']['p50']:7.1f}"
                        f"  p95 {level['latency_ms']['p95']:7.1f}  p99 {level['latency_ms']['p99']:7.1f} ms"
                        f"  batch {level['batch_size_mean']:5.1f}  load {level['loadavg_1min'][1]:.1f}"
                        f"  cpu/req {_fmt_ms(level['cpu_ms_per_request']['server'])} server"
                        f" {_fmt_ms(level['cpu_ms_per_request']['load_generator'])} client"
                        f"  runs {' '.join(f'{x:.0f}' for x in level['req_per_s_runs'])}  {level['statuses']}",
                        flush=True,
                    )
            for name in alive:
                if results[name].get("status") != "failed":
                    results[name]["server_stats"] = await _server_stats(session, servers[name].url)
                    results[name]["status"] = "ok"
    finally:
        for name, server in servers.items():
            results[name]["server_exit_code"] = server.stop()
    return [results[name] for name in sizes]


def _mark_failed(result: dict[str, Any], server: Server, error: BaseException) -> None:
    result["status"] = "failed"
    result["reason"] = f"{type(error).__name__}: {error}"
    result["server_log"] = server.log_tail()
    print(f"  {result['mode']}: FAILED {result['reason']}", flush=True)


def _cpu_per_request(before: tuple[float | None, float], after: tuple[float | None, float],
                     ok: int) -> dict[str, float | None]:
    """CPU milliseconds per successful request: the server's and this load generator's."""
    if ok <= 0:
        return {"server": None, "load_generator": None}
    server = None if before[0] is None or after[0] is None else (after[0] - before[0]) * 1e3 / ok
    return {"server": server, "load_generator": (after[1] - before[1]) * 1e3 / ok}


async def _server_stats(session: Any, url: str) -> dict[str, Any]:
    async with session.get(url + "/stats") as r:
        return await r.json()


def _server_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What the server did during one level: batches, samples, time per stage."""
    out: dict[str, Any] = {}
    for key in ("ok", "failed", "rejected", "cancelled", "batches", "postprocess_time"):
        if key in after and key in before:
            out[key] = after[key] - before[key]
    hist_a, hist_b = after.get("batch_size_histogram", {}), before.get("batch_size_histogram", {})
    out["batch_size_histogram"] = {k: v - hist_b.get(k, 0) for k, v in hist_a.items() if v - hist_b.get(k, 0)}
    pa, pb = after.get("pipeline", {}), before.get("pipeline", {})
    if pa.get("generation") == pb.get("generation"):
        out["stage_busy_s"] = {k: v - pb.get("stage_busy_s", {}).get(k, 0.0) for k, v in pa.get("stage_busy_s", {}).items()}
        out["operator_busy_s"] = {
            k: v - pb.get("operator_busy_s", {}).get(k, 0.0) for k, v in pa.get("operator_busy_s", {}).items()
        }
    return out


def _fmt_ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} ms"


def print_table(modes: list[dict[str, Any]]) -> None:
    rows = []
    by_mode = {m["mode"]: m for m in modes if m.get("status") == "ok"}
    for m in modes:
        for lv in m.get("levels", []):
            rows.append([
                m["mode"], str(lv["concurrency"]), f"{lv['req_per_s']:.1f}",
                f"{lv['latency_ms']['p50']:.1f}", f"{lv['latency_ms']['p95']:.1f}", f"{lv['latency_ms']['p99']:.1f}",
                f"{lv['batch_size_mean']:.1f}", str(lv["requests"] - lv["ok"]),
            ])
    print()
    print(_common.format_table(
        ["mode", "conc", "req/s", "p50 ms", "p95 ms", "p99 ms", "batch", "errors"], rows))
    if "batched" in by_mode and "baseline" in by_mode:
        print()
        base = {lv["concurrency"]: lv for lv in by_mode["baseline"]["levels"]}
        for lv in by_mode["batched"]["levels"]:
            b = base.get(lv["concurrency"])
            if b and b["req_per_s"] > 0:
                print(f"  c={lv['concurrency']:<4} batched / baseline throughput = {lv['req_per_s'] / b['req_per_s']:.2f}x")


def speedups(modes: list[dict[str, Any]]) -> dict[str, float]:
    by_mode = {m["mode"]: m for m in modes if m.get("status") == "ok"}
    if "batched" not in by_mode or "baseline" not in by_mode:
        return {}
    base = {lv["concurrency"]: lv["req_per_s"] for lv in by_mode["baseline"]["levels"]}
    return {
        str(lv["concurrency"]): lv["req_per_s"] / base[lv["concurrency"]]
        for lv in by_mode["batched"]["levels"]
        if base.get(lv["concurrency"])
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,8,64,256", help="concurrency levels, comma-separated")
    ap.add_argument("--requests", type=int, default=1000, help="requests per level (at least 4x concurrency)")
    ap.add_argument("--level-seconds", type=float, default=30.0, help="time limit per level")
    ap.add_argument("--warmup", type=int, default=64, help="untimed requests after start")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per mode and level (the median is reported)")
    ap.add_argument("--max-batch-size", type=int, default=32, help="the batched mode's max_batch_size")
    ap.add_argument("--max-delay-ms", type=float, default=5.0)
    ap.add_argument("--max-queue", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2, help="streamflow CPU threads in the server")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--batches-in-flight", type=int, default=2)
    ap.add_argument("--dispatch-when-idle", choices=("auto", "on", "off"), default="auto",
                    help="server flag: a partial batch leaves at once when the pipeline is idle (auto: at low load)")
    ap.add_argument("--model", choices=("fc", "conv"), default="fc", help="the example server's model")
    ap.add_argument("--images", type=int, default=256, help="distinct JPEGs sent")
    ap.add_argument("--modes", default="batched,baseline")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="result file (default results/serve-<tag>.json)")
    ap.add_argument("--quick", action="store_true", help="smoke run: few images and requests, short levels")
    args = ap.parse_args(argv)
    args.levels = [int(x) for x in str(args.levels).split(",") if x]
    if args.quick:
        args.images = min(args.images, 16)
        args.requests = min(args.requests, 48)
        args.level_seconds = min(args.level_seconds, 5.0)
        args.warmup = min(args.warmup, 8)
        args.repeats = 1
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import aiohttp  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        print(f"skipped: the serving benchmark needs aiohttp and torch ({e}); see docs/serving.md")
        return 0
    info = _common.machine_info(PACKAGES)
    _common.print_machine(info)
    files = _dataset.build_jpeg_set(args.data_dir, n=args.images)
    images = [f.read_bytes() for f in files]
    print(f"data    : {len(images)} JPEGs from {files[0].parent.parent}, "
          f"{sum(map(len, images)) / len(images) / 1024:.0f} KiB mean")
    print(f"levels  : {args.levels}, {args.requests} requests (>= 4x concurrency) or {args.level_seconds:.0f} s per level")
    print()
    log_dir = (REPO / ".bench-data" / "serve-logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    all_sizes = {"batched": args.max_batch_size, "baseline": 1}
    unknown = [m for m in args.modes.split(",") if m and m not in all_sizes]
    if unknown:
        print(f"unknown mode(s) {unknown}; use batched, baseline")
        return 2
    sizes = {m: all_sizes[m] for m in args.modes.split(",") if m}
    modes = asyncio.run(run_modes(sizes, images, args, log_dir))
    print_table(modes)
    payload = {
        "benchmark": "serve_bench",
        "command": [sys.executable, *sys.argv],
        "date": _common.now_iso(),
        "machine": info,
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "data": {"images": len(images), "dir": str(files[0].parent.parent),
                 "mean_bytes": sum(map(len, images)) / len(images)},
        "modes": modes,
        "speedup_vs_baseline": speedups(modes),
    }
    default_dir = (REPO / ".bench-data") if args.quick else _common.RESULTS_DIR
    path = args.json or default_dir / f"serve-{_common.machine_tag()}.json"
    _common.write_json(path, payload)
    print(f"\nJSON: {path}")
    return 1 if any(m.get("status") != "ok" for m in modes) else 0


if __name__ == "__main__":
    sys.exit(main())
