"""A tiny run of benchmarks/shard_readers.py (streamflow rows, local and from moto's S3), so it never rots."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("PIL")
pytest.importorskip("s3fs")
pytest.importorskip("moto")
pytest.importorskip("webdataset")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import shard_readers


def test_tiny_run_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    shard_readers.main(["--images", "8", "--shards", "2", "--batch-size", "4", "--threads", "1", "--repeats", "1",
                        "--systems", "sf-wds,sf-tfrecord-s3", "--data-dir", str(tmp_path), "--output", str(out)])
    results = json.loads(out.read_text())["results"]
    assert {k: v["status"] for k, v in results.items()} == {"sf-wds": "ok", "sf-tfrecord-s3": "ok"}
    assert results["sf-wds"]["items"] == [8] and results["sf-tfrecord-s3"]["items"] == [8]
