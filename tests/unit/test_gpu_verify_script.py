"""``benchmarks/gpu_verify.sh`` without a GPU: its checks, steps, exit codes and reports.

The script's GPU steps are driven through stand-ins: a fake ``nvidia-smi`` on
PATH, a fake ``cupy`` package on PYTHONPATH (broken, or reporting one GPU), and
a fake interpreter (PYTHON) that answers for pytest and the benchmarks with
canned results, and runs everything else (the report helper) with this Python.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_verify.sh"
REPORT = ROOT / "benchmarks" / "gpu_verify_report.py"
HAS_GPU = Path("/dev/nvidia0").exists() or Path("/proc/driver/nvidia/gpus").is_dir()

_spec = importlib.util.spec_from_file_location("gpu_verify_report", REPORT)
assert _spec is not None and _spec.loader is not None
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)


def _exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _run(args: list[str], tmp_path: Path, *, smi: str | None = None, cupy: str | None = None,
         python: str = sys.executable, env_vars: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The script with an optional fake nvidia-smi (its shell body) and fake cupy (its module text)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KVIKIO_", "PYTEST_"))}
    env.update(PYTHON=python, **(env_vars or {}))
    if smi is not None:
        _exe(tmp_path / "bin" / "nvidia-smi", f"#!/bin/sh\n{smi}\n")
        env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    if cupy is not None:
        (tmp_path / "fakemods" / "cupy").mkdir(parents=True, exist_ok=True)
        (tmp_path / "fakemods" / "cupy" / "__init__.py").write_text(cupy)
        env["PYTHONPATH"] = str(tmp_path / "fakemods")
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          timeout=60, cwd=tmp_path)


H100 = "echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0000)'"
BROKEN_CUPY = "raise ImportError('libcudart.so.13: cannot open shared object file (fake)')\n"
ONE_GPU_CUPY = """
class _Runtime:
    getDeviceCount = staticmethod(lambda: 1)
    driverGetVersion = staticmethod(lambda: 13000)
    runtimeGetVersion = staticmethod(lambda: 13000)
    getDeviceProperties = staticmethod(
        lambda i: {"name": b"Fake H100", "totalGlobalMem": 80 * 2**30, "major": 9, "minor": 0})


class cuda:
    runtime = _Runtime
