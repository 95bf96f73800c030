"""The GPU decoder's failure triage, threading and construction, without a GPU.

``GpuImageDecoder`` runs here with its device operations replaced
(``HostGpuDecoder``): its one nvImageCodec decoder is ``FlakyDevice``, the real
nvImageCodec CPU decoder returning ``None`` at the positions a test chooses
(as nvImageCodec does for every failure, a full device included), and device
arrays are host arrays. The triage itself (retry, CPU confirmation,
counting, warning, lock, lazy build) is the class's own code.

Not shown here: real device decoding, streams, freeing device memory and
out-of-memory (tests/gpu).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

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

STREAM = 0x5EA  # the stage stream a decoder is given; the fake device records what it gets

DATA = [p.read_bytes() for p in GOOD_JPEGS[:4]]
NAMES = [p.name for p in GOOD_JPEGS[:4]]
TRUNCATED, JUNK_HEADER = BROKEN_JPEGS  # JUNK_HEADER (a PNG) fails on its header, before any decode


class FlakyDevice:
    """Stands in for the stage's nvImageCodec GPU decoder.

    Decodes with the real CPU decoder, then answers ``None`` where the owner's
    policy says the device fails: ``fail_in_batch`` positions of a batch call,
    and every single-image call (a retry) when ``fail_alone``.
    """

    def __init__(self, owner: HostGpuDecoder) -> None:
        nv = nvimgcodec_module()
        self.owner = owner
        self.real = nv.Decoder(device_id=nv.NVIMGCODEC_DEVICE_CPU_ONLY, max_num_cpu_threads=1,
                               backends=[nv.Backend(nv.BackendKind.CPU_ONLY)])

    def decode(self, streams: list[Any], *, params: Any, cuda_stream: int) -> list[Any]:
        owner = self.owner
        with owner.exclusive():
            owner.calls.append((len(streams), cuda_stream))
            time.sleep(0.002)  # widens the window an unserialized second caller would hit
            out = list(self.real.decode(streams, params=params))
        alone = len(streams) == 1
        return [None if (owner.fail_alone if alone else k in owner.fail_in_batch) else img
                for k, img in enumerate(out)]


class HostGpuDecoder(GpuImageDecoder):
    """GpuImageDecoder with its device operations on the host, and counters."""

    def __init__(self, fail_in_batch: Sequence[int] = (), fail_alone: bool = True,
                 output_type: str = "rgb", dtype: str = "uint8") -> None:
        super().__init__(device_id=0, cuda_stream=STREAM, output_type=output_type, dtype=dtype)
        self.fail_in_batch, self.fail_alone = set(fail_in_batch), fail_alone
        self.calls: list[tuple[int, int]] = []  # (images, cuda_stream) per device decode call
        self.built = self.frees = self.cpu_decodes = 0
        self.copied: list[np.ndarray] = []  # what went to the "device" from the CPU
        self._busy = threading.Lock()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Fails the test when two nvImageCodec calls of this decoder overlap."""
        if not self._busy.acquire(blocking=False):
            raise AssertionError("two nvImageCodec calls of one decoder ran at once")
        try:
            yield
        finally:
            self._busy.release()

    def _make_gpu_decoder(self, nv: Any) -> FlakyDevice:
        self.built += 1
        return FlakyDevice(self)

    def _cpu_decode(self, stream: Any) -> np.ndarray | None:
        with self.exclusive():
            self.cpu_decodes += 1
            return super()._cpu_decode(stream)

    def _free_device_memory(self) -> None:
        self.frees += 1

    def _on_stream(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def _to_device(self, host: np.ndarray) -> np.ndarray:
        self.copied.append(host.copy())
        return self.copied[-1]

    def _to_array(self, img: Any) -> tuple[Any, Any]:
        return (img if isinstance(img, np.ndarray) else host_array(img)), np


@pytest.fixture(scope="module")
def cpu_results() -> list[np.ndarray]:
    """The plain CPU decoder's output for DATA: what every triage must give back."""
    return ImageDecoder(Device.CPU).decode_batch(DATA, NAMES)


def assert_same(got: list[Any], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, np.ndarray), g
        np.testing.assert_array_equal(g, w)


def test_a_good_file_the_device_fails_on_is_decoded_on_the_cpu(cpu_results) -> None:
    dec = HostGpuDecoder(fail_in_batch={2})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = dec.decode_batch(DATA, NAMES)
    assert_same(out, cpu_results)
    assert out[2] is dec.copied[0], "the CPU result is the one copied to the device"
    assert dec.cpu_fallbacks == 1 and dec.cpu_decodes == 1 and dec.frees == 1
    assert dec.calls == [(4, STREAM), (1, STREAM)], "the batch, then the failed image alone"
    (warning,) = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    text = str(warning.message)
    assert "could not decode 1 image" in text and NAMES[2] in text
    assert "decoded on the CPU" in text and "memory" in text


def test_the_fallback_warning_comes_once_and_the_counter_counts_all(cpu_results) -> None:
    dec = HostGpuDecoder(fail_in_batch={0, 3})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = dec.decode_batch(DATA, NAMES)
        second = dec.decode_batch(DATA, NAMES)
    assert_same(first, cpu_results)
    assert_same(second, cpu_results)
    assert dec.cpu_fallbacks == 4
    assert dec.frees == 2, "memory is freed once per batch with failures, not once per image"
    (warning,) = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert "could not decode 2 image" in str(warning.message)


def test_a_retry_alone_that_succeeds_needs_no_cpu(cpu_results) -> None:
    dec = HostGpuDecoder(fail_in_batch={0, 3}, fail_alone=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = dec.decode_batch(DATA, NAMES)
    assert_same(out, cpu_results)
    assert dec.calls == [(4, STREAM), (1, STREAM), (1, STREAM)]
    assert dec.frees == 1
    assert dec.cpu_decodes == 0 and dec.cpu_fallbacks == 0 and not dec.copied
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_bad_data_is_a_decode_error_confirmed_by_the_cpu(cpu_results) -> None:
    data = DATA[:2] + [TRUNCATED.read_bytes(), JUNK_HEADER.read_bytes()]
    names = NAMES[:2] + [TRUNCATED.name, JUNK_HEADER.name]
    dec = HostGpuDecoder()  # no injected failure: the truncated file fails on its own
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = dec.decode_batch(data, names)
    assert_same(out[:2], cpu_results[:2])
    bad = out[2]
    assert isinstance(bad, DecodeError) and bad.source == TRUNCATED.name
    assert "truncated" in bad.reason and "confirmed by the CPU decoder" in bad.reason
    assert isinstance(out[3], DecodeError) and out[3].source == JUNK_HEADER.name
    assert "confirmed by the CPU" not in out[3].reason, "a header failure never reaches a decoder"
    assert dec.calls == [(3, STREAM), (1, STREAM)], "retried alone before the CPU is asked"
    assert dec.cpu_decodes == 1 and dec.cpu_fallbacks == 0 and not dec.copied
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_without_failures_there_is_no_triage(cpu_results) -> None:
    dec = HostGpuDecoder()
    assert_same(dec.decode_batch(DATA, NAMES), cpu_results)
    assert dec.calls == [(4, STREAM)] and dec.frees == 0 and dec.cpu_decodes == 0


def test_calls_from_four_threads_are_serialized_on_one_decoder_built_lazily(cpu_results) -> None:
    dec = HostGpuDecoder(fail_in_batch={1})  # the triage's calls must not overlap either
    assert dec.built == 0, "no nvImageCodec decoder before the first batch"
    start = threading.Barrier(4)
    errors: list[BaseException] = []
    outputs: list[list[Any]] = []

    def hammer() -> None:
        start.wait()
        try:
            for _ in range(5):
                outputs.append(dec.decode_batch(DATA, NAMES))
        except BaseException as err:
            errors.append(err)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    assert dec.built == 1, "one decoder for every thread"
    assert len(outputs) == 20 and dec.cpu_fallbacks == 20
    assert dec.calls == [(4, STREAM), (1, STREAM)] * 20, "each batch's calls ran together"
    for out in outputs:
        assert_same(out, cpu_results)


def test_regions_go_through_the_triage(cpu_results) -> None:
    dec = HostGpuDecoder(fail_in_batch={1})
    with pytest.warns(RuntimeWarning, match="decoded on the CPU"):
        out = dec.decode_batch(DATA[:2], NAMES[:2], regions=[(2, 3, 20, 30), (5, 1, 17, 40)])
    np.testing.assert_array_equal(out[0], cpu_results[0][2:20, 3:30])
    np.testing.assert_array_equal(out[1], cpu_results[1][5:17, 1:40])
    assert dec.cpu_fallbacks == 1


def test_gray_output_through_the_fallback_keeps_its_channel_axis() -> None:
    want = ImageDecoder(output_type="gray").decode_batch(DATA[:2], NAMES[:2])
    dec = HostGpuDecoder(fail_in_batch={0}, output_type="gray")
    with pytest.warns(RuntimeWarning):
        out = dec.decode_batch(DATA[:2], NAMES[:2])
    assert out[0].shape[-1] == 1
    assert_same(out, want)


CORPUS = sorted(p for p in (Path(__file__).parents[1] / "data" / "pillow-corpus").iterdir()
                if p.suffix not in (".txt",))


@pytest.mark.parametrize("output_type, dtype", [
    ("rgb", "uint8"), ("ycbcr", "uint8"), ("gray", "uint8"), ("any_data", "uint16"), ("bgr", "float32"),
])
def test_every_format_has_the_cpu_decoders_semantics(output_type: str, dtype: str) -> None:
    """The mixed decoder sends JPEG to the device and the rest through the CPU routes:
    every corpus file (16-bit, palettes, Lab, WebP orientation, broken ones...) gives
    what the CPU decoder gives, copied to the device, and says who decoded it."""
    data = [p.read_bytes() for p in CORPUS]
    names = [p.name for p in CORPUS]
    cpu_by: list[str] = []
    want = ImageDecoder(output_type=output_type, dtype=dtype).decode_batch(data, names, decoded_by=cpu_by)
    dec = HostGpuDecoder(output_type=output_type, dtype=dtype)
    gpu_by: list[str] = []
    got = dec.decode_batch(data, names, decoded_by=gpu_by)
    # JPEG to ANY_DATA (stored channels, CMYK too) is decoded on the host
    jpegs = [n.endswith(".jpg") and by == "nvimgcodec" and output_type != "any_data"
             for n, by in zip(names, cpu_by)]
    assert sum(jpegs) >= 5 or output_type == "any_data"
    assert dec.calls == ([(sum(jpegs), STREAM)] if any(jpegs) else []), "only JPEG reaches the device"
    for name, w, g, c_by, g_by, jpeg in zip(names, want, got, cpu_by, gpu_by, jpegs):
        if isinstance(w, DecodeError):
            assert isinstance(g, DecodeError) and g.source == name, name
            continue
        np.testing.assert_array_equal(g, w, err_msg=name)
        assert g.dtype == w.dtype
        assert g_by == ("nvimgcodec-gpu" if jpeg else c_by), (name, g_by, c_by)
        if not jpeg:
            assert any(g is c for c in dec.copied), f"{name}: decoded on the host, then copied"


def test_the_gpu_decoder_has_the_backends_in_order_and_the_stage_threads() -> None:
    kinds = SimpleNamespace(HW_GPU_ONLY="hw", GPU_ONLY="cuda", HYBRID_CPU_GPU="hybrid",
                            CPU_ONLY="cpu")
    nv = SimpleNamespace(BackendKind=kinds, Backend=lambda kind: ("backend", kind),
                         Decoder=lambda **kw: kw)
    made = GpuImageDecoder(device_id=3, cuda_stream=STREAM, cpu_threads=6)._make_gpu_decoder(nv)
    assert made == {
        "device_id": 3,
        "max_num_cpu_threads": 6,
        "backends": [("backend", "hw"), ("backend", "cuda"), ("backend", "hybrid"),
                     ("backend", "cpu")],
    }


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="GpuImageDecoder"):
        ImageDecoder(Device.MIXED)  # no per-thread GPU decoders
    with pytest.raises(ValueError, match="cpu_threads"):
        GpuImageDecoder(device_id=0, cuda_stream=STREAM, cpu_threads=0)
    dec = GpuImageDecoder(device_id=1, cuda_stream=STREAM, cpu_threads=2, output_type="bgr")
    assert dec.device is Device.MIXED and dec.device_id == 1 and dec.cuda_stream == STREAM
    assert "cpu_threads=2" in repr(dec) and "BGR" in repr(dec)


def test_neither_import_nor_construction_nor_cpu_decoding_imports_cupy() -> None:
    script = textwrap.dedent(f"""
        import sys

        asked = []

        class Watch:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "cupy":
                    asked.append(name)
                return None

        sys.meta_path.insert(0, Watch())
        import streamflow
        from streamflow.codecs.nvimgcodec import GpuImageDecoder, ImageDecoder

        dec = GpuImageDecoder(device_id=0, cuda_stream=0)
        assert dec._gpu_decoder is None, "built before the first batch"
        ImageDecoder().decode(open({str(GOOD_JPEGS[0])!r}, "rb").read())
        assert not asked, asked
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2], timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
