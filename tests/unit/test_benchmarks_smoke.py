"""Tiny runs of the benchmark machinery, so the benchmarks never rot.

Parts whose packages are missing (Pillow, numpy, torch, DALI) skip. The
streamflow row skips only while the public API it uses is not there yet; once
``streamflow.pipeline_def`` exists, a benchmark that cannot build or run the
user-level pipeline fails here.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH_DIR))

import _common
import _dataset
import cpu_pipeline

#: Packages each system needs, beyond the benchmark itself.
NEEDS: dict[str, tuple[str, ...]] = {
    "streamflow": ("numpy", "PIL"),
    "torch": ("numpy", "PIL", "torch"),
    "dali": ("numpy", "PIL", "nvidia.dali"),
}
TINY = {"images": 8, "batch_size": 4, "threads": 2, "repeats": 1, "warmup_epochs": 1}


def _have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # parent package missing (nvidia.*)
        return False


def _skip_unless(*modules: str) -> None:
    missing = [m for m in modules if not _have(m)]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight JPEGs in two classes, built once for the module."""
    _skip_unless("PIL")
    root = tmp_path_factory.mktemp("jpegs")
    _dataset.build_jpeg_set(root, n=TINY["images"], classes=2)
    return root


# --------------------------------------------------------------------------- _common


def test_time_repeats_times_only_the_repeats() -> None:
    calls: list[int] = []

    def epoch() -> int:
        calls.append(1)
        return 10

    timing = _common.time_repeats(epoch, repeats=3, warmup=2)
    assert len(calls) == 5
    assert timing.items == [10, 10, 10] and len(timing.seconds) == 3
    summary = timing.summary()
    assert summary["rate_best"] >= summary["rate_median"] > 0
    assert summary["seconds_min"] == min(timing.seconds)
    with pytest.raises(ValueError, match="repeats"):
        _common.time_repeats(epoch, repeats=0)


def test_machine_info_and_json_round_trip(tmp_path: Path) -> None:
    info = _common.machine_info()
    for key in ("cpu_model", "usable_cores", "python", "packages", "tag"):
        assert key in info
    assert "/" not in _common.machine_tag()
    path = _common.write_json(tmp_path / "sub" / "r.json", {"machine": info, "x": [1.5]})
    assert json.loads(path.read_text())["x"] == [1.5]


def test_format_table_aligns_columns() -> None:
    table = _common.format_table(["name", "img/s"], [["a", "1"], ["longer", "100"]])
    lines = table.splitlines()
    assert len(lines) == 4 and len({len(line) for line in lines}) == 1


# --------------------------------------------------------------------------- _dataset


def test_build_jpeg_set_layout_and_sizes(tiny_set: Path) -> None:
    from PIL import Image

    files = _dataset.build_jpeg_set(tiny_set, n=TINY["images"], classes=2)
    assert [f.parent.name for f in files] == ["class_0", "class_1"] * 4
    assert all(f.name == f"img_{i:04d}.jpg" for i, f in enumerate(files))
    for f in files:
        with Image.open(f) as img:
            assert img.format == "JPEG" and img.mode == "RGB"
            assert 400 <= img.width <= 640
            assert 3 / 4 - 0.01 <= img.width / img.height <= 4 / 3 + 0.01


def test_build_jpeg_set_reuses_cache_and_rebuilds_on_change(tmp_path: Path) -> None:
    _skip_unless("PIL")
    first = _dataset.build_jpeg_set(tmp_path, n=3, classes=2, min_width=64, max_width=80)
    stamps = [f.stat().st_mtime_ns for f in first]
    again = _dataset.build_jpeg_set(tmp_path, n=3, classes=2, min_width=64, max_width=80)
    assert again == first and [f.stat().st_mtime_ns for f in again] == stamps
    other = _dataset.build_jpeg_set(tmp_path, n=2, seed=1, classes=1, min_width=64,
                                    max_width=80)
    assert sorted(tmp_path.rglob("*.jpg")) == sorted(other)  # no stale files left
    with pytest.raises(ValueError, match="quality"):
        _dataset.build_jpeg_set(tmp_path, n=1, quality=(90, 80))


# --------------------------------------------------------------------------- cpu_pipeline


def test_check_batch_rejects_wrong_output() -> None:
    _skip_unless("numpy")
    import numpy as np

    good = np.random.default_rng(0).uniform(-2, 2, (2, 3, 224, 224)).astype(np.float32)
    labels = np.zeros(2, np.int32)
    assert cpu_pipeline.check_batch("x", good, labels, 2)["images"][0] == [2, 3, 224, 224]
    with pytest.raises(cpu_pipeline.CheckFailed, match="expected"):
        cpu_pipeline.check_batch("x", good.transpose(0, 2, 3, 1), labels, 2)
    with pytest.raises(cpu_pipeline.CheckFailed, match="0-255"):
        cpu_pipeline.check_batch("x", good * 200, labels, 2)


