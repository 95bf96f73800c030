"""fn.readers.numpy in pipelines, against np.load(path)[region].

Covers constant, relative and per-sample ROIs, roi_axes, the out-of-bounds
policies, dtypes/byte orders/Fortran order, shuffling and sharding, hostile
files (named in the error; skipped under on_error="skip"), concurrency of
the reads, the GPU device's CPU fallback, and a smoke run of the benchmark.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn
from streamflow.backend import gpu_count
from streamflow.errors import PipelineDefinitionError, PipelineError
from streamflow.fn.readers import numpy as read_numpy
from streamflow.io import npy as npy_io

BENCH_DIR = Path(__file__).resolve().parents[3] / "benchmarks"

DTYPES = ["<f4", ">f4", "<i2", ">i8", "|u1", "<f8", "|b1", "<c8", ">u2"]


def _array(i: int, shape=(9, 10, 11), dtype="<f4", order="C") -> np.ndarray:
    size = int(np.prod(shape))
    base = (np.arange(size, dtype=np.int64) * 7919 + i * 104729) % 251 - 100
    arr = base.reshape(shape).astype(dtype)
    return np.asarray(arr, order=order)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 arrays of shape (9, 10, 11): dtypes, byte orders, C/Fortran, versions 1-3,
    some in a sub-folder; plus a text file the filter must ignore."""
    root = tmp_path_factory.mktemp("npy_root")
    (root / "sub").mkdir()
    for i in range(12):
        arr = _array(i, dtype=DTYPES[i % len(DTYPES)], order="F" if i % 3 == 1 else "C")
        folder = root / "sub" if i >= 8 else root
        with open(folder / f"arr_{i:02d}.npy", "wb") as f:
            np.lib.format.write_array(f, arr, version=((1, 0), (2, 0), (3, 0))[i % 3])
    (root / "notes.txt").write_text("not an array")
    return root


def _paths(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*.npy"))


def _run(batch_size: int = 4, num_threads: int = 2, on_error: str = "raise", epochs: int = 1, **kw):
    """(arrays, sources) of ``epochs`` epochs of a pipeline around readers.numpy(**kw)."""

    @sf.pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=None, seed=3, on_error=on_error)
    def pipe():
        return read_numpy(**kw)

    arrays, sources, sizes = [], [], []
    with pipe() as p:
        for _ in range(epochs):
            for batch in p.iter():
                (out,) = batch
                arrays += [out.at(i) for i in range(len(out))]
                sources += list(batch.sources)
                sizes.append(len(out))
        stats = p.stats()
    return arrays, sources, sizes, stats


def _load(path: str) -> np.ndarray:
    a = np.load(path, allow_pickle=False)
    return a.astype(a.dtype.newbyteorder("="))


def _check(arrays, sources, region) -> None:
    assert arrays, "no samples"
    for arr, src in zip(arrays, sources):
        expected = _load(src)[region]
        assert arr.dtype == expected.dtype and arr.dtype.isnative
        assert arr.flags.c_contiguous
        np.testing.assert_array_equal(arr, expected)


# --------------------------------------------------------------------------- regions


def test_listing_is_sorted_recursive_and_filtered(data_root: Path) -> None:
    arrays, sources, sizes, _ = _run(file_root=data_root)
    assert sources == _paths(data_root)
    assert sizes == [4, 4, 4]
    _check(arrays, sources, ())


def test_files_relative_to_file_root(data_root: Path) -> None:
    names = ["sub/arr_09.npy", "arr_00.npy"]
    arrays, sources, _, _ = _run(file_root=data_root, files=names, batch_size=2)
    assert sources == [str(data_root / n) for n in names]
    _check(arrays, sources, ())


def test_constant_roi_all_dtypes_orders_versions(data_root: Path) -> None:
    arrays, sources, _, _ = _run(file_root=data_root, roi_start=(1, 2, 3), roi_end=(5, 6, 11))
    assert {a.shape for a in arrays} == {(4, 4, 8)}
    _check(arrays, sources, np.s_[1:5, 2:6, 3:11])


def test_roi_shape(data_root: Path) -> None:
    arrays, sources, _, _ = _run(file_root=data_root, roi_start=(0, 9, 2), roi_shape=(9, 1, 3))
    _check(arrays, sources, np.s_[0:9, 9:10, 2:5])


def test_relative_roi_rounds_half_up(data_root: Path) -> None:
    # extents 9, 10, 11: start 0.25*9=2.25->2, 0.25*10=2.5->3, 0.5*11=5.5->6
    # end (0.25+0.5)*9=6.75->7, 0.75*10=7.5->8, (0.5+0.5)*11=11
    arrays, sources, _, _ = _run(file_root=data_root, rel_roi_start=(0.25, 0.25, 0.5), rel_roi_shape=(0.5, 0.5, 0.5))
    _check(arrays, sources, np.s_[2:7, 3:8, 6:11])


