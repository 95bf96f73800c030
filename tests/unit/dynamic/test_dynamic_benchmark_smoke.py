"""A tiny run of ``benchmarks/dynamic_overhead.py``, so the benchmark never rots."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(BENCH_DIR))

import dynamic_overhead


def test_dynamic_overhead_runs(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    assert dynamic_overhead.main(["--quick", "--calls", "5", "--repeats", "1", "--size", "16", "--output", str(out)]) == 0
    result = json.loads(out.read_text())
    assert {"kernel", "operator", "dynamic", "dynamic batch", "aio", "pipeline"} <= set(result["results"])
    assert result["results"]["dynamic"]["median_us"] > 0
