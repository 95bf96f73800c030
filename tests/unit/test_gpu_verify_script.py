"""``benchmarks/gpu_verify.sh`` on a machine without a GPU: its checks, exit codes and report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_verify.sh"
REPORT = ROOT / "benchmarks" / "gpu_verify_report.py"


def _run(args: list[str], path_prefix: Path | None = None, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHON=sys.executable)
    if path_prefix is not None:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env['PATH']}"
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_help_and_usage() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    done = _run(["--help"])
    assert done.returncode == 0 and "OUTDIR" in done.stdout and "Exit status" in done.stdout
    assert _run([]).returncode == 64


@pytest.mark.skipif(Path("/dev/nvidia0").exists(), reason="this machine has a GPU")
def test_no_gpu_means_nothing_to_verify(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "nvidia-smi").write_text("#!/bin/sh\nexit 9\n")  # a driver tool that finds no GPU
    (bare / "nvidia-smi").chmod(0o755)
    done = _run([str(tmp_path / "out")], path_prefix=bare)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "nothing to verify" in done.stdout
    env = json.loads((tmp_path / "out" / "environment.json").read_text())
    assert env["gpu_present"] is False and env["streamflow_gpu_count"] == 0


@pytest.mark.skipif(Path("/dev/nvidia0").exists(), reason="this machine has a GPU")
def test_a_gpu_streamflow_cannot_see_fails_loudly(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-fake)'\n")
    (fake / "nvidia-smi").chmod(0o755)
    done = _run([str(tmp_path / "out")], path_prefix=fake)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "streamflow sees none" in done.stdout and "Probe error" in done.stdout
    env = json.loads((tmp_path / "out" / "environment.json").read_text())
    assert env["gpu_present"] is True and env["streamflow_gpu_count"] == 0 and env["gpu_probe_error"]
    assert not (tmp_path / "out" / "gpu-tests.xml").exists(), "tests must not run when they would all skip"


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.unit.ops.test_resize" name="test_gpu_resize_equals_cpu[device-x]" time="0.1"/>
<testcase classname="tests.gpu.test_gpu_pipeline" name="test_gds_reads" time="0.0">
  <skipped type="pytest.skip" message="kvikio is not installed">skip</skipped></testcase>
<testcase classname="tests.gpu.test_gpu_pipeline" name="test_overlap" time="0.2"/>
{extra}
</testsuite></testsuites>
"""


@pytest.mark.parametrize(
    "extra, gpu, code, words",
    [
        ("", False, 0, []),
        ("", True, 1, ["skipped on a GPU machine: tests.gpu.test_gpu_pipeline::test_gds_reads (kvikio is not installed)"]),
        ('<testcase classname="t" name="bad"><failure message="boom">x</failure></testcase>', False, 1, ["failed: t::bad"]),
    ],
)
def test_summary_fails_on_failures_and_on_skips_with_a_gpu(tmp_path: Path, extra: str, gpu: bool, code: int,
                                                            words: list[str]) -> None:
    junit = tmp_path / "gpu-tests.xml"
    junit.write_text(JUNIT.format(extra=extra))
    args = [sys.executable, str(REPORT), "summary", str(junit), str(tmp_path), *(["--gpu-present"] if gpu else [])]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == code, done.stdout
    for w in words:
        assert w in done.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["passed"] == 2 and summary["skipped"] == 1 and summary["ok"] is (code == 0)