def test_roi_axes(data_root: Path) -> None:
    # values for axis 2 first, then axis 0; axis 1 whole
    arrays, sources, _, _ = _run(file_root=data_root, roi_axes=(2, 0), roi_start=(4, 1), roi_end=(7, 3))
    _check(arrays, sources, np.s_[1:3, :, 4:7])
    arrays, sources, _, _ = _run(file_root=data_root, roi_axes=(-1,), rel_roi_end=(0.5,))
    _check(arrays, sources, np.s_[:, :, 0:6])


def test_pad_policy_fills_outside(data_root: Path) -> None:
    arrays, sources, _, _ = _run(
        file_root=data_root, roi_start=(-2, 8, 0), roi_end=(3, 12, 11), out_of_bounds_policy="pad", fill_value=7
    )
    for arr, src in zip(arrays, sources):
        a = _load(src)
        expected = np.full((5, 4, 11), 7, dtype=a.dtype)
        expected[2:5, 0:2, :] = a[0:3, 8:10, :]
        assert arr.shape == (5, 4, 11)
        np.testing.assert_array_equal(arr, expected)


def test_trim_to_shape_policy(data_root: Path) -> None:
    arrays, sources, _, _ = _run(
        file_root=data_root, roi_start=(-2, 8, 5), roi_end=(3, 12, 30), out_of_bounds_policy="trim_to_shape"
    )
    _check(arrays, sources, np.s_[0:3, 8:10, 5:11])


def test_out_of_bounds_error_names_the_file(data_root: Path) -> None:
    with pytest.raises(PipelineError, match=r"arr_00\.npy.*out of bounds"):
        _run(file_root=data_root, roi_start=(0, 0, 0), roi_end=(10, 1, 1))


def test_ragged_shapes_come_back_as_ragged_batches(tmp_path: Path) -> None:
    for i, shape in enumerate([(3, 4), (5, 4), (2, 7)]):
        np.save(tmp_path / f"{i}.npy", _array(i, shape=shape))
    arrays, sources, _, _ = _run(file_root=tmp_path, batch_size=3, roi_end=(2,), roi_axes=(0,))
    assert [a.shape for a in arrays] == [(2, 4), (2, 4), (2, 7)]
    _check(arrays, sources, np.s_[0:2])


# --------------------------------------------------------------------------- order, shards


def test_shuffle_and_shards_cover_the_data_set_once(data_root: Path) -> None:
    all_paths = _paths(data_root)
    seen: list[str] = []
    for shard in range(3):
        arrays, sources, _, _ = _run(
            file_root=data_root, random_shuffle=True, shard_id=shard, num_shards=3, roi_end=(2, 2, 2), batch_size=2
        )
        _check(arrays, sources, np.s_[0:2, 0:2, 0:2])
        assert sorted(sources) == all_paths[shard * 4 : shard * 4 + 4]
        seen += sources
    assert sorted(seen) == all_paths
    unshuffled = _run(file_root=data_root, roi_end=(1, 1, 1))[1]
    shuffled = _run(file_root=data_root, random_shuffle=True, roi_end=(1, 1, 1))[1]
    assert sorted(shuffled) == unshuffled and shuffled != unshuffled
    # two epochs: the shard moves on (no stick_to_shard), order reproducible
    two = _run(file_root=data_root, shard_id=0, num_shards=3, epochs=2, roi_end=(1, 1, 1))[1]
    assert two == all_paths[0:4] + all_paths[4:8]


def test_pad_last_batch_and_epoch_size(data_root: Path) -> None:
    _, sources, sizes, _ = _run(file_root=data_root, num_shards=5, shard_id=4, pad_last_batch=True, batch_size=2)
    paths = _paths(data_root)
    assert sources == paths[9:12] + [paths[11]]
    assert sizes == [2, 2]

    @sf.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return read_numpy(file_root=data_root, name="vols")

    with pipe() as p:
        assert p.epoch_size("vols") == 12


# --------------------------------------------------------------------------- per-sample ROI


