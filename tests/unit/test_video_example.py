"""``examples/video_reader.py`` (DALI's video reader and sequence examples, imports changed) runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_video_reader_example() -> None:
    pytest.importorskip("av")
    out = subprocess.run(
        [sys.executable, "examples/video_reader.py", "--iterations", "2"], cwd=ROOT, capture_output=True, text=True,
        timeout=240, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.stdout.count("(2, 8, 96, 128, 3) uint8") == 2
    assert "label " in out.stdout and "timestamps 0." in out.stdout
    assert "first frames (2, 96, 128, 3)" in out.stdout
