"""fn.readers.tfrecord: DALI's outputs on the same files, loose-file equality, resume, bad records, index tool."""

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
import streamflow.tfrecord as tfrec
from streamflow import fn

FEATURES = {
    "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
    "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
    "image/key": tfrec.FixedLenFeature([], tfrec.string, ""),
}


def reader(shards: dict, index: bool = True, **kw):
    out = fn.readers.tfrecord(path=shards["tfrecord"], index_path=shards["tfrecord_idx"] if index else None,
                              features=FEATURES, **kw)
    return tuple(out[k] for k in FEATURES)


def test_matches_dali(shards: dict) -> None:
    assert_matches_dali(lambda **kw: reader(shards, **kw), "tfrecord")


def test_scanning_without_index_finds_the_same_records(shards: dict) -> None:
    assert_matches_dali(lambda **kw: reader(shards, index=False, **kw), "tfrecord")


def test_equals_loose_file_pipeline(shards: dict) -> None:
    files = [str(DATA / f) for f in W.REFERENCE_FILES]
    assert_equals_loose_files(lambda: reader(shards)[:2], files, [i % 3 for i in range(len(files))])


def test_resumes_exactly(shards: dict) -> None:
    assert_resumes_exactly(lambda **kw: reader(shards, **kw))


def test_feature_kinds_and_missing_features(tmp_path: Path) -> None:
    recs = [W.example({"f": np.array([1.5, 2.5], np.float32), "i": np.array([-3, 2**40])}),
            W.example({"f": np.array([1.0, 2.0, 3.0, 4.0], np.float32)})]
    W.write_tfrecord(tmp_path / "x.tfrecord", recs)
    feats = {"f": tfrec.VarLenFeature([2], tfrec.float32, 0.0), "i": tfrec.VarLenFeature(tfrec.int64, 7),
             "fx": tfrec.FixedLenFeature([3], tfrec.float32, 9.0)}

    def make(**kw):
        out = fn.readers.tfrecord(path=str(tmp_path / "x.tfrecord"), features={**feats, "fx": feats["fx"]}, **kw)
        return out["f"], out["i"]

    with pipeline(make, batch_size=2) as pipe:
        f, i = pipe.run()
    np.testing.assert_array_equal(f.at(0), [[1.5, 2.5]])
    np.testing.assert_array_equal(f.at(1), [[1.0, 2.0], [3.0, 4.0]])
    assert i.at(0).dtype == np.int64 and i.at(0).tolist() == [-3, 2**40]
    assert i.at(1).shape == () and int(i.at(1)) == 7  # missing: a 0-d array (DALI: 0-d, uninitialised)


def test_fixed_shape_fills_with_default_and_refuses_overflow(tmp_path: Path) -> None:
    W.write_tfrecord(tmp_path / "x.tfrecord", [W.example({"f": np.array([1.5, 2.5], np.float32)}),
                                               W.example({"f": np.arange(4, dtype=np.float32)})])

    def make(**kw):
        return fn.readers.tfrecord(path=str(tmp_path / "x.tfrecord"),
                                   features={"f": tfrec.FixedLenFeature([3], tfrec.float32, 9.0)}, **kw)["f"]

    with pipeline(make) as pipe:
        np.testing.assert_array_equal(pipe.run()[0].at(0), [1.5, 2.5, 9.0])
        with pytest.raises(sf.PipelineError, match=r"x.tfrecord at byte \d+.*4 values, more than its shape \[3\]"):
            pipe.run()


def test_corrupt_record_is_named_and_skipped(shards: dict, tmp_path: Path) -> None:
    data = bytearray(Path(shards["tfrecord"][0]).read_bytes())
    offsets = [int(line.split()[0]) for line in Path(shards["tfrecord_idx"][0]).read_text().splitlines()]
    bad_at = offsets[2]
    data[bad_at + 12 : bad_at + 40] = b"\xff" * 28  # garbage inside the Example proto
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(data))

    def make(**kw):
        out = fn.readers.tfrecord(path=str(bad), index_path=shards["tfrecord_idx"][0], features=FEATURES, **kw)
        return out["image/encoded"], out["image/class/label"]

    where = f"bad.tfrecord at byte {bad_at}"
    assert_fails_then_skips(make, where, re.escape(where) + ".*not a tf.train.Example")