def _run_tiny(system: str, data_dir: Path) -> dict[str, Any]:
    cfg = cpu_pipeline.BenchConfig(**TINY, data_dir=str(data_dir))
    return cpu_pipeline.run_system(system, cfg)


@pytest.mark.parametrize("system", cpu_pipeline.SYSTEMS)
def test_quick_run_of_each_system(system: str, tiny_set: Path) -> None:
    _skip_unless(*NEEDS[system])
    result = _run_tiny(system, tiny_set)
    if result["status"] == "skipped":
        api_ready = system == "streamflow" and _has_streamflow_api()
        if not api_ready:
            pytest.skip(result["reason"])
    assert result["status"] == "ok", result.get("traceback") or result["reason"]
    assert result["output"]["images"] == [[4, 3, 224, 224], "float32"]
    assert result["timing"]["items"] == [8]


def _has_streamflow_api() -> bool:
    try:
        import streamflow
    except Exception:
        return False
    return hasattr(streamflow, "pipeline_def")


def test_cli_quick_writes_json_and_table(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    _skip_unless("PIL")
    out = tmp_path / "r.json"
    systems = [s for s in ("torch", "dali") if all(_have(m) for m in NEEDS[s])] or ["dali"]
    code = cpu_pipeline.main(["--quick", "--no-isolate", "--images", "4", "--batch-size",
                              "4", "--systems", ",".join(systems), "--json", str(out),
                              "--data-dir", str(tmp_path / "data")])
    text = capsys.readouterr().out
    assert text.startswith("machine :") and "img/s median" in text
    payload = json.loads(out.read_text())
    assert code == 0, payload["results"]
    assert payload["benchmark"] == "cpu_pipeline" and payload["config"]["images"] == 4
    assert {r["system"] for r in payload["results"]} == set(systems)
    assert all(r["status"] in ("ok", "skipped") for r in payload["results"])


def test_isolated_worker_reports_back(tiny_set: Path) -> None:
    """The subprocess path: a worker that has to skip still reports a result."""
    cfg = cpu_pipeline.BenchConfig(**TINY, data_dir=str(tiny_set))
    result = cpu_pipeline.run_isolated("streamflow", cfg)
    assert result["system"] == "streamflow" and result["status"] in ("ok", "skipped")


# --------------------------------------------------------------------------- python_step


def test_python_step_streamflow_row(tiny_set: Path) -> None:
    import argparse
    import contextlib
    import io

    import python_step

    args = argparse.Namespace(worker="streamflow", data_dir=str(tiny_set), batch_size=4, threads=2, repeats=1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        python_step.worker(args)
    result = json.loads(out.getvalue().split("RESULT ", 1)[1])
    assert "error" not in result, result.get("error")
    assert result["with_step"]["items"] == [8] and result["without_step"]["items"] == [8]
    image = python_step.step(__import__("numpy").full((2, 2, 3), 100, "uint8"))
    assert int(image[0, 0, 0]) == int(python_step.GAMMA_LUT[100]) + 8


# --------------------------------------------------------------------------- augment_ops


def test_augment_ops_streamflow_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    _skip_unless("PIL")
    import argparse
    import contextlib
    import io

    import augment_ops

    monkeypatch.setattr(augment_ops, "HEIGHT", 48)
    monkeypatch.setattr(augment_ops, "WIDTH", 64)

    args = argparse.Namespace(worker="streamflow", batch_size=2, threads=1, repeats=1, batches=1,
                              ops="gaussian_blur s=2,trivial_augment_wide")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        augment_ops.worker(args)
    result = json.loads(out.getvalue().split("RESULT ", 1)[1])
    assert set(result["ops"]) == {"gaussian_blur s=2", "trivial_augment_wide"}
    assert all(v.get("items") == [2] for v in result["ops"].values()), result["ops"]
    assert result["numpy_blur"]["items"] == [2]
def test_decode_micro_quick_run(tmp_path: Path) -> None:
    _skip_unless("PIL", "numpy")
    import decode_micro
    out = tmp_path / "decode.json"
    assert decode_micro.main(["--quick", "--data-dir", str(tmp_path / "jpegs"), "--json", str(out)]) == 0
    result = json.loads(out.read_text())["results"]
    assert set(result) == {"streamflow", "pillow"}
    assert all(r["cpu_median"] > 0 and len(r["cpu_ms_per_image"]) == 1 for r in result.values())
