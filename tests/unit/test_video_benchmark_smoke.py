"""A tiny run of ``benchmarks/video_pipeline.py`` so the benchmark never rots."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def test_video_benchmark_quick(tmp_path: Path) -> None:
    pytest.importorskip("av")
    import video_pipeline

    payload = video_pipeline.main(["--quick", "--output", str(tmp_path / "out.json")])
    rows = {(r["codec"], r["order"], r["system"]): r for r in payload["rows"]}
    for codec in ("h264", "vp9"):
        for order in ("sequential", "shuffled"):
            assert rows[(codec, order, "streamflow")]["rate_median"] > 0
            assert rows[(codec, order, "pyav loop")]["items"] == rows[(codec, order, "streamflow")]["items"]
    assert (tmp_path / "out.json").exists()
