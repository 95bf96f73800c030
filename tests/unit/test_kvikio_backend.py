"""The kvikio read path, without a GPU: stand-ins that follow kvikio's documented contract.

``FakeCuFile``/``FakeIOFuture`` model kvikio's API as its sources define it:
``CuFile.pread(buf, size, file_offset)`` returns an ``IOFuture`` whose
``get()`` returns the byte count once; afterwards the wrapped ``std::future``
is invalid, so ``get()`` again or ``done()`` raises ``ValueError``. numpy
stands in for cupy (the region gather takes any array module). What this
cannot show: real GDS/compat-mode reads into device memory (tests/gpu).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from streamflow.errors import ReadError
from streamflow.io import kvikio_backend, read_npy_sync
from streamflow.io.roi import DEFAULT_MAX_GAP, DEFAULT_MAX_READS, DEFAULT_MAX_WASTE
from streamflow.types import OutOfBoundsPolicy

COALESCE = {"max_gap": DEFAULT_MAX_GAP, "max_waste": DEFAULT_MAX_WASTE, "max_reads": DEFAULT_MAX_READS}


class FakeIOFuture:
    """kvikio's ``IOFuture``: ``get()`` once; after that the future is invalid."""

    def __init__(self, fn) -> None:  # type: ignore[no-untyped-def]
        self._fn = fn
        self._consumed = False

    def get(self) -> int:
        if self._consumed:
            raise ValueError("IOFuture: no state (get() already called)")
        self._consumed = True
        return self._fn()

    def done(self) -> bool:
        if self._consumed:
            raise ValueError("IOFuture: no state (get() already called)")
        return False


class FakeKvikio:
    """Records every file it opens and whether it was closed with reads still pending."""

    def __init__(self, fail_at: int | None = None, short_at: int | None = None) -> None:
        self.files: list[FakeCuFile] = []
        self.fail_at, self.short_at = fail_at, short_at

    def CuFile(self, path: str, mode: str) -> FakeCuFile:
        f = FakeCuFile(self, path)
        self.files.append(f)
        return f


class FakeCuFile:
    def __init__(self, owner: FakeKvikio, path: str) -> None:
        self.owner, self.fd = owner, os.open(path, os.O_RDONLY)
        self.futures: list[FakeIOFuture] = []
        self.closed_with_pending = False

    def pread(self, buf: np.ndarray, size: int, file_offset: int) -> FakeIOFuture:
        index = len(self.futures)

        def read() -> int:
            if index == self.owner.fail_at:
                raise RuntimeError("kvikio: I/O error")
            data = os.pread(self.fd, size, file_offset)
            if index == self.owner.short_at:
                data = data[: size // 2]
            buf[: len(data)] = np.frombuffer(data, dtype=np.uint8)
            return len(data)

        fut = FakeIOFuture(read)
        self.futures.append(fut)
        return fut

    def close(self) -> None:
        self.closed_with_pending = any(not f._consumed for f in self.futures)
        os.close(self.fd)
        self.fd = -1


@pytest.fixture
def arrays(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    base = rng.integers(-1000, 1000, (40, 33, 5)).astype(np.int32)
    out = {}
    for name, arr in {
        "c": base,
        "fortran": np.asfortranarray(base),
        "big_endian": base.astype(">i4"),
        "float": rng.random((300, 17)).astype(np.float64),
        "sparse": rng.random((16, 64, 1024)).astype(np.float32),  # regions far apart: one read each
    }.items():
        path = tmp_path / f"{name}.npy"
        np.save(path, arr)
        out[name] = path
    return out


def _gpu_read(monkeypatch: pytest.MonkeyPatch, fake: FakeKvikio, path: Path, roi=None):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(kvikio_backend, "_import", lambda: (np, fake))
    return kvikio_backend.read_npy_gpu_sync(
        str(path), roi=roi, fill_value=0, out_of_bounds_policy=OutOfBoundsPolicy.PAD, coalesce=dict(COALESCE),
        stats=None,
    )


@pytest.mark.parametrize("name", ["c", "fortran", "big_endian", "float"])
@pytest.mark.parametrize("roi", [None, (slice(3, 31), slice(0, 5)), {"roi_start": (-2, 4), "roi_end": (9, 12), "roi_axes": (0, 1)}])
def test_a_successful_read_equals_the_cpu_read(monkeypatch, arrays, name, roi) -> None:
    """Before the fix every successful GPU read raised: ``done()`` was called on consumed futures."""
    fake = FakeKvikio()
    got = _gpu_read(monkeypatch, fake, arrays[name], roi)
    want = read_npy_sync(arrays[name], roi=roi, out_of_bounds_policy="pad")
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and got.flags.c_contiguous
    assert fake.files and all(not f.closed_with_pending for f in fake.files)


def test_a_failed_read_waits_for_the_others_before_closing(monkeypatch, arrays) -> None:
    fake = FakeKvikio(fail_at=0)
    roi = (slice(0, 16), slice(0, 1), slice(0, 1))  # 16 values 256 KiB apart: several reads
    with pytest.raises(RuntimeError, match="I/O error"):
        _gpu_read(monkeypatch, fake, arrays["sparse"], roi)
    f = fake.files[0]
    assert len(f.futures) > 1, "the test needs several reads"
    assert all(fut._consumed for fut in f.futures) and not f.closed_with_pending and f.fd == -1


def test_a_short_read_names_the_file(monkeypatch, arrays) -> None:
    with pytest.raises(ReadError, match="short GPU read") as info:
        _gpu_read(monkeypatch, FakeKvikio(short_at=0), arrays["float"])
    assert info.value.source == str(arrays["float"])


def test_wait_all_touches_each_future_once_and_raises_the_first_error() -> None:
    calls: list[int] = []

    def ok(i: int):  # type: ignore[no-untyped-def]
        return lambda: calls.append(i) or 10

    def bad(i: int):  # type: ignore[no-untyped-def]
        def fail() -> int:
            calls.append(i)
            raise OSError(f"read {i} failed")
        return fail

    futures = [FakeIOFuture(ok(0)), FakeIOFuture(bad(1)), FakeIOFuture(ok(2)), FakeIOFuture(bad(3))]
    with pytest.raises(OSError, match="read 1 failed"):
        kvikio_backend.wait_all(futures)
    assert calls == [0, 1, 2, 3]
    assert kvikio_backend.wait_all([FakeIOFuture(ok(4))]) == [10]


def test_reads_from_several_threads_at_once(monkeypatch, arrays) -> None:
    """The GPU stage reads in worker threads: nothing in the path is shared between calls."""
    fake = FakeKvikio()
    monkeypatch.setattr(kvikio_backend, "_import", lambda: (np, fake))
    want = read_npy_sync(arrays["c"])
    results: list[np.ndarray] = []

    def read() -> None:
        results.append(kvikio_backend.read_npy_gpu_sync(
            str(arrays["c"]), roi=None, fill_value=0, out_of_bounds_policy=OutOfBoundsPolicy.ERROR,
            coalesce=dict(COALESCE), stats=None,
        ))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(np.array_equal(r, want) for r in results)
