"""The checks of ``benchmarks/gpu_verify.sh``: environment, GPU detection, test and benchmark results.

    python benchmarks/gpu_verify_report.py environment OUTDIR    # print + OUTDIR/environment.json
    python benchmarks/gpu_verify_report.py detect                # exit 0 usable GPU, 2 no GPU,
                                                                 #      3 a GPU streamflow cannot use
    python benchmarks/gpu_verify_report.py tests JUNIT --rc RC [--gpu-present]
    python benchmarks/gpu_verify_report.py bench NAME JSON --rc RC
    python benchmarks/gpu_verify_report.py finish OUTDIR EXIT    # OUTDIR/summary.json

``tests`` fails (exit 1) when a test failed or errored, when pytest stopped
early or ran no test, and, with ``--gpu-present``, when any test was skipped:
on a machine with a GPU a skipped GPU test means something is missing (a
package, a driver feature) and the run did not verify what it claims.
``bench`` fails when the benchmark failed or did not measure streamflow on
the GPU. ``finish`` collects the steps ``gpu_verify.sh`` recorded in
``OUTDIR/steps.tsv`` and every result into ``OUTDIR/summary.json``.

Only the standard library is needed; streamflow is imported from this
checkout, the same one the tests import.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: Exit codes of ``detect``, which gpu_verify.sh exits with when it stops there.
OK, FAILED, NO_GPU, GPU_NOT_USABLE = 0, 1, 2, 3

#: pytest's exit codes (``pytest.ExitCode``), for messages.
PYTEST_EXIT = {
    0: "all passed", 1: "some tests failed", 2: "interrupted", 3: "internal error",
    4: "usage error (is pytest-timeout installed?)", 5: "no tests collected",
    124: "timed out (the step's TIMEOUT)", 125: "not run: the time budget was spent",
    137: "killed after timing out",
}


# --------------------------------------------------------------------------- detection


def nvidia_smi(*args: str) -> tuple[int | None, str]:
    """(exit status, output) of ``nvidia-smi ARGS``; (None, why) when it is not installed."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, "nvidia-smi not found"
    try:
        done = subprocess.run([smi, *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi: {exc}"
    return done.returncode, (done.stdout + done.stderr).strip()


def gpu_evidence() -> list[str]:
    """Why this machine has an NVIDIA GPU, whatever Python sees (empty: it has none)."""
    evidence = []
    rc, out = nvidia_smi("-L")
    if rc == 0:
        evidence += [f"nvidia-smi -L: {line.strip()}" for line in out.splitlines() if line.startswith("GPU ")]
    if Path("/dev/nvidia0").exists():
        evidence.append("/dev/nvidia0 exists")
    gpus = Path("/proc/driver/nvidia/gpus")
    if gpus.is_dir() and any(gpus.iterdir()):
        evidence.append(f"{gpus} lists {len(list(gpus.iterdir()))} GPU(s)")
    return evidence


def probe_error() -> str | None:
    """The exception behind ``streamflow.backend.gpu_count() == 0`` (the probe swallows it)."""
    try:
        import cupy

        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # the exception is the answer
        return traceback.format_exc(limit=2).strip()
    return None if count else "cupy imports and reports 0 CUDA devices"


def streamflow_gpu_count() -> tuple[int, str | None]:
    """What streamflow's own probe sees, and the error behind a 0."""
    try:
        from streamflow.backend import gpu_count

        count = gpu_count()
    except Exception:
        return 0, "streamflow cannot be imported:\n" + traceback.format_exc(limit=2).strip()
    return count, (None if count else probe_error())


# --------------------------------------------------------------------------- environment


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def _kvikio_settings() -> dict[str, Any]:
    settings: dict[str, Any] = {name: os.environ.get(name) for name in
                                ("KVIKIO_COMPAT_MODE", "KVIKIO_NTHREADS", "KVIKIO_TASK_SIZE")}
    try:
        import kvikio.defaults as kd
    except Exception:
        return settings
    for key, getters in (("compat_mode", ("compat_mode", "is_compat_mode_preferred")),
                         ("num_threads", ("num_threads", "get_num_threads"))):
        for getter in getters:
            try:
                settings[key] = str(getattr(kd, getter)())
                break
            except Exception:
                continue
    return settings


def environment() -> dict[str, Any]:
    """``streamflow info``'s facts plus what the driver says and why a GPU is not usable."""
    env: dict[str, Any] = {"python_executable": sys.executable}
    try:
        import streamflow
        from streamflow.info import collect_info

        env.update(collect_info())
        env["streamflow_path"] = str(Path(streamflow.__file__).parent)
    except Exception:
        env["streamflow_error"] = traceback.format_exc(limit=3).strip()
    evidence = gpu_evidence()
    env["gpu_present"] = bool(evidence)
    env["gpu_evidence"] = evidence
    count, why = streamflow_gpu_count()
    env["streamflow_gpu_count"] = count
    if why:
        env["gpu_probe_error"] = why
    fields = "index,name,memory.total,compute_cap,driver_version"
    rc, out = nvidia_smi(f"--query-gpu={fields}", "--format=csv,noheader")
    if rc == 0:
        env["nvidia_smi"] = [dict(zip(fields.split(","), (v.strip() for v in line.split(","))))
                             if line.count(",") == fields.count(",") else {"raw": line}
                             for line in out.splitlines() if line.strip()]
    else:
        env["nvidia_smi"] = out or f"nvidia-smi exited with {rc}"
    try:  # both answer without a GPU: the CUDA cupy was built for, the CUDA the driver supports
        import cupy

        env["cuda_runtime"] = _cuda_version(int(cupy.cuda.runtime.runtimeGetVersion()))
        driver = int(cupy.cuda.runtime.driverGetVersion())
        env["cuda_driver_supports"] = _cuda_version(driver) if driver else "no CUDA driver"
    except Exception as exc:
        env["cuda_runtime"] = f"unknown ({type(exc).__name__}: {exc})"
    env["kvikio"] = _kvikio_settings()
    env["test_tools"] = {name: _dist_version(name) for name in ("pytest", "pytest-timeout", "hypothesis", "pillow")}
    return env


def _dist_version(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def format_environment(env: dict[str, Any]) -> str:
    lines = []
    if "streamflow_error" in env:
        lines.append(f"streamflow: CANNOT BE IMPORTED\n{env['streamflow_error']}")
    else:
        from streamflow.info import format_info

        lines += [format_info(env), f"streamflow from {env['streamflow_path']}"]
    lines.append(f"python: {env['python_executable']}")
    lines.append(f"CUDA: cupy built for {env.get('cuda_runtime', '-')}, "
                 f"driver supports {env.get('cuda_driver_supports', '-')}")
    smi = env["nvidia_smi"]
    if isinstance(smi, list):
        lines += ["nvidia-smi:", *(f"  {', '.join(row.values())}" for row in smi)]
    else:
        lines.append(f"nvidia-smi: {smi.splitlines()[0] if smi else '-'}")
    lines.append(f"GPU present: {'yes (' + '; '.join(env['gpu_evidence']) + ')' if env['gpu_present'] else 'no'}")
    lines.append(f"streamflow sees {env['streamflow_gpu_count']} GPU(s)")
    kvikio = ", ".join(f"{k}={v}" for k, v in env["kvikio"].items() if v is not None)
    lines.append(f"kvikio settings: {kvikio or '(defaults; kvikio not importable)'}")
    lines.append("test tools: " + ", ".join(f"{k} {v or 'MISSING'}" for k, v in env["test_tools"].items()))
    return "\n".join(lines)


def cmd_environment(outdir: Path) -> int:
    env = environment()
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "environment.json").write_text(json.dumps(env, indent=2, default=str) + "\n")
    print(format_environment(env))
    return OK


def cmd_detect() -> int:
    count, why = streamflow_gpu_count()
    if count > 0:
        print(f"streamflow sees {count} GPU(s)")
        return OK
    evidence = gpu_evidence()
    if evidence:
        print("ERROR: a GPU is present but streamflow sees none (streamflow.backend.gpu_count() == 0),\n"
              "so every GPU test would be skipped. Evidence of the GPU: " + "; ".join(evidence) + "\n"
              "Check that cupy for CUDA 13 is installed (pip install 'streamflow[gpu]'), imports, and\n"
              "that the driver supports CUDA 13 (nvidia-smi: 'CUDA Version: 13.x'). The probe's error:")
        print(why)
        return GPU_NOT_USABLE
    rc, out = nvidia_smi("-L")
    hint = f" (nvidia-smi: {out.splitlines()[0] if out else rc})" if rc is not None else ""
    print(f"no GPU on this machine{hint}: nothing to verify")
    return NO_GPU


# --------------------------------------------------------------------------- tests


def check_tests(junit: Path, rc: int, gpu_present: bool) -> dict[str, Any]:
    """Counts of the JUnit test cases and the problems that fail the step."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "xfailed": 0}
    failed: list[str] = []
    skipped: list[str] = []
    problems: list[str] = []
    if junit.exists():
        try:
            cases = list(ET.parse(junit).getroot().iter("testcase"))
        except ET.ParseError as exc:
            cases = []
            problems.append(f"unreadable JUnit report {junit.name}: {exc}")
        for case in cases:
            if not case.get("name"):  # pytest's entry for the test a time-out interrupted
                continue
            name = f"{case.get('classname')}::{case.get('name')}"
            skip = case.find("skipped")
            if case.find("failure") is not None:
                counts["failed"] += 1
                failed.append(name)
            elif case.find("error") is not None:
                counts["errors"] += 1
                failed.append(name)
            elif skip is not None and skip.get("type") == "pytest.xfail":
                counts["xfailed"] += 1
            elif skip is not None:
                counts["skipped"] += 1
                skipped.append(f"{name} ({skip.get('message', '')})")
            else:
                counts["passed"] += 1
    else:
        problems.append(f"no JUnit report ({junit.name}): pytest did not finish")
    problems += [f"failed: {name}" for name in failed]
    if gpu_present:
        problems += [f"skipped on a GPU machine: {name}" for name in skipped]
    if junit.exists() and sum(counts.values()) == 0:
        problems.append("no GPU test ran")
    if rc != 0 and not failed:
        problems.append(f"pytest exited with {rc}: {PYTEST_EXIT.get(rc, 'see gpu-tests.log')}")
    return {**counts, "pytest_exit": rc, "failed_tests": failed, "skipped_tests": skipped,
            "problems": problems, "ok": not problems}


def cmd_tests(junit: Path, rc: int, gpu_present: bool) -> int:
    result = check_tests(junit, rc, gpu_present)
    print(f"gpu tests: {result['passed']} passed, {result['failed']} failed, {result['errors']} errors, "
          f"{result['skipped']} skipped, {result['xfailed']} xfailed (pytest exit {rc})")
    shown = 25
    for problem in result["problems"][:shown]:
        print(f"  PROBLEM {problem}")
    if len(result["problems"]) > shown:
        print(f"  ... and {len(result['problems']) - shown} more: see summary.json")
    return OK if result["ok"] else FAILED


# --------------------------------------------------------------------------- benchmarks


def check_bench(name: str, path: Path, rc: int) -> dict[str, Any]:
    """Whether benchmark NAME ran and measured streamflow on the GPU, from its JSON."""
    problems: list[str] = []
    notes: list[str] = []
    if rc != 0:
        problems.append(f"exited with {rc}" + (" (timed out)" if rc in (124, 137) else "")
                        + (" (not run: time budget spent)" if rc == 125 else ""))
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        problems.append(f"no readable result {path.name}: {type(exc).__name__}")
        return {"problems": problems, "notes": notes, "ok": False}
    if name.startswith("gpu_pipeline"):
        for system, r in data.get("results", {}).items():
            if "rate_median" in r:
                notes.append(f"{system}: {r['rate_median']:.0f} img/s")
            else:
                notes.append(f"{system}: {r.get('skipped') and 'skipped: ' + r['skipped'] or r.get('error')}")
        if "rate_median" not in data.get("results", {}).get("streamflow", {}):
            problems.append("streamflow was not measured: "
                            + str(data.get("results", {}).get("streamflow", "not in the results")))
    elif name.startswith("numpy_roi"):
        gpu = data.get("gpu", {})
        if not gpu.get("ran"):
            problems.append(f"the GPU part did not run: {gpu.get('skipped')}")
        else:
            notes.append(f"kvikio compat_mode={gpu.get('compat_mode')} (KVIKIO_COMPAT_MODE="
                         f"{gpu.get('KVIKIO_COMPAT_MODE')})")
        rows = data.get("results", [])
        wrong = [f"{r.get('method')} {r.get('shape')} {r.get('cache')}" for r in rows if not r.get("correct")]
        problems += [f"wrong result: {w}" for w in wrong]
        gpu_rows = [r for r in rows if r.get("method") == "streamflow.read_npy(gpu)"]
        if gpu.get("ran") and not gpu_rows:
            problems.append("no streamflow.read_npy(gpu) result")
        for r in gpu_rows:
            notes.append(f"read_npy(gpu) {r['shape']} {r['cache']}: {r['gbps_median']:.2f} GB/s")
    return {"problems": problems, "notes": notes, "ok": not problems}


def cmd_bench(name: str, path: Path, rc: int) -> int:
    result = check_bench(name, path, rc)
    for note in result["notes"]:
        print(f"  {name}: {note}")
    for problem in result["problems"]:
        print(f"  PROBLEM {name}: {problem}")
    print(f"  {name}: {'ok' if result['ok'] else 'FAILED'}")
    return OK if result["ok"] else FAILED


# --------------------------------------------------------------------------- summary

STATUS = {OK: "ok", FAILED: "failed", NO_GPU: "no_gpu", GPU_NOT_USABLE: "gpu_not_usable"}


def read_steps(outdir: Path) -> list[dict[str, Any]]:
    steps = []
    path = outdir / "steps.tsv"
    if path.exists():
        for line in path.read_text().splitlines():
            name, status, rc, seconds, command = (line.split("\t") + [""] * 5)[:5]
            steps.append({"name": name, "status": status, "exit": int(rc), "seconds": int(seconds),
                          "command": command})
    return steps


def cmd_finish(outdir: Path, code: int) -> int:
    steps = read_steps(outdir)
    summary: dict[str, Any] = {"exit_code": code, "status": STATUS.get(code, "failed"),
                               "failed_steps": [s["name"] for s in steps if s["status"] not in ("ok", "no_gpu")],
                               "steps": steps}
    for s in steps:
        if s["name"] == "gpu tests" and s["command"]:
            summary["tests"] = check_tests(outdir / "gpu-tests.xml", s["exit"], gpu_present=True)
        elif s["name"].startswith("benchmark "):
            bench = s["name"].split(" ", 1)[1]
            summary.setdefault("benchmarks", {})[bench] = check_bench(
                bench, outdir / f"bench-{bench}.json", s["exit"])
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return OK


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("environment").add_argument("outdir", type=Path)
    sub.add_parser("detect")
    t = sub.add_parser("tests")
    t.add_argument("junit", type=Path)
    t.add_argument("--rc", type=int, required=True, help="pytest's exit status")
    t.add_argument("--gpu-present", action="store_true")
    b = sub.add_parser("bench")
    b.add_argument("name")
    b.add_argument("json", type=Path)
    b.add_argument("--rc", type=int, required=True, help="the benchmark's exit status")
    f = sub.add_parser("finish")
    f.add_argument("outdir", type=Path)
    f.add_argument("exit_code", type=int)
    args = ap.parse_args(argv)
    if args.cmd == "environment":
        return cmd_environment(args.outdir)
    if args.cmd == "detect":
        return cmd_detect()
    if args.cmd == "tests":
        return cmd_tests(args.junit, args.rc, args.gpu_present)
    if args.cmd == "bench":
        return cmd_bench(args.name, args.json, args.rc)
    return cmd_finish(args.outdir, args.exit_code)


if __name__ == "__main__":
    sys.exit(main())