def test_per_sample_relative_roi_from_random_uniform(data_root: Path) -> None:
    @sf.pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=11)
    def pipe():
        start = fn.random.uniform(range=(0.0, 0.5), shape=3)
        return read_numpy(file_root=data_root, rel_roi_start=start, roi_shape=(2, 3, 4)), start

    checked = 0
    with pipe() as p:
        for batch in p.iter():
            out, starts = batch
            for i, src in enumerate(batch.sources):
                rel = starts.at(i).astype(np.float32)
                s = [math.floor(float(r) * d + 0.5) for r, d in zip(rel, (9, 10, 11))]
                expected = _load(src)[s[0] : s[0] + 2, s[1] : s[1] + 3, s[2] : s[2] + 4]
                np.testing.assert_array_equal(out.at(i), expected)
                checked += 1
    assert checked == 12


def test_per_sample_absolute_roi_from_external_source(data_root: Path) -> None:
    starts = [np.array([i % 5, i % 3, 2 * (i % 4)], dtype=np.int32) for i in range(12)]
    batches = [starts[i : i + 4] for i in range(0, 12, 4)]

    @sf.pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def pipe():
        anchor = fn.external_source(source=batches)
        return read_numpy(file_root=data_root, roi_start=anchor, roi_shape=(3, 3, 3))

    arrays, sources = [], []
    with pipe() as p:
        for batch in p.iter():
            arrays += [batch[0].at(i) for i in range(len(batch[0]))]
            sources += batch.sources
    assert sources == _paths(data_root)
    for arr, src, s in zip(arrays, sources, starts):
        np.testing.assert_array_equal(arr, _load(src)[s[0] : s[0] + 3, s[1] : s[1] + 3, s[2] : s[2] + 3])


def test_per_sample_bad_value_is_a_sample_failure_naming_the_file(data_root: Path) -> None:
    @sf.pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def pipe():
        start = fn.random.uniform(range=(0.1, 0.9), shape=3)  # not integers: roi_start refuses
        return read_numpy(file_root=data_root, roi_start=start, roi_shape=(1, 1, 1))

    with pipe() as p, pytest.raises(PipelineError, match=r"arr_00\.npy.*must be integers"):
        p.run()


# --------------------------------------------------------------------------- bad files


