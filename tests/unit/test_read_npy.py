"""read_npy / read_npy_sync against np.load(path)[region], padding and trimming included."""

from __future__ import annotations

import asyncio
import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamflow.errors import MissingDependencyError, PipelineDefinitionError, ReadError
from streamflow.io import ReadStats, RoiError, read_npy, read_npy_sync, read_stats
from streamflow.io import npy as npy_mod

NUMERIC = [
    "|b1", "|i1", "|u1", "<i2", ">i2", "<u2", ">u4", "<i4", ">i8", "<u8",
    "<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "<c8", ">c8", "<c16", ">c16",
]  # fmt: skip

_counter = itertools.count()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("npy")


def make_array(shape, dtype, order) -> np.ndarray:
    size = int(np.prod(shape))
    base = (np.arange(size) * 7919 % 251) - 100
    arr = base.reshape(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        arr = arr + 1j * np.asarray(base[::-1].reshape(shape), dtype=dtype)
    return np.asarray(arr, order=order)


def write(folder, arr: np.ndarray, version) -> str:
    path = os.path.join(folder, f"a{next(_counter)}.npy")
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=version, allow_pickle=False)
    return path


def reference(path: str, start, end, policy: str, fill):
    """Independent of streamflow: np.load, then np.pad / clipping."""
    a = np.load(path, allow_pickle=False)
    a = a.astype(a.dtype.newbyteorder("="))
    if policy == "error":
        if any(not (0 <= s < d) or e > d for s, e, d in zip(start, end, a.shape)):
            return RoiError
        return a[tuple(slice(s, e) for s, e in zip(start, end))]
    if policy == "trim_to_shape":
        sl = tuple(
            slice(min(max(s, 0), d), min(max(e, 0), d)) for s, e, d in zip(start, end, a.shape)
        )
        return a[sl]
    before = [max(0, -s) for s in start]
    after = [max(0, e - d) for e, d in zip(end, a.shape)]
    if a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        fill = min(
            max(int(np.floor(abs(fill) + 0.5)) * (1 if fill >= 0 else -1), info.min), info.max
        )
    if a.ndim == 0:
        return a
    padded = np.pad(a, list(zip(before, after)), mode="constant", constant_values=fill)
    return padded[tuple(slice(s + b, e + b) for s, e, b in zip(start, end, before))]


def check(out, expect) -> None:
    assert isinstance(out, np.ndarray)
    assert out.dtype == expect.dtype and out.dtype.isnative
    assert out.shape == expect.shape
    assert out.flags.c_contiguous
    assert np.array_equal(out, expect, equal_nan=expect.dtype.kind in "fc")


@st.composite
def cases(draw):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=ndim, max_size=ndim)))
    start, end = [], []
    for d in shape:
        s = draw(st.integers(-3, d + 3))
        e = draw(st.integers(s, d + 3))
        start.append(s)
        end.append(e)
    return {
        "shape": shape,
        "start": start,
        "end": end,
        "dtype": draw(st.sampled_from(NUMERIC)),
        "order": draw(st.sampled_from("CF")),
        "version": draw(st.sampled_from([(1, 0), (2, 0), (3, 0)])),
        "policy": draw(st.sampled_from(["error", "pad", "trim_to_shape"])),
        "form": draw(st.sampled_from(["dict", "slices", "shape", "axes"])),
        "fill": draw(st.sampled_from([0, 7, -1, 2.5, 300])),
    }


def roi_argument(c):
    start, end = c["start"], c["end"]
    if c["form"] == "dict":
        return {"roi_start": start, "roi_end": end}
    if c["form"] == "shape":
        return {"roi_start": start, "roi_shape": [e - s for s, e in zip(start, end)]}
    if c["form"] == "axes":  # same box, values listed in reversed axis order
        n = len(start)
        return {"roi_start": start[::-1], "roi_end": end[::-1], "roi_axes": list(range(n))[::-1]}
    return tuple(slice(s, e) for s, e in zip(start, end))


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(c=cases())
def test_matches_np_load(folder, c) -> None:
    arr = make_array(c["shape"], c["dtype"], c["order"])
    path = write(folder, arr, c["version"])
    expect = reference(path, c["start"], c["end"], c["policy"], c["fill"])
    kw = {"roi": roi_argument(c), "out_of_bounds_policy": c["policy"], "fill_value": c["fill"]}
    if expect is RoiError:
        with pytest.raises(RoiError, match="out of bounds") as info:
            read_npy_sync(path, **kw)
        assert path in str(info.value)
        return
    check(read_npy_sync(path, **kw), expect)
    # no gap read through, and every gap read through: same result
    check(read_npy_sync(path, **kw, max_gap=0, max_waste=0), expect)
    check(read_npy_sync(path, **kw, max_reads=1), expect)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(c=cases())
