"""``examples/dynamic_mode.py`` runs (so it never rots)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_dynamic_mode_example() -> None:
    out = subprocess.run([sys.executable, "examples/dynamic_mode.py"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "3, 224, 224) float32" in out.stdout and "(64, 64, 3) uint8 layout HWC" in out.stdout
    assert "decoded: [(" in out.stdout
