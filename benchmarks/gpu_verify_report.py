"""Helpers of ``gpu_verify.sh``: the environment report, the GPU check, the test summary.

    python benchmarks/gpu_verify_report.py environment OUTDIR   # print + write environment.json
    python benchmarks/gpu_verify_report.py detect               # exit 0: a GPU streamflow can use,
                                                                #      3: a GPU it cannot see, 2: no GPU
    python benchmarks/gpu_verify_report.py summary JUNIT OUTDIR [--gpu-present]

``summary`` counts the JUnit results of the ``gpu`` tests, writes
``summary.json``, and fails (exit 1) when a test failed or, on a machine with
a GPU, when any GPU test was skipped: a skip there means something is missing
(a package, a driver feature) and the run has not verified what it claims.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

#: Exit codes of ``detect`` (and of gpu_verify.sh when it stops early).
NO_GPU = 2
GPU_NOT_USABLE = 3


def gpu_present() -> bool:
    """A GPU is on this machine whatever Python sees: the driver lists one."""
    if Path("/dev/nvidia0").exists():
        return True
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def streamflow_gpu_count() -> tuple[int, str | None]:
    """What streamflow sees, and why it sees nothing when it does not (the probe's own error)."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount()), None
    except Exception:  # the reason is the report
        return 0, traceback.format_exc(limit=3).strip()


def environment() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "gpu_present": gpu_present(),
        "packages": {
            name: _version(dist) for name, dist in (
                ("streamflow", "streamflow"), ("numpy", "numpy"), ("cupy", "cupy-cuda13x"),
                ("nvimgcodec", "nvidia-nvimgcodec-cu13"), ("kvikio", "kvikio-cu13"), ("torch", "torch"),
                ("jax", "jax"),
            )
        },
    }
    count, why = streamflow_gpu_count()
    info["streamflow_gpu_count"] = count
    if why:
        info["gpu_probe_error"] = why
    try:
        from streamflow.backend import driver_version, gds_available, gpu_info

        info["gpus"] = gpu_info()
        info["driver"] = driver_version()
        gds, how = gds_available()
        info["gds"] = {"available": gds, "detail": how}
    except Exception:
        info["backend_error"] = traceback.format_exc(limit=3).strip()
    if count:
        try:
            import cupy

            info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
            info["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
        except Exception:
            pass
    info["kvikio_compat_mode"] = os.environ.get("KVIKIO_COMPAT_MODE", "(default: AUTO)")
    return info


def cmd_environment(outdir: Path) -> int:
    info = environment()
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "environment.json").write_text(json.dumps(info, indent=2, default=str))
    print(json.dumps(info, indent=2, default=str))
    return 0


def cmd_detect() -> int:
    present = gpu_present()
    count, why = streamflow_gpu_count()
    if count > 0:
        print(f"streamflow sees {count} GPU(s)")
        return 0
    if present:
        print("A GPU is present (the driver lists it) but streamflow sees none: every GPU test would be "
              "skipped. Check that cupy-cuda13x matches the driver's CUDA version and imports. Probe error:")
        print(why or "(no error: cupy reports 0 devices)")
        return GPU_NOT_USABLE
    print("no GPU on this machine: nothing to verify")
    return NO_GPU


def summarize(junit: Path, gpu: bool) -> tuple[dict[str, Any], list[str]]:
    """Counts of the JUnit test cases, and the problems that make the run fail."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    skipped: list[str] = []
    failed: list[str] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None:
            counts["failed"] += 1
            failed.append(name)
        elif case.find("error") is not None:
            counts["errors"] += 1
            failed.append(name)
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
            reason = case.find("skipped").get("message", "")  # type: ignore[union-attr]
            skipped.append(f"{name} ({reason})")
        else:
            counts["passed"] += 1
    problems = [f"failed: {n}" for n in failed]
    if gpu:
        problems += [f"skipped on a GPU machine: {n}" for n in skipped]
    summary = {**counts, "failed_tests": failed, "skipped_tests": skipped, "ok": not problems}
    return summary, problems


def cmd_summary(junit: Path, outdir: Path, gpu: bool) -> int:
    summary, problems = summarize(junit, gpu)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"gpu tests: {summary['passed']} passed, {summary['failed']} failed, "
          f"{summary['errors']} errors, {summary['skipped']} skipped")
    for p in problems:
        print(f"  PROBLEM {p}")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("environment").add_argument("outdir", type=Path)
    sub.add_parser("detect")
    s = sub.add_parser("summary")
    s.add_argument("junit", type=Path)
    s.add_argument("outdir", type=Path)
    s.add_argument("--gpu-present", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "environment":
        return cmd_environment(args.outdir)
    if args.cmd == "detect":
        return cmd_detect()
    return cmd_summary(args.junit, args.outdir, args.gpu_present)


if __name__ == "__main__":
    sys.exit(main())
