"""The kvikio read path, without a GPU: stand-ins that model kvikio's documented contract.

kvikio cannot read anything without the CUDA driver (``libcuda``), so these
tests put stand-ins behind ``kvikio_backend._import()``, the module's only
import seam:

* ``KvikioStandIn`` / ``CuFileStandIn`` / ``IOFutureStandIn`` model kvikio's
  API as its sources define it: ``CuFile.pread(buf, size, file_offset)``
  returns an ``IOFuture`` whose ``get()`` returns the byte count once; the
  wrapped ``std::future`` is invalid afterwards, so ``get()`` again or
  ``done()`` raises ``ValueError`` (also when the read failed). The reads are
  real ``os.pread``s of the real file into the (host) buffer.
* ``CupyStandIn`` is numpy in cupy's place (the region gather takes any array
  module ``xp``), with ``cupy.cuda.Device``/``Stream`` as no-op contexts.

What this cannot show: real GDS/compat-mode reads into device memory, stream
ordering, cupy's own gather kernels (``tests/gpu`` on a GPU machine).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from streamflow.errors import ReadError
from streamflow.io import kvikio_backend, read_npy, read_npy_sync
from streamflow.io.npy_plan import ReadStats
from streamflow.io.roi import DEFAULT_MAX_GAP, DEFAULT_MAX_READS, DEFAULT_MAX_WASTE
from streamflow.types import OutOfBoundsPolicy

COALESCE = {"max_gap": DEFAULT_MAX_GAP, "max_waste": DEFAULT_MAX_WASTE, "max_reads": DEFAULT_MAX_READS}
#: How long a stand-in read waits for its gate before the test is declared hung.
GATE_TIMEOUT = 10.0

# --------------------------------------------------------------------------
# stand-ins for kvikio and cupy (they follow kvikio's contract, see the docstring)


class IOFutureStandIn:
    """kvikio's ``IOFuture``: ``get()`` once; afterwards the future is invalid."""

    def __init__(self, read: Callable[[], int], gate: threading.Event | None = None) -> None:
        self._read = read
        self._gate = gate
        self.consumed = False
        self.gets = 0

    def get(self) -> int:
        self.gets += 1
        if self.consumed:
            raise ValueError("The future object is invalid")  # std::future::get() after get()
        self.consumed = True  # a std::future is invalid after get(), even when it threw
        if self._gate is not None and not self._gate.wait(GATE_TIMEOUT):
            raise TimeoutError("test gate never opened")
        return self._read()

    def done(self) -> bool:
        if self.consumed:
            raise ValueError("The future object is invalid")  # kvikio's is_future_done()
        return self._gate is None or self._gate.is_set()