def test_async_matches_sync(folder, c) -> None:
    arr = make_array(c["shape"], c["dtype"], c["order"])
    path = write(folder, arr, c["version"])
    kw = {"roi": roi_argument(c), "out_of_bounds_policy": "pad", "fill_value": c["fill"]}
    check(asyncio.run(read_npy(path, **kw)), read_npy_sync(path, **kw))


def test_whole_array_without_roi(folder) -> None:
    for dtype, order in itertools.product(NUMERIC, "CF"):
        arr = make_array((3, 4, 5), dtype, order)
        path = write(folder, arr, None)
        ref = np.load(path)
        check(read_npy_sync(path), ref.astype(ref.dtype.newbyteorder("=")))


def test_zero_d(folder) -> None:
    path = write(folder, np.array(2.5, dtype=">f8"), (1, 0))
    out = read_npy_sync(path)
    assert out.shape == () and out == 2.5 and out.dtype == np.float64
    assert read_npy_sync(path, roi={"roi_start": [], "roi_end": []}).shape == ()
    assert read_npy_sync(path, roi=()).shape == ()


def test_relative_roi_and_axes(folder) -> None:
    arr = make_array((10, 20, 30), "<i4", "F")
    path = write(folder, arr, (1, 0))
    out = read_npy_sync(
        path, roi={"rel_roi_start": [0.25, 0.5], "rel_roi_shape": [0.5, 0.2], "roi_axes": [2, 0]}
    )
    # axis 2: [7.5 -> 8, (0.25 + 0.5) * 30 = 22.5 -> 23); axis 0: [5, 7); axis 1 whole
    check(out, arr[5:7, :, 8:23])


def test_fill_value_is_saturated_like_dali(folder) -> None:
    path = write(folder, np.arange(4, dtype="|u1"), (1, 0))
    kw = {"roi": (slice(-1, 5),), "out_of_bounds_policy": "pad"}
    assert read_npy_sync(path, **kw, fill_value=-5).tolist() == [0, 0, 1, 2, 3, 0]
    assert read_npy_sync(path, **kw, fill_value=300).tolist() == [255, 0, 1, 2, 3, 255]
    assert read_npy_sync(path, **kw, fill_value=2.5).tolist() == [3, 0, 1, 2, 3, 3]
    path = write(folder, np.zeros(2, dtype="|b1"), (1, 0))
    assert read_npy_sync(path, **kw, fill_value=2).tolist() == [
        True,
        False,
        False,
        True,
        True,
        True,
    ]
    path = write(folder, np.zeros(2, dtype=">f4"), (1, 0))
    out = read_npy_sync(path, roi=(slice(0, 3),), out_of_bounds_policy="pad", fill_value=np.nan)
    assert np.isnan(out[2]) and out.dtype == np.float32


def test_read_amplification_of_a_one_percent_region(folder) -> None:
    arr = np.arange(2048 * 2048, dtype="<f4").reshape(2048, 2048)  # 16 MiB
    path = write(folder, arr, (1, 0))
    for roi in [
        (slice(900, 1105), slice(300, 505)),  # a 205 x 205 tile
        (slice(1000, 1021),),  # 21 whole rows
    ]:
        stats = ReadStats()
        before = read_stats.snapshot()
        out = read_npy_sync(path, roi=roi, stats=stats)
        assert np.array_equal(out, arr[roi])
        useful = out.nbytes
        assert 0.009 <= useful / arr.nbytes <= 0.011
        assert stats.useful_bytes == useful and stats.files == 1
        assert stats.bytes_read / useful <= 1.1 + 4096 / useful
        assert stats.header_bytes <= 4096
        after = read_stats.snapshot()
        assert after["bytes_read"] - before["bytes_read"] == stats.bytes_read


def test_concurrent_split_reads(folder, monkeypatch) -> None:
    monkeypatch.setattr(npy_mod, "_CHUNK", 64 * 1024)
    monkeypatch.setattr(npy_mod, "MMAP_MIN_READS", 10**9)  # the pread path, even when cached
    arr = make_array((64, 64, 64), ">f8", "F")  # 2 MiB
    path = write(folder, arr, (2, 0))
    roi = (slice(3, 60), slice(0, 64), slice(10, 50))
    stats = ReadStats()
    with ThreadPoolExecutor(4) as ex:
        out = asyncio.run(read_npy(path, roi=roi, executor=ex, max_concurrency=4, stats=stats))
    check(out, arr[roi].astype("<f8"))
    assert stats.reads > 4  # split into many chunked preads
    out = asyncio.run(read_npy(path, max_concurrency=3))
    check(out, arr.astype("<f8"))


