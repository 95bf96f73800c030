"""fn.readers.mxnet: DALI's outputs on the same RecordIO file, split records, multi-label, resume, bad records."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shard_writers as W
from helpers import DATA
from reader_checks import (
    assert_equals_loose_files,
    assert_fails_then_skips,
    assert_matches_dali,
    assert_resumes_exactly,
    pipeline,
)

import streamflow as sf
from streamflow import fn


def test_matches_dali(shards: dict) -> None:
    assert_matches_dali(lambda **kw: fn.readers.mxnet(path=[shards["rec"]], index_path=[shards["rec_idx"]], **kw), "mxnet")


def test_scanning_without_index(shards: dict) -> None:
    assert_matches_dali(lambda **kw: fn.readers.mxnet(path=shards["rec"], **kw), "mxnet")


def test_equals_loose_file_pipeline(shards: dict) -> None:
    files = [str(DATA / f) for f in W.REFERENCE_FILES]
    assert_equals_loose_files(lambda: fn.readers.mxnet(path=[shards["rec"]], index_path=[shards["rec_idx"]]),
                              files, [i % 3 for i in range(len(files))])


def test_resumes_exactly(shards: dict) -> None:
    assert_resumes_exactly(lambda **kw: fn.readers.mxnet(path=[shards["rec"]], index_path=[shards["rec_idx"]], **kw))


def test_split_records_multi_labels_and_several_files(tmp_path: Path) -> None:
    magic = (W.RECORDIO_MAGIC).to_bytes(4, "little")
    tricky = b"abcd" + magic + b"efgh" + magic + magic + b"ij"  # the magic word inside: split in 4 parts
    payloads = [W.irheader([1.0, 2.0, 3.0], 5) + tricky, W.irheader(7.0) + b"xyz"]
    W.write_recordio(tmp_path / "a.rec", None, payloads[:1])
    W.write_recordio(tmp_path / "b.rec", None, payloads[1:])
    assert magic not in (tmp_path / "a.rec").read_bytes()[8:-8][:4]
    size_a = (tmp_path / "a.rec").stat().st_size
    (tmp_path / "all.idx").write_text(f"0\t0\n1\t{size_a}\n")  # global offsets across the files, as DALI
    for kw in (dict(index_path=str(tmp_path / "all.idx")), {}):
        with pipeline(lambda **k: fn.readers.mxnet(path=[str(tmp_path / "a.rec"), str(tmp_path / "b.rec")],
                                                   **kw, **k), batch_size=2) as pipe:
            images, labels = pipe.run()
        assert bytes(images.at(0)) == tricky and bytes(images.at(1)) == b"xyz"
        assert labels.at(0).tolist() == [1.0, 2.0, 3.0] and labels.at(1).tolist() == [7.0]
        assert labels.at(0).dtype == np.float32


def test_bad_record_named_and_skipped(shards: dict, tmp_path: Path) -> None:
    data = bytearray(Path(shards["rec"]).read_bytes())
    offsets = [int(line.split()[1]) for line in Path(shards["rec_idx"]).read_text().splitlines()]
    data[offsets[1] : offsets[1] + 4] = b"JUNK"
    bad = tmp_path / "bad.rec"
    bad.write_bytes(bytes(data))

    def make(**kw):
        return fn.readers.mxnet(path=str(bad), index_path=shards["rec_idx"], **kw)

    bad_at = f"bad.rec at byte {offsets[1]}"
    assert_fails_then_skips(make, bad_at, re.escape(bad_at) + ".*wrong magic number")


def test_index_errors(shards: dict, tmp_path: Path) -> None:
    (tmp_path / "x.idx").write_text("0\t999999999\n")
    with pytest.raises(sf.PipelineDefinitionError, match="past the end of the .rec files"):
        pipeline(lambda: fn.readers.mxnet(path=shards["rec"], index_path=str(tmp_path / "x.idx")))
    with pytest.raises(sf.PipelineDefinitionError, match="index_path must name one .idx file"):
        pipeline(lambda: fn.readers.mxnet(path=shards["rec"], index_path=[shards["rec_idx"]] * 2))


def test_rec2idx_tool(shards: dict, tmp_path: Path) -> None:
    out = tmp_path / "made.idx"
    subprocess.run([sys.executable, "-m", "streamflow.tools.rec2idx", shards["rec"], str(out)], check=True)
    assert out.read_text() == Path(shards["rec_idx"]).read_text()
