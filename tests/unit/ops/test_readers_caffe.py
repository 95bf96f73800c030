"""fn.readers.caffe and caffe2: DALI's outputs on the same LMDBs, raw images, label types, resume, bad records."""

from __future__ import annotations

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


@pytest.mark.parametrize("kind", ["caffe", "caffe2"])
def test_matches_dali(shards: dict, kind: str) -> None:
    read = getattr(fn.readers, kind)
    assert_matches_dali(lambda **kw: read(path=shards[kind], **kw), kind)


@pytest.mark.parametrize("kind", ["caffe", "caffe2"])
def test_equals_loose_file_pipeline(shards: dict, kind: str) -> None:
    files = [str(DATA / f) for f in W.REFERENCE_FILES]
    read = getattr(fn.readers, kind)
    assert_equals_loose_files(lambda: read(path=shards[kind]), files, [i % 3 for i in range(len(files))])


@pytest.mark.parametrize("kind", ["caffe", "caffe2"])
def test_resumes_exactly(shards: dict, kind: str) -> None:
    read = getattr(fn.readers, kind)
    assert_resumes_exactly(lambda **kw: read(path=shards[kind], **kw))


def test_caffe_raw_datum_and_missing_label(tmp_path: Path) -> None:
    pixels = np.arange(2 * 3 * 3, dtype=np.uint8)
    W.write_lmdb(tmp_path / "db", [W.caffe_datum(pixels.tobytes(), None, encoded=False, shape=(2, 3, 3)),
                                   W.caffe_datum(b"\x01\x02", 4, encoded=False, shape=(5, 5, 3))])
    with pipeline(lambda **kw: fn.readers.caffe(path=str(tmp_path / "db"), **kw)) as pipe:
        image, label = pipe.run()
        np.testing.assert_array_equal(image.at(0), pixels.reshape(2, 3, 3))
        assert label.at(0).shape == (0,)
        with pytest.raises(sf.PipelineError, match=r"db key '00000001'.*does not match its size 5x5x3"):
            pipe.run()
    with pipeline(lambda **kw: fn.readers.caffe(path=str(tmp_path / "db"), image_available=False, **kw)) as pipe:
        (label,) = pipe.run()
        assert label.at(0).dtype == np.int32


def test_caffe2_label_types_additional_inputs_and_bbox(tmp_path: Path) -> None:
    rec = W.caffe2_protos(
        W.caffe2_tensor(W.C2_BYTE, dims=[2, 2, 1], byte_data=b"\x01\x02\x03\x04"),
        W.caffe2_tensor(W.C2_INT32, ints=[0, 3]),
        W.caffe2_tensor(W.C2_FLOAT, floats=[0.5, 0.25]),
        W.caffe2_tensor(W.C2_INT64, int64s=[-5, 2**40]),
        W.caffe2_tensor(W.C2_INT32, ints=[1, 2, 3, 4]),
    )
    W.write_lmdb(tmp_path / "db", [rec])

    def read(**kw):
        return fn.readers.caffe2(path=str(tmp_path / "db"), **kw)

    with pipeline(lambda: read(label_type=3, num_labels=4, additional_inputs=1, bbox=True)) as pipe:
        image, label, extra, box = pipe.run()
    np.testing.assert_array_equal(image.at(0), [[[1], [2]], [[3], [4]]])
    np.testing.assert_array_equal(label.at(0), np.array([0.5, 0, 0, 0.25], np.float32))
    assert extra.at(0).dtype == np.int64 and extra.at(0).tolist() == [-5, 2**40]
    assert box.at(0).tolist() == [1, 2, 3, 4]
    with pipeline(lambda: read(label_type=1, num_labels=5)) as pipe:
        assert pipe.run()[1].at(0).tolist() == [1, 0, 0, 1, 0]
    with pipeline(lambda: read(label_type=2)) as pipe:
        assert pipe.run()[1].at(0).tolist() == [0, 3]
    with pipeline(lambda: read(label_type=1, num_labels=2)) as pipe, \
            pytest.raises(sf.PipelineError, match=r"label index out of bounds: \[0, 3\] \(num_labels: 2\)"):
        pipe.run()
    with pipeline(lambda: read(label_type=0)) as pipe, pytest.raises(sf.PipelineError, match="has 2 values"):
        pipe.run()


def test_corrupt_value_named_and_skipped(shards: dict, tmp_path: Path) -> None:
    values = [W.caffe_datum(b"\xff\xd8" + bytes(10), i) for i in range(4)]
    values[2] = b"\x22\x7f\x01"  # field 4 (data) claims 127 bytes, has 1
    W.write_lmdb(tmp_path / "db", values)
    assert_fails_then_skips(lambda **kw: fn.readers.caffe(path=str(tmp_path / "db"), **kw), "db key '00000002'",
                            r"db key '00000002'.*bad record.*runs past the end")


def test_remote_and_missing_databases_are_refused(tmp_path: Path) -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="must be local folders"):
        pipeline(lambda: fn.readers.caffe(path="s3://bucket/db"))
    with pytest.raises(sf.PipelineDefinitionError, match="cannot open LMDB database"):
        pipeline(lambda: fn.readers.caffe2(path=str(tmp_path / "nope")))
    with pytest.raises(sf.PipelineDefinitionError, match="label_type must be"):
        pipeline(lambda: fn.readers.caffe2(path=str(tmp_path), label_type=7))


@pytest.mark.parametrize("kind", ["caffe", "caffe2"])
def test_two_pipelines_read_one_database(shards: dict, kind: str) -> None:
    # LMDB refuses to open a database twice in a process: the readers share its environment.
    read = getattr(fn.readers, kind)

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        return tuple(read(path=shards[kind]))

    first, second = pipe(), pipe()
    with first:
        with second:
            a, b = first.run(), second.run()
            assert all(np.array_equal(np.asarray(x.at(i)), np.asarray(y.at(i)))
                       for x, y in zip(a, b) for i in range(2))
        again = first.run()  # the second pipeline's end does not close the first one's database
        assert len(again[0]) == 2
    with pipe() as third:  # every reader gone: the database opens again
        assert len(third.run()[0]) == 2