def test_truncated_file_names_file_and_offset(shards: dict, tmp_path: Path) -> None:
    data = Path(shards["tfrecord"][0]).read_bytes()
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(data[: len(data) - 100])
    last = Path(shards["tfrecord_idx"][0]).read_text().splitlines()[-1].split()[0]

    def make(**kw):
        return fn.readers.tfrecord(path=str(cut), index_path=shards["tfrecord_idx"][0], features=FEATURES, **kw)[
            "image/encoded"]

    with pipeline(make, batch_size=4) as pipe, pytest.raises(sf.PipelineError, match=rf"cut.tfrecord at byte {last}.*truncated"):
        pipe.run()
    with pytest.raises(sf.PipelineDefinitionError, match="cut.tfrecord: the record at byte"):
        pipeline(lambda **kw: fn.readers.tfrecord(path=str(cut), features=FEATURES)["image/key"])


def test_argument_errors(shards: dict, tmp_path: Path) -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="2 path but 1 index_path"):
        pipeline(lambda: fn.readers.tfrecord(path=shards["tfrecord"], index_path=shards["tfrecord_idx"][:1],
                                             features=FEATURES)["image/key"])
    with pytest.raises(sf.PipelineDefinitionError, match="tensors of strings are not supported"):
        pipeline(lambda: fn.readers.tfrecord(path=shards["tfrecord"], features={
            "k": tfrec.VarLenFeature(tfrec.string, "")})["k"])
    with pytest.raises(sf.PipelineDefinitionError, match="features must be a non-empty dict"):
        pipeline(lambda: fn.readers.tfrecord(path=shards["tfrecord"], features={})["k"])
    (tmp_path / "bad.idx").write_text("0 x\n")
    with pytest.raises(sf.PipelineDefinitionError, match=r"bad.idx:1: expected 'offset size'"):
        pipeline(lambda: fn.readers.tfrecord(path=shards["tfrecord"][0], index_path=str(tmp_path / "bad.idx"),
                                             features=FEATURES)["image/key"])
    with pytest.raises(sf.PipelineDefinitionError, match="cannot read index_path.*nope.idx"):
        pipeline(lambda: fn.readers.tfrecord(path=shards["tfrecord"][0], index_path=str(tmp_path / "nope.idx"),
                                             features=FEATURES)["image/key"])


def test_feature_constructors_validate() -> None:
    with pytest.raises(ValueError, match="feature type must be"):
        tfrec.FixedLenFeature([], "text", "")
    with pytest.raises(ValueError, match="must be a number"):
        tfrec.FixedLenFeature([1], tfrec.int64, "x")
    with pytest.raises(TypeError, match="VarLenFeature takes"):
        tfrec.VarLenFeature(tfrec.int64)
    assert tfrec.VarLenFeature([4], tfrec.float32, 0).partial_shape == (4,)


def test_tfrecord2idx_tool_writes_dalis_index(shards: dict, tmp_path: Path) -> None:
    out = tmp_path / "made.idx"
    subprocess.run([sys.executable, "-m", "streamflow.tools.tfrecord2idx", shards["tfrecord"][1], str(out)], check=True)
    assert out.read_text() == Path(shards["tfrecord_idx"][1]).read_text()


def test_tfrecord2idx_matches_dalis_tool(shards: dict, tmp_path: Path) -> None:
    from reader_checks import dali_record

    out = tmp_path / "made.idx"
    subprocess.run([sys.executable, "-m", "streamflow.tools.tfrecord2idx", shards["tfrecord"][0], str(out)], check=True)
    assert out.read_text() == dali_record()["tools"]["tfrecord2idx"]