@pytest.fixture()
def root_with_bad_files(tmp_path: Path) -> Path:
    for i in range(6):
        np.save(tmp_path / f"good_{i}.npy", _array(i, shape=(6, 6)))
    # hostile header: claims a huge shape; truncated data; an object array (pickle)
    (tmp_path / "good_1.npy").write_bytes(
        b"\x93NUMPY\x01\x00v\x00" + b"{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }".ljust(118) + b"\n"
    )
    data = (tmp_path / "good_3.npy").read_bytes()
    (tmp_path / "good_3.npy").write_bytes(data[:-20])
    np.save(tmp_path / "good_4.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    return tmp_path


@pytest.mark.parametrize("per_sample", [False, True])
def test_hostile_file_is_named_in_the_error(root_with_bad_files: Path, per_sample: bool) -> None:
    @sf.pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def pipe():
        end = fn.random.uniform(values=[4.0]) if per_sample else 4
        return read_numpy(file_root=root_with_bad_files, roi_end=end, roi_axes=0)

    with pipe() as p, pytest.raises(PipelineError) as info:
        p.run()
    assert "good_1.npy" in str(info.value)
    assert "lying header" in str(info.value) or "truncated" in str(info.value)


@pytest.mark.parametrize("per_sample", [False, True])
def test_skip_policy_keeps_full_batches(root_with_bad_files: Path, per_sample: bool) -> None:
    good = {str(root_with_bad_files / f"good_{i}.npy") for i in (0, 2, 5)}

    @sf.pipeline_def(batch_size=3, num_threads=1, device_id=None, on_error="skip", seed=2)
    def pipe():
        end = fn.random.uniform(values=[4.0]) if per_sample else 4
        return read_numpy(file_root=root_with_bad_files, roi_end=end, roi_axes=0)

    with pipe() as p:
        sources, sizes = [], []
        for batch in p.iter():
            (out,) = batch
            sizes.append(len(out))
            sources += batch.sources
            for i, src in enumerate(batch.sources):
                np.testing.assert_array_equal(out.at(i), _load(src)[:4])
        skipped = p.stats().skipped
    assert sizes == [3, 3]
    assert set(sources) <= good
    assert {Path(s.source).name for s in skipped} >= {"good_1.npy", "good_3.npy", "good_4.npy"}
    reasons = " ".join(s.reason for s in skipped)
    assert "pickle" in reasons or "object" in reasons


# --------------------------------------------------------------------------- engine behaviour


def test_reads_of_a_batch_run_concurrently(data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four reads of one batch must be in flight together (a barrier of 4 would time out)."""
    barrier = threading.Barrier(4, timeout=10)
    original = npy_io._cpu_all

    def waiting(*args):
        barrier.wait()
        return original(*args)

    monkeypatch.setattr(npy_io, "_cpu_all", waiting)
    arrays, sources, _, _ = _run(file_root=data_root, batch_size=4, num_threads=2, roi_end=(2, 2, 2))
    _check(arrays, sources, np.s_[0:2, 0:2, 0:2])


def test_region_reads_little(tmp_path: Path) -> None:
    np.save(tmp_path / "big.npy", _array(0, shape=(64, 64, 64)))
    stats_before = npy_io.read_stats.snapshot()
    arrays, sources, _, _ = _run(file_root=tmp_path, batch_size=1, roi_start=(10, 10, 10), roi_shape=(8, 8, 8))
    _check(arrays, sources, np.s_[10:18, 10:18, 10:18])
    after = npy_io.read_stats.snapshot()
    read = after["bytes_read"] - stats_before["bytes_read"]
    useful = after["useful_bytes"] - stats_before["useful_bytes"]
    region = 8 * 8 * 8 * 4
    assert useful >= region and useful % region == 0  # the engine may prefetch the next epoch
    assert read <= (1.1 * region + 4096) * (useful // region)


def test_gpu_device_needs_a_gpu_or_falls_back(data_root: Path) -> None:
    @sf.pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def strict():
        return read_numpy(file_root=data_root, device="gpu", roi_end=(2, 2, 2))

    with pytest.raises(PipelineDefinitionError, match="readers.numpy"):
        strict().build()
    if gpu_count() > 0:  # pragma: no cover - no GPU where this was written
        pytest.skip("the CPU fallback only happens without a GPU")

    for per_sample in (False, True):
        pipe = _gpu_auto_pipeline(data_root, per_sample)
        with pytest.warns(sf.CpuFallbackWarning):
            pipe.build()
        with pipe:
            batch = pipe.run()
        (out,) = batch
        _check([out.at(i) for i in range(len(out))], batch.sources, np.s_[0:2, 0:2, 0:2])


def _gpu_auto_pipeline(data_root: Path, per_sample: bool) -> sf.Pipeline:
    @sf.pipeline_def(batch_size=4, num_threads=1, device_id="auto")
    def auto():
        end = fn.random.uniform(values=[2.0], shape=3) if per_sample else (2, 2, 2)
        return read_numpy(file_root=data_root, device="gpu", roi_end=end)

    return auto()


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"roi_start": (1, 1, 1), "rel_roi_start": (0.1, 0.1, 0.1)}, "mutually exclusive"),
        ({"roi_end": (2, 2, 2), "roi_shape": (1, 1, 1)}, "mutually exclusive"),
        ({"roi_start": (1.5, 1, 1)}, "integers"),
        ({"roi_start": (1, 1), "roi_end": (2, 2, 2)}, "same number of values"),
        ({"roi_start": (1, 1), "roi_axes": (0, 0)}, "repeats an axis"),
        ({"roi_shape": (-1, 1, 1)}, "negative"),
        ({"out_of_bounds_policy": "wrap"}, "out_of_bounds_policy"),
        ({"device": "mixed"}, "device"),
        ({"file_filter": "*.nothing"}, "no files"),
    ],
)
def test_definition_errors(data_root: Path, kw: dict, match: str) -> None:
    with pytest.raises(PipelineDefinitionError, match=match):
        read_numpy(file_root=data_root, **kw)


def test_missing_root_and_per_sample_roi_axes(tmp_path: Path, data_root: Path) -> None:
    with pytest.raises(PipelineDefinitionError, match="not a directory"):
        read_numpy(file_root=tmp_path / "nope")
    with pytest.raises(PipelineDefinitionError, match="needs file_root or files"):
        read_numpy()

    @sf.pipeline_def(batch_size=1, device_id=None)
    def pipe():
        return read_numpy(file_root=data_root, roi_start=(1,), roi_axes=fn.random.uniform(values=[0.0]))

    with pytest.raises(PipelineDefinitionError, match="roi_axes must be constant"):
        pipe()


# --------------------------------------------------------------------------- benchmark smoke


def test_benchmark_quick_mode(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        import numpy_roi
    finally:
        sys.path.remove(str(BENCH_DIR))
    out = tmp_path / "result.json"
    code = numpy_roi.main(["--quick", "--data-dir", str(tmp_path / "data"), "--output", str(out)])
    assert code == 0
    result = json.loads(out.read_text())
    rows = result["results"]
    assert {r["method"] for r in rows} >= {"streamflow.read_npy", "np.load(mmap)"}
    for r in rows:
        if r["method"] == "streamflow.read_npy":
            assert r["amplification"] <= 1.1 + 4096 * r["reads"] / r["region_bytes"] + 1e-9
            assert r["correct"]
    assert os.path.exists(out)
