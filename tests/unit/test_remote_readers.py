"""Every reader from a real S3 server (moto's, on 127.0.0.1) and a local HTTP server: same samples
as from local files (and as DALI's), bounded concurrency, read-ahead, retries, errors naming the URL."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

import shard_writers as W
from helpers import DATA
from object_servers import http_server, moto_s3
from reader_checks import assert_matches_dali, assert_resumes_exactly, pipeline, run_described

import streamflow as sf
import streamflow.tfrecord as tfrec
from streamflow import fn
from streamflow.errors import ReadError
from streamflow.io import remote

FEATURES = {
    "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
    "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
    "image/key": tfrec.FixedLenFeature([], tfrec.string, ""),
}


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMFLOW_REMOTE_RETRY_DELAY", "0.01")
    monkeypatch.setenv("STREAMFLOW_REMOTE_RETRIES", "3")


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("remote")
    out = W.build_reference(root, DATA)
    out["root"] = root
    for tar in out["wds"]:
        import subprocess
        import sys

        subprocess.run([sys.executable, "-m", "streamflow.tools.wds2idx", tar, tar[:-4] + ".idx"], check=True)
    # a class-folder tree and .npy files for readers.file and readers.numpy
    for i, name in enumerate(W.REFERENCE_FILES):
        cls = root / "tree" / f"c{i % 3}"
        cls.mkdir(parents=True, exist_ok=True)
        (cls / f"{i:02d}_{Path(name).name}").write_bytes((DATA / name).read_bytes())
    (root / "npy").mkdir()
    for i in range(4):
        np.save(root / "npy" / f"a{i}.npy", np.arange(12 * (i + 1), dtype=np.float32).reshape(-1, 3) * (i + 1))
    return out


@pytest.fixture(scope="module")
def s3(ref: dict):
    fsspec = pytest.importorskip("fsspec")
    with moto_s3():
        fs = fsspec.filesystem("s3")
        fs.mkdir("data")
        root: Path = ref["root"]
        for path in sorted(root.rglob("*")):
            if path.is_file() and "lmdb" not in str(path):
                fs.pipe(f"data/{path.relative_to(root)}", path.read_bytes())
        fs.invalidate_cache()
        yield lambda local: f"s3://data/{Path(local).relative_to(root)}"


def _urls(s3, paths):
    return [s3(p) for p in paths]


def test_webdataset_tfrecord_mxnet_from_s3_match_dali(s3, ref: dict) -> None:
    wds = _urls(s3, ref["wds"])
    idx = [u[:-4] + ".idx" for u in wds]
    assert_matches_dali(lambda **kw: fn.readers.webdataset(paths=wds, ext=["jpg", "cls"], **kw), "webdataset")
    assert_matches_dali(lambda **kw: fn.readers.webdataset(paths=wds, index_paths=idx, ext=["jpg", "cls"], **kw),
                        "webdataset")
    tf, tfi = _urls(s3, ref["tfrecord"]), _urls(s3, ref["tfrecord_idx"])

    def tfr(**kw):
        out = fn.readers.tfrecord(path=tf, index_path=tfi, features=FEATURES, **kw)
        return tuple(out[k] for k in FEATURES)

    assert_matches_dali(tfr, "tfrecord")
    assert_matches_dali(lambda **kw: fn.readers.mxnet(path=s3(ref["rec"]), index_path=s3(ref["rec_idx"]), **kw),
                        "mxnet")


def test_resume_from_s3(s3, ref: dict) -> None:
    wds = _urls(s3, ref["wds"])
    assert_resumes_exactly(lambda **kw: fn.readers.webdataset(paths=wds, ext=["jpg", "cls"], **kw))


def test_readers_file_from_s3_root_list_and_files(s3, ref: dict) -> None:
    root: Path = ref["root"]
    local = run_described(lambda **kw: fn.readers.file(file_root=str(root / "tree"), **kw), 8)
    remote_root = run_described(lambda **kw: fn.readers.file(file_root="s3://data/tree", **kw), 8)
    assert remote_root == local
    files = sorted(str(p.relative_to(root / "tree")) for p in (root / "tree").rglob("*.jpg"))
    listing = root / "list.txt"
    listing.write_text("".join(f"tree/{f} {i}\n" for i, f in enumerate(files)))
    import fsspec

    fsspec.filesystem("s3").pipe("data/list.txt", listing.read_bytes())
    by_list = run_described(lambda **kw: fn.readers.file(file_list="s3://data/list.txt", **kw), 8)
    by_files = run_described(lambda **kw: fn.readers.file(files=[f"s3://data/tree/{f}" for f in files], **kw), 8)
    assert [s[0] for s in by_list] == [s[0] for s in by_files] == [s[0] for s in local]


def test_readers_numpy_from_s3(s3, ref: dict) -> None:
    root: Path = ref["root"]
    local = run_described(lambda **kw: fn.readers.numpy(file_root=str(root / "npy"), **kw), 4)
    remote_ = run_described(lambda **kw: fn.readers.numpy(file_root="s3://data/npy", **kw), 4)
    assert remote_ == local
    roi = dict(roi_start=[1, 1], roi_shape=[2, 2], out_of_bounds_policy="pad")
    assert run_described(lambda **kw: fn.readers.numpy(file_root="s3://data/npy", **roi, **kw), 4) == \
        run_described(lambda **kw: fn.readers.numpy(file_root=str(root / "npy"), **roi, **kw), 4)


def test_missing_key_is_named(s3, ref: dict) -> None:
    with pytest.raises(sf.PipelineDefinitionError, match=r"s3://data/nope.tar.*not found"):
        pipeline(lambda: fn.readers.webdataset(paths=["s3://data/nope.tar"], ext=["jpg"]))
    with pipeline(lambda **kw: fn.readers.file(files=["s3://data/tree/c0/00_hopper.jpg", "s3://data/gone.jpg"], **kw),
                  batch_size=2) as pipe, pytest.raises(sf.PipelineError, match=r"s3://data/gone.jpg.*not found"):
        pipe.run()


def test_object_deleted_after_definition_fails_its_samples(s3, ref: dict) -> None:
    import fsspec

    fs = fsspec.filesystem("s3")
    fs.pipe("data/tmp/x.tar", Path(ref["wds"][0]).read_bytes())

    def make(**kw):
        return fn.readers.webdataset(paths=["s3://data/tmp/x.tar"], ext=["jpg"], **kw)

    pipe = pipeline(make, batch_size=2)
    fs.rm("data/tmp/x.tar")
    with pipe, pytest.raises(sf.PipelineError, match=r"s3://data/tmp/x.tar at byte \d+.*not found"):
        pipe.run()


# --- HTTP: retries, permanent errors, concurrency, read-ahead -------------------------------------
@pytest.fixture
def web(ref: dict):
    with http_server(ref["root"]) as server:
        yield server


def test_http_reader_retries_transient_errors(web, ref: dict) -> None:
    name = Path(ref["wds"][0]).name
    web.fail[f"/{name}"] = (503, 2)  # the first two requests of the archive fail
    url = f"{web.url}/{name}"
    got = run_described(lambda **kw: fn.readers.webdataset(paths=[url], ext=["jpg", "cls"], **kw), 4)
    want = run_described(lambda **kw: fn.readers.webdataset(paths=[ref["wds"][0]], ext=["jpg", "cls"], **kw), 4)
    assert got == want and web.requests[f"/{name}"] >= 3


def test_http_permanent_errors_name_the_url(web, ref: dict) -> None:
    name = Path(ref["tfrecord"][0]).name
    web.fail[f"/{name}"] = (403, -1)
    with pytest.raises(sf.PipelineDefinitionError, match=rf"{web.url}/{name}.*access denied \(HTTP 403"):
        pipeline(lambda: fn.readers.tfrecord(path=f"{web.url}/{name}", features=FEATURES)["image/key"])
    assert web.requests[f"/{name}"] <= 2  # fsspec tries HEAD, then GET; no retries of a permanent error
    with pytest.raises(sf.PipelineDefinitionError, match=rf"{web.url}/missing.idx.*not found"):
        pipeline(lambda: fn.readers.tfrecord(path=f"{web.url}/{name}", index_path=f"{web.url}/missing.idx",
                                             features=FEATURES)["image/key"])


def test_http_transient_errors_give_up_after_retries(web, ref: dict) -> None:
    name = Path(ref["tfrecord"][1]).name
    idx = Path(ref["tfrecord_idx"][1]).name
    url = f"{web.url}/{name}"
    pipe = pipeline(lambda **kw: fn.readers.tfrecord(path=url, index_path=f"{web.url}/{idx}", features=FEATURES,
                                                     **kw)["image/key"], batch_size=2, on_error="raise")
    web.fail[f"/{name}"] = (500, -1)
    with pipe, pytest.raises(sf.PipelineError, match=rf"{url} at byte 0.*failed after 4 attempts"):
        pipe.run()
    assert web.requests[f"/{name}"] >= 4


def test_concurrency_is_bounded_and_blocks_are_read_ahead(web, ref: dict, monkeypatch) -> None:
    monkeypatch.setenv("STREAMFLOW_REMOTE_CONCURRENCY", "2")
    monkeypatch.setenv("STREAMFLOW_REMOTE_BLOCK_MB", "0.0625")  # 64 KiB blocks
    files = [f"{web.url}/tree/c{i % 3}/{i:02d}_{Path(n).name}" for i, n in enumerate(W.REFERENCE_FILES)]
    with pipeline(lambda **kw: fn.readers.file(files=files, **kw), batch_size=8) as pipe:
        assert len(pipe.run()[0]) == 8
    assert web.max_in_flight <= 2
    tf = [f"{web.url}/{Path(p).name}" for p in ref["tfrecord"]]
    tfi = [f"{web.url}/{Path(p).name}" for p in ref["tfrecord_idx"]]
    before = sum(web.requests.get(f"/{Path(p).name}", 0) for p in ref["tfrecord"])
    with pipeline(lambda **kw: fn.readers.tfrecord(path=tf, index_path=tfi, features=FEATURES, **kw)["image/key"],
                  batch_size=8) as pipe:
        assert len(pipe.run()[0]) == 8
    sizes = sum(os.path.getsize(p) for p in ref["tfrecord"])
    requests = sum(web.requests.get(f"/{Path(p).name}", 0) for p in ref["tfrecord"]) - before
    assert requests <= -(-sizes // 65536) + 2  # whole blocks, not one request per record


def test_connection_refused_is_retried_then_named() -> None:
    from object_servers import free_port

    url = f"http://127.0.0.1:{free_port()}/x.tar"
    store = remote.RemoteStore(remote.RemoteSettings(retries=2, retry_delay=0.01))
    with pytest.raises(ReadError, match=rf"{url}: failed after 3 attempts"):
        asyncio.run(store.read_file(url))


def test_classification() -> None:
    assert remote.classify(FileNotFoundError("x")).startswith("not found")
    assert remote.classify(PermissionError("x")).startswith("access denied")
    assert remote.classify(ConnectionResetError()) is None
    assert remote.classify(TimeoutError()) is None
    assert remote.classify(OSError("SlowDown: reduce your request rate")) is None
    assert remote.classify(ValueError("bad")) == "ValueError: bad"
    assert remote.is_url("s3://b/k") and remote.is_url("https://h/x") and not remote.is_url("/a/b")
    assert not remote.is_url("file:///a/b") and not remote.is_url("C:/x")