@pytest.mark.parametrize("cached", [True, False])
def test_fragmented_regions_use_the_page_cache_when_it_has_them(folder, monkeypatch, cached) -> None:
    arr = make_array((40, 50, 60), ">i4", "F")
    path = write(folder, arr, (1, 0))
    if not cached:  # pretend the pages are on disk only: coalesced preads
        monkeypatch.setattr(npy_mod, "_resident", lambda mapped, pages: False)
    roi = (slice(3, 37), slice(5, 45), slice(7, 50))
    stats = ReadStats()
    out = read_npy_sync(path, roi=roi, stats=stats, max_gap=0)
    check(out, arr[roi].astype("<i4"))
    padded = read_npy_sync(path, roi=(slice(-2, 37), slice(5, 45), slice(7, 62)), out_of_bounds_policy="pad",
                           fill_value=-1, max_gap=0)
    expected = np.full((39, 40, 55), -1, dtype="<i4")
    expected[2:, :, :53] = arr[0:37, 5:45, 7:60]
    check(padded, expected)
    assert stats.useful_bytes == out.nbytes
    if cached:  # one copy out of the mapping (plus the header read)
        assert stats.reads == 2 and stats.bytes_read == out.nbytes
    else:
        assert stats.reads > npy_mod.MMAP_MIN_READS


def test_many_tiny_runs_are_bounded(folder) -> None:
    arr = make_array((300, 300), "|u1", "C")
    path = write(folder, arr, (1, 0))
    stats = ReadStats()
    out = read_npy_sync(path, roi=(slice(None), slice(5, 6)), max_reads=16, stats=stats)
    check(out, arr[:, 5:6])
    assert stats.reads - 1 <= 16  # one for the header


def test_errors_name_the_file(folder) -> None:
    missing = os.path.join(folder, "missing.npy")
    with pytest.raises(ReadError, match="cannot open") as info:
        read_npy_sync(missing)
    assert info.value.source == missing
    with pytest.raises(ReadError, match="cannot open"):
        asyncio.run(read_npy(missing))
    path = write(folder, np.zeros((4, 4)), (1, 0))
    with pytest.raises(RoiError, match="2 dimensions"):
        read_npy_sync(path, roi={"roi_start": [1]})
    trunc = os.path.join(folder, "trunc.npy")
    with open(path, "rb") as f, open(trunc, "wb") as g:
        g.write(f.read()[:-8])
    with pytest.raises(ReadError, match="only 120 bytes") as info:
        read_npy_sync(trunc)
    assert trunc in str(info.value)


def test_device_argument(folder) -> None:
    path = write(folder, np.zeros(3), (1, 0))
    with pytest.raises(PipelineDefinitionError):
        asyncio.run(read_npy(path, device="mixed"))
    with pytest.raises(ValueError):
        asyncio.run(read_npy(path, device="tpu"))
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(MissingDependencyError, match="streamflow\\[gpu\\]"):
            asyncio.run(read_npy(path, device="gpu"))


@pytest.mark.parametrize("order", ["C", "F"])
def test_residency_sample_spans_the_region(folder, order) -> None:
    """The pages checked before copying from the map: the region's first and last element's pages,
    at most RESIDENCY_SAMPLES of them, every one inside the region's span of the file."""
    from streamflow.io.npy_plan import read_header

    arr = make_array((64, 80, 96), "<f4", order)
    path = write(folder, arr, (1, 0))
    inside = ((5, 60), (10, 70), (3, 90))
    fd = os.open(path, os.O_RDONLY)
    try:
        header = read_header(fd, os.fstat(fd).st_size, path, None)
    finally:
        os.close(fd)
    pages = npy_mod._sample_pages(header, inside, order)
    first = np.ravel_multi_index([lo for lo, _ in inside], header.shape, order=order)
    last = np.ravel_multi_index([hi - 1 for _, hi in inside], header.shape, order=order)
    page = npy_mod._PAGE
    lo_page = (header.data_offset + int(first) * 4) // page * page
    hi_page = (header.data_offset + int(last) * 4) // page * page
    assert 2 <= len(pages) <= npy_mod.RESIDENCY_SAMPLES
    assert pages[0] == min(lo_page, hi_page) and pages[-1] == max(lo_page, hi_page)
    assert np.all(np.diff(pages) > 0) and np.all(pages % page == 0)
