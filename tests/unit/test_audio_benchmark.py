"""A tiny run of benchmarks/audio_pipeline.py, so the audio benchmark never rots."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_tiny_audio_benchmark(tmp_path: Path) -> None:
    pytest.importorskip("soundfile")
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/audio_pipeline.py", "--clips", "6", "--batch-size", "3", "--repeats", "1",
         "--systems", "streamflow,dali,numpy", "--data", str(tmp_path / "clips"), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.startswith("machine :")
    result = json.loads(out.read_text())
    status = {r["system"]: r["status"] for r in result["results"]}
    assert status["streamflow"] == "ok", result["results"]
    assert status["dali"] in ("ok", "skipped") and status["numpy"] in ("ok", "skipped")
    assert result["clips"] == 6 and result["audio_seconds"] > 6
