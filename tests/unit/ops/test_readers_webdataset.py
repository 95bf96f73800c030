"""fn.readers.webdataset: DALI's outputs on webdataset.TarWriter shards, quirks, resume, bad archives, wds2idx."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shard_writers as W
from helpers import DATA
from reader_checks import (
    assert_equals_loose_files,
    assert_matches_dali,
    assert_resumes_exactly,
    dali_record,
    pipeline,
    run_described,
)

import streamflow as sf
from streamflow import fn, types


@pytest.fixture(scope="module")
def indexes(shards: dict, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = []
    folder = tmp_path_factory.mktemp("wdsidx")
    for tar in shards["wds"]:
        idx = folder / (Path(tar).stem + ".idx")
        subprocess.run([sys.executable, "-m", "streamflow.tools.wds2idx", tar, str(idx)], check=True)
        out.append(str(idx))
    return out


def test_matches_dali(shards: dict) -> None:
    assert_matches_dali(lambda **kw: fn.readers.webdataset(paths=shards["wds"], ext=["jpg", "cls"], **kw), "webdataset")


def test_matches_dali_with_index_files(shards: dict, indexes: list[str]) -> None:
    assert Path(indexes[0]).read_text().startswith("v1.2 4\n")
    assert_matches_dali(lambda **kw: fn.readers.webdataset(paths=shards["wds"], index_paths=indexes,
                                                           ext=["jpg", "cls"], **kw), "webdataset")


@pytest.mark.parametrize("case", ["empty", "skip", "case_insensitive"])
def test_missing_duplicate_and_case_quirks_match_dali(shards: dict, case: str) -> None:
    args = {
        "empty": dict(ext=["jpg;png", "cls"]),
        "skip": dict(ext=["jpg;png", "cls"], missing_component_behavior="skip"),
        "case_insensitive": dict(ext=["jpg", "cls"], case_sensitive_extensions=False),
    }[case]
    want = dali_record()["quirks"][case]
    got = run_described(lambda **kw: fn.readers.webdataset(paths=[shards["quirks"]], **args, **kw), len(want))
    assert got == want


def test_missing_component_error_names_sample(shards: dict) -> None:
    with pytest.raises(sf.PipelineDefinitionError, match=r"sample 'b' of .*quirks.tar.*no component for ext 'cls'"):
        pipeline(lambda: fn.readers.webdataset(paths=[shards["quirks"]], ext=["jpg", "cls"],
                                               missing_component_behavior="error"))


def test_equals_loose_file_pipeline(shards: dict) -> None:
    files = [str(DATA / f) for f in W.REFERENCE_FILES]

    def make():
        data, cls = fn.readers.webdataset(paths=shards["wds"], ext=["jpg", "cls"])
        return data, cls

    got_labels = []
    with pipeline(lambda: fn.readers.webdataset(paths=shards["wds"], ext=["cls"])) as pipe:
        for _ in files:
            got_labels.append(int(bytes(pipe.run()[0].at(0)).decode()))
    assert got_labels == [i % 3 for i in range(len(files))]
    assert_equals_loose_files(make, files, [ord("0") + i % 3 for i in range(len(files))],
                              cast_label=lambda x: x.astype(np.int32))


def test_dtypes_view_the_bytes(tmp_path: Path) -> None:
    arr = np.arange(6, dtype=np.float32)
    W.write_wds(tmp_path / "a.tar", [("x", {"bin": arr.tobytes(), "odd": b"12345"})])
    with pipeline(lambda: fn.readers.webdataset(paths=[str(tmp_path / "a.tar")], ext=["bin"],
                                                dtypes=[types.FLOAT])) as pipe:
        np.testing.assert_array_equal(pipe.run()[0].at(0), arr)
    with pipeline(lambda: fn.readers.webdataset(paths=[str(tmp_path / "a.tar")], ext=["odd"],
                                                dtypes=types.INT16)) as pipe, \
            pytest.raises(sf.PipelineError, match=r"a.tar at byte \d+ \(sample 'x'\).*5 bytes, not a multiple of 2"):
        pipe.run()


def test_resumes_exactly(shards: dict) -> None:
    assert_resumes_exactly(lambda **kw: fn.readers.webdataset(paths=shards["wds"], ext=["jpg", "cls"], **kw))


def test_truncated_archive_is_a_read_error_naming_the_offset(shards: dict, indexes: list[str], tmp_path: Path) -> None:
    data = Path(shards["wds"][1]).read_bytes()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(data[: len(data) // 2])

    def make(**kw):
        return fn.readers.webdataset(paths=[str(cut)], index_paths=[indexes[1]], ext=["jpg", "cls"], **kw)

    with pipeline(make, batch_size=4) as pipe, pytest.raises(sf.PipelineError, match=r"cut.tar at byte \d+.*truncated"):
        pipe.run()
    with pipeline(make, batch_size=4, on_error="skip") as pipe:
        batch = pipe.run()
    assert len(batch[0]) == 4 and all("cut.tar" in s for s in batch.sources)
    with pytest.raises(sf.PipelineDefinitionError, match="cut.tar.*runs past the end"):
        pipeline(lambda: fn.readers.webdataset(paths=[str(cut)], ext=["jpg"]))


def test_not_a_tar_and_bad_arguments(shards: dict, tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"hello" * 200)
    with pytest.raises(sf.PipelineDefinitionError, match="junk.tar: bad tar header checksum at byte 0"):
        pipeline(lambda: fn.readers.webdataset(paths=[str(junk)], ext=["jpg"]))
    with pytest.raises(sf.PipelineDefinitionError, match="missing_component_behavior must be"):
        pipeline(lambda: fn.readers.webdataset(paths=shards["wds"], ext=["jpg"], missing_component_behavior="drop"))
    with pytest.raises(sf.PipelineDefinitionError, match="2 ext entries but 1 dtypes"):
        pipeline(lambda: fn.readers.webdataset(paths=shards["wds"], ext=["jpg", "cls"], dtypes=[types.UINT8]))
    with pytest.raises(sf.PipelineDefinitionError, match="2 paths but 1 index_paths"):
        pipeline(lambda: fn.readers.webdataset(paths=shards["wds"], ext=["jpg"], index_paths=[str(junk)]))
    (tmp_path / "bad.idx").write_text("v9 1\njpg 0 1\n")
    with pytest.raises(sf.PipelineDefinitionError, match="bad.idx: not a webdataset index"):
        pipeline(lambda: fn.readers.webdataset(paths=shards["wds"][:1], ext=["jpg"], index_paths=[str(tmp_path / "bad.idx")]))


def test_wds2idx_writes_what_dalis_tool_writes(shards: dict, indexes: list[str]) -> None:
    assert Path(indexes[0]).read_text() == dali_record()["tools"]["wds2idx"]
