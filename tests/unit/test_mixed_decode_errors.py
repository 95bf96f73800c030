"""The GPU decoder's failure triage and threading, without a GPU.

``GpuImageDecoder`` is driven through its seams: the "GPU decode" here is the
real nvImageCodec CPU decoder (that returns ``None`` at the positions a test
chooses, as nvImageCodec does for every failure, out-of-memory included),
device memory is host memory. What this cannot show: real device decoding,
streams and out-of-memory (tests/gpu).
"""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np
import pytest
from helpers import BROKEN_JPEGS, GOOD_JPEGS

from streamflow.codecs.nvimgcodec import (
    GpuImageDecoder,
    ImageDecoder,
    host_array,
    nvimgcodec_module,
)
from streamflow.errors import DecodeError
from streamflow.types import Device


class HostGpuDecoder(GpuImageDecoder):
    """GpuImageDecoder with the device swapped for the host.

    ``failing`` positions of a batch call come back ``None`` (as a full device
    gives); a retry of one sample alone fails too when ``retries_fail``.
    """

    def __init__(self, failing: set[int] = frozenset(), retries_fail: bool = True) -> None:  # type: ignore[assignment]
        super().__init__(device_id=0, cuda_stream=0)
        self.failing, self.retries_fail = set(failing), retries_fail
        self.calls: list[int] = []  # sizes of the "GPU" calls
        self.frees = 0
        self.built = 0
        self.inside = 0

    def _make_gpu_decoder(self, nv):  # type: ignore[no-untyped-def]
        self.built += 1
        return nv.Decoder(device_id=nv.NVIMGCODEC_DEVICE_CPU_ONLY, max_num_cpu_threads=1,
                          backends=[nv.Backend(nv.BackendKind.CPU_ONLY)])

    def _gpu_decode(self, streams, cuda_stream):  # type: ignore[no-untyped-def]
        self.inside += 1
        assert self.inside == 1, "two batch calls ran at once"
        try:
            time.sleep(0.001)
            out = list(self._decoder().decode(streams, params=self._params))
            retry = len(streams) == 1 and bool(self.calls) and self.calls[0] > 1
            self.calls.append(len(streams))
            for k in range(len(out)):
                if (retry and self.retries_fail) or (not retry and k in self.failing):
                    out[k] = None
            return out
        finally:
            self.inside -= 1

    def free_device_memory(self) -> None:
        self.frees += 1

    def _to_device(self, host: np.ndarray) -> np.ndarray:
        return host

    @staticmethod
    def _gpu_array(img):  # type: ignore[no-untyped-def]
        return (img if isinstance(img, np.ndarray) else host_array(img)), np


DATA = [p.read_bytes() for p in GOOD_JPEGS[:4]]
NAMES = [p.name for p in GOOD_JPEGS[:4]]


@pytest.fixture(scope="module")
def cpu_results() -> list[np.ndarray]:
    return ImageDecoder(Device.CPU).decode_batch(DATA, NAMES)


def test_a_good_file_that_fails_on_the_device_is_decoded_on_the_cpu(cpu_results) -> None:
    dec = HostGpuDecoder(failing={2})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = dec.decode_batch(DATA, NAMES)
    for got, want in zip(out, cpu_results):
        np.testing.assert_array_equal(got, want)
    assert dec.cpu_fallbacks == 1 and dec.frees == 1
    assert dec.calls == [4, 1], "the batch, then the one failed sample alone"
    assert any("decoded on the CPU" in str(w.message) for w in caught)


def test_a_retry_alone_that_succeeds_needs_no_cpu(cpu_results) -> None:
    dec = HostGpuDecoder(failing={0, 3}, retries_fail=False)
    out = dec.decode_batch(DATA, NAMES)
    for got, want in zip(out, cpu_results):
        np.testing.assert_array_equal(got, want)
    assert dec.cpu_fallbacks == 0 and dec.frees == 1 and dec.calls == [4, 1, 1]


def test_bad_data_is_a_decode_error_confirmed_by_the_cpu() -> None:
    data = DATA[:2] + [p.read_bytes() for p in BROKEN_JPEGS[:1]]
    names = NAMES[:2] + [BROKEN_JPEGS[0].name]
    dec = HostGpuDecoder()
    out = dec.decode_batch(data, names)
    assert isinstance(out[0], np.ndarray) and isinstance(out[1], np.ndarray)
    assert isinstance(out[2], DecodeError)
    assert out[2].source == BROKEN_JPEGS[0].name and "the CPU decoder failed on it too" in out[2].reason
    assert dec.cpu_fallbacks == 0


def test_no_failure_no_retry() -> None:
    dec = HostGpuDecoder()
    dec.decode_batch(DATA, NAMES)
    assert dec.frees == 0 and dec.calls == [4]


def test_one_decoder_built_lazily_and_calls_serialized() -> None:
    dec = HostGpuDecoder()
    assert dec.built == 0
    errors: list[BaseException] = []

    def hammer() -> None:
        try:
            for _ in range(5):
                dec.decode_batch(DATA, NAMES)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert dec.built == 1 and dec.calls == [4] * 20


def test_regions_keep_working_through_the_triage(cpu_results) -> None:
    dec = HostGpuDecoder(failing={1})
    with pytest.warns(RuntimeWarning, match="decoded on the CPU"):
        out = dec.decode_batch(DATA[:2], NAMES[:2], regions=[(2, 3, 20, 30), (5, 1, 17, 40)])
    np.testing.assert_array_equal(out[0], cpu_results[0][2:20, 3:30])
    np.testing.assert_array_equal(out[1], cpu_results[1][5:17, 1:40])
    assert dec.cpu_fallbacks == 1


def test_import_works_without_touching_the_gpu() -> None:
    assert nvimgcodec_module() is not None