"""


def test_syntax_help_and_usage(tmp_path: Path) -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    assert os.access(SCRIPT, os.X_OK)
    done = _run(["--help"], tmp_path)
    assert done.returncode == 0
    for words in ("OUTDIR", "Exit status", "2   no GPU", "3   a GPU is present", "PYTHON", "TIMEOUT", "BUDGET"):
        assert words in done.stdout
    assert _run([], tmp_path).returncode == 64
    assert _run(["a", "b"], tmp_path).returncode == 64
    assert _run([str(tmp_path / "out")], tmp_path, env_vars={"TIMEOUT": "soon"}).returncode == 64
    missing = _run([str(tmp_path / "out")], tmp_path, python=str(tmp_path / "no-such-python"))
    assert missing.returncode == 1 and "no Python interpreter" in missing.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_shellcheck_is_clean() -> None:
    done = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


@pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU")
@pytest.mark.parametrize("smi", ["echo 'No devices were found'; exit 6", None], ids=["smi-no-devices", "no-smi"])
def test_no_gpu_means_nothing_to_verify(tmp_path: Path, smi: str | None) -> None:
    if smi is None and shutil.which("nvidia-smi"):
        pytest.skip("nvidia-smi is installed here")
    out = tmp_path / "new" / "out"  # created by the script
    done = _run([str(out)], tmp_path, smi=smi)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no GPU on this machine" in done.stdout and "nothing to verify" in done.stdout
    if smi:
        assert "No devices were found" in done.stdout
    env = json.loads((out / "environment.json").read_text())
    assert env["gpu_present"] is False and env["streamflow_gpu_count"] == 0
    assert env["python"] == sys.version.split()[0] and "numpy" in env["packages"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "no_gpu" and summary["exit_code"] == 2 and summary["failed_steps"] == []
    assert not (out / "gpu-tests.xml").exists()


def test_a_gpu_streamflow_cannot_see_fails_loudly(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _run([str(out)], tmp_path, smi=H100, cupy=BROKEN_CUPY)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "a GPU is present but streamflow sees none" in done.stdout
    assert "nvidia-smi -L: GPU 0: NVIDIA H100" in done.stdout
    assert "libcudart.so.13: cannot open shared object file (fake)" in done.stdout  # the probe's own error
    env = json.loads((out / "environment.json").read_text())
    assert env["gpu_present"] is True and env["streamflow_gpu_count"] == 0
    assert "libcudart.so.13" in env["gpu_probe_error"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "gpu_not_usable" and summary["failed_steps"] == ["detection"]
    assert not (out / "gpu-tests.xml").exists(), "the tests must not run when they would all skip"


# --------------------------------------------------------------------------- the whole run, faked

FAKE_PYTHON = '''#!{python}
"""Stands in for PYTHON: canned pytest and benchmark runs, the real interpreter for the rest."""
import json, os, sys, time
from pathlib import Path

args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({{"args": args, "KVIKIO_COMPAT_MODE": os.environ.get("KVIKIO_COMPAT_MODE")}}) + "\\n")
def value(flag):
    return args[args.index(flag) + 1]
if args[:2] == ["-m", "pytest"]:
    print("fake pytest running the gpu tests", flush=True)
    time.sleep(float(os.environ.get("FAKE_PYTEST_SLEEP", "0")))
    xml = next(a.split("=", 1)[1] for a in args if a.startswith("--junitxml="))
    Path(xml).write_text(os.environ["FAKE_JUNIT"])
    sys.exit(int(os.environ.get("FAKE_PYTEST_RC", "0")))
if args and args[0].endswith("gpu_pipeline.py"):
    ok = {{"rate_median": 1234.0}}
    Path(value("--out")).write_text(json.dumps({{"results": {{
        "streamflow": ok if os.environ.get("FAKE_PIPELINE") != "error" else {{"error": "RuntimeError: boom"}},
        "dali": {{"skipped": "No module named 'nvidia.dali'"}}}}}}))
    sys.exit(0)
if args and args[0].endswith("numpy_roi.py"):
    ran = os.environ.get("KVIKIO_COMPAT_MODE") != os.environ.get("FAKE_ROI_FAILS_WITH", "-")
    rows = [{{"method": "streamflow.read_npy(gpu)", "shape": "slab", "cache": "warm", "gbps_median": 2.5,
             "correct": True}}] if ran else []
    Path(value("--output")).write_text(json.dumps({{
        "gpu": {{"ran": ran, "skipped": None if ran else "kvikio: cuFile failed", "compat_mode": "ON"}},
        "results": rows}}))
    sys.exit(0)
os.execv({python!r}, [{python!r}, *args])
'''

JUNIT_CASE = '<testcase classname="{c}" name="{n}" time="0.1">{body}</testcase>'
PASSED = JUNIT_CASE.format(c="tests.gpu.test_gpu_pipeline", n="test_overlap", body="")
SKIPPED = JUNIT_CASE.format(c="tests.gpu.test_gpu_pipeline", n="test_torch_handoff",
                            body='<skipped type="pytest.skip" message="could not import \'torch\'">s</skipped>')


def _junit(*cases: str) -> str:
    return ('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
            + "".join(cases) + "</testsuite></testsuites>")


def _fake_run(tmp_path: Path, junit: str, **env_vars: str) -> tuple[subprocess.CompletedProcess[str], Path,
                                                                       list[dict]]:
    python = _exe(tmp_path / "fakepy" / "python", FAKE_PYTHON.format(python=sys.executable))
    log = tmp_path / "calls.jsonl"
    out = tmp_path / "out"
    done = _run([str(out)], tmp_path, smi=H100, cupy=ONE_GPU_CUPY, python=str(python),
                env_vars={"FAKE_LOG": str(log), "FAKE_JUNIT": junit, **env_vars})
    return done, out, [json.loads(line) for line in log.read_text().splitlines()]


def test_all_good_exits_0_and_runs_every_step(tmp_path: Path) -> None:
    done, out, calls = _fake_run(tmp_path, _junit(PASSED))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "streamflow sees 1 GPU(s)" in done.stdout and "Fake H100" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["failed_steps"] == []
    assert [s["name"] for s in summary["steps"]] == [
        "environment", "detection", "gpu tests", "benchmark gpu_pipeline", "benchmark numpy_roi",
        "benchmark numpy_roi-compat"]
    assert summary["tests"]["passed"] == 1 and summary["tests"]["ok"] is True
    assert summary["benchmarks"]["gpu_pipeline"]["ok"] is True
    env = json.loads((out / "environment.json").read_text())
    assert env["gpus"][0]["name"] == "Fake H100" and env["gpus"][0]["compute_capability"] == "9.0"
    assert env["cuda_runtime"] == "13.0" and env["streamflow_gpu_count"] == 1

    pytest_args = next(c["args"] for c in calls if c["args"][:2] == ["-m", "pytest"])
    assert pytest_args[pytest_args.index("-m", 1) + 1] == "gpu" and pytest_args[-1] == "tests"
    assert f"--junitxml={out}/gpu-tests.xml" in pytest_args
    assert "-x" not in pytest_args and not any(a.startswith("--maxfail") for a in pytest_args)
    assert "--timeout=120" in pytest_args and "-rA" in pytest_args and "no:cacheprovider" in pytest_args
    assert "fake pytest running the gpu tests" in (out / "gpu-tests.log").read_text()  # teed
    benches = [c for c in calls if c["args"] and c["args"][0].startswith("benchmarks/")]
    assert [(c["args"][0], c["KVIKIO_COMPAT_MODE"]) for c in benches] == [
        ("benchmarks/gpu_pipeline.py", None), ("benchmarks/numpy_roi.py", None), ("benchmarks/numpy_roi.py", "ON")]
    assert all("--quick" in c["args"] for c in benches) and "--gpu" in benches[1]["args"]


def test_a_skipped_gpu_test_and_a_failed_benchmark_fail_but_every_step_runs(tmp_path: Path) -> None:
    done, out, _ = _fake_run(tmp_path, _junit(PASSED, SKIPPED), FAKE_PIPELINE="error", FAKE_ROI_FAILS_WITH="ON")
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("PROBLEM skipped on a GPU machine: tests.gpu.test_gpu_pipeline::test_torch_handoff "
            "(could not import 'torch')") in done.stdout
    assert "streamflow was not measured" in done.stdout and "the GPU part did not run" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["exit_code"] == 1
    assert summary["failed_steps"] == ["gpu tests", "benchmark gpu_pipeline", "benchmark numpy_roi-compat"]
    assert summary["tests"]["skipped"] == 1 and summary["tests"]["passed"] == 1
    assert summary["benchmarks"]["numpy_roi"]["ok"] is True


def test_a_step_that_times_out_fails_and_the_next_steps_still_run(tmp_path: Path) -> None:
    start = time.monotonic()
    done, out, _ = _fake_run(tmp_path, _junit(PASSED), FAKE_PYTEST_SLEEP="30", TIMEOUT="2")
    assert time.monotonic() - start < 20
    assert done.returncode == 1, done.stdout + done.stderr
    assert "TIMED OUT after 2 s" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    tests = next(s for s in summary["steps"] if s["name"] == "gpu tests")
    assert tests["status"] == "failed" and tests["exit"] == 124
    assert summary["failed_steps"] == ["gpu tests"]  # the benchmarks ran after it and passed
    assert any("timed out" in p for p in summary["tests"]["problems"])


# --------------------------------------------------------------------------- the checks alone


def test_junit_summary(tmp_path: Path) -> None:
    junit = tmp_path / "gpu-tests.xml"
    failure = JUNIT_CASE.format(c="t", n="bad", body='<failure message="boom">x</failure>')
    xfail = JUNIT_CASE.format(c="t", n="known", body='<skipped type="pytest.xfail" message="x">x</skipped>')
    junit.write_text(_junit(PASSED, SKIPPED, xfail))
    assert report.check_tests(junit, 0, gpu_present=False)["ok"] is True  # skips are fine without a GPU
    with_gpu = report.check_tests(junit, 0, gpu_present=True)
    assert with_gpu["ok"] is False and (with_gpu["passed"], with_gpu["skipped"], with_gpu["xfailed"]) == (1, 1, 1)
    assert with_gpu["problems"] == [
        "skipped on a GPU machine: tests.gpu.test_gpu_pipeline::test_torch_handoff (could not import 'torch')"]
    junit.write_text(_junit(PASSED, failure))
    assert report.check_tests(junit, 1, gpu_present=True)["problems"] == ["failed: t::bad"]
    junit.write_text(_junit())
    assert "no GPU test ran" in report.check_tests(junit, 5, gpu_present=True)["problems"]
    assert report.check_tests(tmp_path / "missing.xml", 124, gpu_present=True)["problems"] == [
        "no JUnit report (missing.xml): pytest did not finish", "pytest exited with 124: timed out (the step's TIMEOUT)"]
    cli = subprocess.run([sys.executable, str(REPORT), "tests", str(junit), "--rc", "0"], capture_output=True, text=True)
    assert cli.returncode == 1 and "PROBLEM no GPU test ran" in cli.stdout


def test_benchmark_checks(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"results": {"streamflow": {"skipped": "No module named 'cupy'"}}}))
    assert report.check_bench("gpu_pipeline", path, 0)["problems"] == [
        "streamflow was not measured: {'skipped': \"No module named 'cupy'\"}"]
    path.write_text(json.dumps({"gpu": {"ran": True}, "results": [
        {"method": "streamflow.read_npy(gpu)", "shape": "cube", "cache": "cold", "gbps_median": 1.0, "correct": False}]}))
    assert report.check_bench("numpy_roi", path, 1)["problems"] == [
        "exited with 1", "wrong result: streamflow.read_npy(gpu) cube cold"]
    assert report.check_bench("numpy_roi", tmp_path / "none.json", 124)["problems"] == [
        "exited with 124 (timed out)", "no readable result none.json: FileNotFoundError"]
