"""fn.io.file.read: files named by pipeline data (UTF-8 bytes, as DALI takes them), local and remote."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import GOOD_JPEGS

import streamflow as sf
from streamflow import fn


def encode(path: str) -> np.ndarray:
    return np.frombuffer(path.encode(), dtype=np.uint8)


def run(paths: list[str], on_error: str = "raise") -> sf.Batch:
    @sf.pipeline_def(batch_size=len(paths), num_threads=2, seed=1, on_error=on_error)
    def pipe():
        return fn.io.file.read(fn.external_source([[encode(p) for p in paths]]), dont_use_mmap=True)

    with pipe() as p:
        return p.run()


def test_reads_the_named_files() -> None:
    paths = [str(p) for p in GOOD_JPEGS[:3]]
    (data,) = run(paths)
    for i, p in enumerate(paths):
        assert data.at(i).dtype == np.uint8 and data.at(i).tobytes() == Path(p).read_bytes()


def test_int8_paths_as_dalis_examples_encode_them() -> None:
    """DALI's examples encode paths with np.frombuffer(path.encode(), dtype=np.int8); DALI reads those too."""
    path = str(GOOD_JPEGS[0])

    @sf.pipeline_def(batch_size=1, num_threads=1, seed=1)
    def pipe():
        return fn.io.file.read(fn.external_source([[np.frombuffer(path.encode(), dtype=np.int8)]]))

    with pipe() as p:
        (data,) = p.run()
    assert data.at(0).tobytes() == Path(path).read_bytes()


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(sf.PipelineError, match=r"nope.bin.*file not found"):
        run([str(GOOD_JPEGS[0]), str(tmp_path / "nope.bin")])


def test_wrong_input_type_is_refused() -> None:
    @sf.pipeline_def(batch_size=1, num_threads=1, seed=1)
    def pipe():
        return fn.io.file.read(fn.external_source([[np.zeros((2, 2), np.float32)]]))

    with pipe() as p, pytest.raises(sf.PipelineError, match="expects a file path as a 1-D uint8 or int8 array"):
        p.run()
    with pytest.raises(sf.PipelineDefinitionError, match="io.file.read: filepaths must be per-sample data"):
        fn.io.file.read("x.jpg")  # type: ignore[arg-type]


def test_reads_http_urls(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    from object_servers import http_server

    (tmp_path / "a.bin").write_bytes(b"remote bytes")
    with http_server(tmp_path) as web:
        (data,) = run([f"{web.url}/a.bin"])
    assert data.at(0).tobytes() == b"remote bytes"