class CuFileStandIn:
    """kvikio's ``CuFile``: each ``pread`` is a real read of the file, done when its future is waited for."""

    def __init__(self, owner: KvikioStandIn, path: str) -> None:
        self.owner = owner
        self.fd = os.open(path, os.O_RDONLY)
        self.futures: list[IOFutureStandIn] = []
        self.sizes: list[int] = []
        self.closes = 0
        self.pending_at_close: int | None = None

    def pread(self, buf: np.ndarray, size: int, file_offset: int = 0) -> IOFutureStandIn:
        index = len(self.futures)
        if index == self.owner.refuse_at:
            raise RuntimeError("kvikio: cannot submit the read")
        fd = self.fd

        def read() -> int:
            if index == self.owner.fail_at:
                raise RuntimeError("kvikio: I/O error")
            data = os.pread(fd, size, file_offset)  # EBADF if the file was closed under it
            if index == self.owner.short_at:
                data = data[: size // 2]
            buf[: len(data)] = np.frombuffer(data, dtype=np.uint8)
            return len(data)

        fut = IOFutureStandIn(read, self.owner.gate)
        self.futures.append(fut)
        self.sizes.append(size)
        self.owner.issued.set()
        return fut

    def close(self) -> None:
        self.closes += 1
        self.pending_at_close = sum(not f.consumed for f in self.futures)
        os.close(self.fd)


class KvikioStandIn:
    """The ``kvikio`` module: records every file it opens.

    Args:
        fail_at: index of the read whose ``get()`` raises.
        short_at: index of the read that returns half its bytes.
        refuse_at: index of the ``pread`` call that raises (nothing issued).
        gate: when given, every ``get()`` blocks until it is set.
    """

    def __init__(
        self,
        fail_at: int | None = None,
        short_at: int | None = None,
        refuse_at: int | None = None,
        gate: threading.Event | None = None,
    ) -> None:
        self.files: list[CuFileStandIn] = []
        self.fail_at, self.short_at, self.refuse_at, self.gate = fail_at, short_at, refuse_at, gate
        self.issued = threading.Event()

    def CuFile(self, path: str, flags: str = "r") -> CuFileStandIn:
        f = CuFileStandIn(self, path)
        self.files.append(f)
        return f


class _NoOpContext:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.synchronized = 0

    def __enter__(self) -> _NoOpContext:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def synchronize(self) -> None:
        self.synchronized += 1


class CupyStandIn:
    """numpy in cupy's place (not ``numpy`` itself, so the gather takes its cupy branch)."""

    cuda = SimpleNamespace(Device=_NoOpContext, Stream=_NoOpContext)

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


def test_the_stand_in_future_follows_kvikios_contract() -> None:
    fut = IOFutureStandIn(lambda: 7)
    assert fut.done() is True  # no gate: the read is ready
    assert fut.get() == 7
    with pytest.raises(ValueError):
        fut.done()
    with pytest.raises(ValueError):
        fut.get()
    failing = IOFutureStandIn(lambda: 1 // 0)
    with pytest.raises(ZeroDivisionError):
        failing.get()
    with pytest.raises(ValueError):  # consumed by the failed get() too
        failing.done()


# --------------------------------------------------------------------------
# fixtures and helpers


@pytest.fixture
def arrays(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    base = rng.integers(-1000, 1000, (40, 33, 5)).astype(np.int32)
    out = {}
    for name, arr in {
        "c": base,
        "fortran": np.asfortranarray(base),
        "big_endian": base.astype(">i4"),
        "fortran_big_endian": np.asfortranarray(base.astype(">f8")),
        "complex_big_endian": (base + 1j * base[::-1]).astype(">c8"),
        "float": rng.random((300, 17)).astype(np.float64),
        "sparse": rng.random((16, 64, 1024)).astype(np.float32),  # regions far apart: one read each
    }.items():
        path = tmp_path / f"{name}.npy"
        np.save(path, arr)
        out[name] = path
    return out


@pytest.fixture
def use_stand_ins(monkeypatch: pytest.MonkeyPatch) -> Callable[[KvikioStandIn], None]:
    """Put the stand-ins behind ``kvikio_backend._import()``."""

    def install(kvikio: KvikioStandIn) -> None:
        monkeypatch.setattr(kvikio_backend, "_import", lambda: (CupyStandIn(), kvikio))

    return install


def _gpu_read(path: Path, roi: Any = None, stats: ReadStats | None = None) -> Any:
    return kvikio_backend.read_npy_gpu_sync(
        str(path), roi=roi, fill_value=0, out_of_bounds_policy=OutOfBoundsPolicy.PAD,
        coalesce=dict(COALESCE), stats=stats,
    )


def _assert_closed_after_all_reads(kvikio: KvikioStandIn) -> None:
    assert kvikio.files, "no file was opened"
    for f in kvikio.files:
        assert f.closes == 1
        assert f.pending_at_close == 0, "closed under a pending read"
        assert all(fut.gets == 1 for fut in f.futures), "each future waited for exactly once"


SPARSE_ROI = (slice(0, 16), slice(0, 1), slice(0, 1))  # 16 values 256 KiB apart: one read each
ROIS = [
    None,
    (slice(3, 31), slice(0, 5)),
    {"roi_start": (-2, 4), "roi_end": (9, 12), "roi_axes": (0, 1)},  # padded
]

# --------------------------------------------------------------------------
# successful reads


@pytest.mark.parametrize(
    "name", ["c", "fortran", "big_endian", "fortran_big_endian", "complex_big_endian", "float"]
)
@pytest.mark.parametrize("roi", ROIS)
def test_a_successful_read_equals_the_cpu_read(use_stand_ins, arrays, name, roi) -> None:
    """Before the fix every successful GPU read raised: ``done()`` was called on consumed futures."""
    kvikio = KvikioStandIn()
    use_stand_ins(kvikio)
    stats = ReadStats()
    got = _gpu_read(arrays[name], roi, stats)
    want = read_npy_sync(arrays[name], roi=roi, out_of_bounds_policy="pad")
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and got.flags.c_contiguous
    _assert_closed_after_all_reads(kvikio)
    f = kvikio.files[0]
    assert stats.bytes_read == sum(f.sizes) and stats.useful_bytes <= stats.bytes_read


@pytest.mark.parametrize("name", ["complex_big_endian", "fortran_big_endian"])
def test_big_endian_files_match_np_load_on_both_paths(use_stand_ins, arrays, name) -> None:
    """Independent of the shared gather: big-endian complex once crashed it (both paths)."""
    use_stand_ins(KvikioStandIn())
    ref = np.load(arrays[name])
    want = ref.astype(ref.dtype.newbyteorder("="))[3:31, 0:5]
    roi = (slice(3, 31), slice(0, 5))
    for got in (_gpu_read(arrays[name], roi), read_npy_sync(arrays[name], roi=roi)):
        assert got.dtype == want.dtype and got.dtype.isnative
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("roi", [None, SPARSE_ROI])
def test_read_npy_device_gpu_equals_device_cpu(use_stand_ins, arrays, roi) -> None:
    """The public entry point: ``read_npy(device="gpu")`` through the executor thread."""
    kvikio = KvikioStandIn()
    use_stand_ins(kvikio)
    got = asyncio.run(read_npy(arrays["sparse"], roi=roi, device="gpu"))
    want = asyncio.run(read_npy(arrays["sparse"], roi=roi, device="cpu"))
    np.testing.assert_array_equal(got, want)
    _assert_closed_after_all_reads(kvikio)


def test_reads_from_several_threads_at_once(use_stand_ins, arrays) -> None:
    """The GPU stage reads in worker threads: nothing in the path is shared between calls."""
    kvikio = KvikioStandIn()
    use_stand_ins(kvikio)
    want = read_npy_sync(arrays["c"])
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            results.append(_gpu_read(arrays["c"]))
        except BaseException as err:  # reported below, not as a stray thread exception
            errors.append(err)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 4 and all(np.array_equal(r, want) for r in results)
    assert len(kvikio.files) == 4
    _assert_closed_after_all_reads(kvikio)


# --------------------------------------------------------------------------
# failures


@pytest.mark.parametrize("fail_at", [0, 7, 15])
def test_a_failed_read_waits_for_the_others_before_closing(use_stand_ins, arrays, fail_at) -> None:
    kvikio = KvikioStandIn(fail_at=fail_at)
    use_stand_ins(kvikio)
    with pytest.raises(RuntimeError, match="I/O error"):
        _gpu_read(arrays["sparse"], SPARSE_ROI)
    assert len(kvikio.files[0].futures) == 16, "the test needs several reads"
    _assert_closed_after_all_reads(kvikio)


def test_a_refused_read_waits_for_the_issued_ones_before_closing(use_stand_ins, arrays) -> None:
    """``pread`` itself failing after some reads were issued: those are still waited for."""
    kvikio = KvikioStandIn(refuse_at=3)
    use_stand_ins(kvikio)
    with pytest.raises(RuntimeError, match="cannot submit"):
        _gpu_read(arrays["sparse"], SPARSE_ROI)
    assert len(kvikio.files[0].futures) == 3
    _assert_closed_after_all_reads(kvikio)


def test_a_short_read_raises_a_read_error_naming_the_file(use_stand_ins, arrays) -> None:
    kvikio = KvikioStandIn(short_at=0)
    use_stand_ins(kvikio)
    with pytest.raises(ReadError, match="short GPU read") as info:
        _gpu_read(arrays["float"])
    assert info.value.source == str(arrays["float"])
    assert str(arrays["float"]) in str(info.value)
    _assert_closed_after_all_reads(kvikio)


def test_kvikio_failing_to_open_is_a_read_error(monkeypatch, arrays) -> None:
    class NoDriver(KvikioStandIn):
        def CuFile(self, path: str, flags: str = "r") -> CuFileStandIn:
            raise RuntimeError("cuFile: no CUDA driver")

    monkeypatch.setattr(kvikio_backend, "_import", lambda: (CupyStandIn(), NoDriver()))
    with pytest.raises(ReadError, match="kvikio cannot open") as info:
        _gpu_read(arrays["c"])
    assert info.value.source == str(arrays["c"])


def _counting(i: int, calls: list[int], error: BaseException | None = None) -> IOFutureStandIn:
    def read() -> int:
        calls.append(i)
        if error is not None:
            raise error
        return 10

    return IOFutureStandIn(read)


def test_wait_all_gets_each_future_once_and_raises_the_first_error() -> None:
    calls: list[int] = []
    futures = [
        _counting(0, calls),
        _counting(1, calls, OSError("read 1 failed")),
        _counting(2, calls),
        _counting(3, calls, OSError("read 3 failed")),
    ]
    counts: list[int] = []
    with pytest.raises(OSError, match="read 1 failed"):
        kvikio_backend.wait_all(futures, counts)
    assert calls == [0, 1, 2, 3] and counts == [10, -1, 10, -1]
    assert kvikio_backend.wait_all(futures, counts) == counts, "nothing left to wait for"
    assert all(f.gets == 1 for f in futures)
    assert kvikio_backend.wait_all([_counting(4, calls)]) == [10]


def test_wait_all_skips_the_futures_already_waited_for() -> None:
    calls: list[int] = []
    futures = [_counting(i, calls) for i in range(4)]
    counts = [futures[0].get(), futures[1].get()]  # consumed: touching them again raises
    assert kvikio_backend.wait_all(futures, counts) == [10, 10, 10, 10]
    assert calls == [0, 1, 2, 3] and all(f.gets == 1 for f in futures)


# --------------------------------------------------------------------------
# cancellation of the async read


async def _until(event: threading.Event) -> None:
    deadline = time.monotonic() + GATE_TIMEOUT
    while not event.is_set():
        assert time.monotonic() < deadline, "the reads were never issued"
        await asyncio.sleep(0.005)


def test_cancelling_waits_for_the_pending_reads_before_returning(use_stand_ins, arrays) -> None:
    gate = threading.Event()
    kvikio = KvikioStandIn(gate=gate)
    use_stand_ins(kvikio)

    async def main() -> None:
        with ThreadPoolExecutor(2) as executor:
            task = asyncio.create_task(
                read_npy(arrays["sparse"], roi=SPARSE_ROI, device="gpu", executor=executor)
            )
            try:
                await _until(kvikio.issued)
                task.cancel()
                await asyncio.sleep(0.05)
                task.cancel()  # a second cancellation does not cut the wait short either
                await asyncio.sleep(0.05)
                assert not task.done(), "cancellation returned while reads were pending"
                f = kvikio.files[0]
                assert f.closes == 0 and not all(fut.consumed for fut in f.futures)
            finally:
                gate.set()  # a failed check must not leave the executor blocked
            with pytest.raises(asyncio.CancelledError):
                await task
            # By the time the caller sees the cancellation, every read is over.
            _assert_closed_after_all_reads(kvikio)
            assert len(f.futures) == 16

    asyncio.run(main())


def test_cancelling_before_the_executor_starts_reads_nothing(use_stand_ins, arrays) -> None:
    kvikio = KvikioStandIn()
    use_stand_ins(kvikio)
    busy = threading.Event()

    async def main() -> None:
        with ThreadPoolExecutor(1) as executor:
            blocker = asyncio.get_running_loop().run_in_executor(executor, busy.wait, GATE_TIMEOUT)
            task = asyncio.create_task(read_npy(arrays["c"], device="gpu", executor=executor))
            try:
                await asyncio.sleep(0.05)
                task.cancel()
                await asyncio.sleep(0.05)
                assert not task.done(), "returned while its work was still queued"
            finally:
                busy.set()
            await blocker
            with pytest.raises(asyncio.CancelledError):
                await task
        assert kvikio.files == []

    asyncio.run(main())
