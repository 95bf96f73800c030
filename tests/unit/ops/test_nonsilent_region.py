"""``nonsilent_region`` against DALI 2.4 CPU on the shipped clips.

Identical begin and length on PCM and Opus; on OGG Vorbis within 16 samples
(libsndfile builds decode Vorbis with float differences of ~6e-8, which can
move a window across the threshold).
"""

from __future__ import annotations

import numpy as np
import pytest
from audio_helpers import dali, encoded
from helpers import make_chunk, run_arrays

from streamflow import fn
from streamflow._native import audio as native_audio
from streamflow.ops.nonsilent_region import NonsilentRegion, moving_power, region

VORBIS = 3  # index of arctic_a0007.ogg in FILES
CASES = {"default": {}, "m20_w512": dict(cutoff_db=-20.0, window_length=512), "m30": dict(cutoff_db=-30.0),
         "m25_w1024": dict(cutoff_db=-25.0, window_length=1024),
         "reference": dict(cutoff_db=-20.0, reference_power=0.01, window_length=1024),
         "m20_w100000": dict(cutoff_db=-20.0, window_length=100000)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(case: str) -> None:
    ref = dali("nonsilent_region")
    begin, length = run_arrays(encoded(), lambda e: fn.nonsilent_region(fn.decoders.audio(e, downmix=True)[0],
                                                                         **CASES[case]))
    assert all(b.dtype == np.int32 and b.shape == () for b in begin + length)
    _same(begin, ref[f"{case}/begin"])
    _same(length, ref[f"{case}/length"])


def _same(got: list[np.ndarray], want: np.ndarray) -> None:
    for i, (g, w) in enumerate(zip(got, want.tolist())):
        assert abs(int(g) - w) <= (16 if i == VORBIS else 0), (i, int(g), w)


def test_integer_and_flat_signals_match_dali() -> None:
    ref = dali("nonsilent_region")
    begin, length = run_arrays(encoded(), lambda e: fn.nonsilent_region(
        fn.decoders.audio(e, downmix=True, dtype="int16")[0], cutoff_db=-25.0))
    _same(begin, ref["int16/begin"])
    _same(length, ref["int16/length"])
    begin, length = run_arrays([np.zeros(5000, np.float32), np.full(300, 0.25, np.float32)],
                               lambda a: fn.nonsilent_region(a))
    assert [int(b) for b in begin] == ref["flat/begin"].tolist()
    assert [int(n) for n in length] == ref["flat/length"].tolist()


def test_burst_in_silence() -> None:
    x = np.zeros(10000, np.float32)
    x[4000:4500] = 0.5
    begin, length = run_arrays([x], lambda a: fn.nonsilent_region(a, window_length=100))
    # windows touching the burst are loud: from 4000 - 99 to the end of the window starting at 4499
    assert (int(begin[0]), int(length[0])) == (3901, 4599 - 3901)


def test_c_kernel_equals_the_numpy_computation() -> None:
    """The C two-pass kernel the operator runs gives ``region(moving_power(...))``'s results exactly."""
    rng = np.random.default_rng(5)
    for t in range(400):
        n = int(rng.integers(1, 3000))
        envelope = np.exp(rng.uniform(-12, 0, n // 50 + 2)).repeat(50)[:n]
        x = (rng.standard_normal(n) * envelope).astype(np.float32 if t % 2 else np.float64)
        if t % 7 == 0:
            x[rng.integers(0, n)] = np.nan
        if t % 11 == 0:
            x[:] = 0
        window = min(2048, n) if t % 3 == 0 else int(rng.integers(1, n + 1))
        cutoff = float(rng.uniform(-80, 0))
        reference = None if t % 4 else float(rng.uniform(1e-6, 0.1))
        want = region(moving_power(np, x, window), window, cutoff, reference)
        v = x.astype(np.float32) if x.dtype == np.float64 else x
        assert native_audio.nonsilent(v, window, cutoff, reference) == want, t


def test_a_bad_signal_fails_only_its_row() -> None:
    x = np.zeros(1000, np.float32)
    x[400:500] = 0.5
    chunk = make_chunk([np.zeros((10, 2), np.float32), x, np.zeros(0, np.float32)])
    begin, length = NonsilentRegion(window_length=10).run(chunk)
    assert sorted(chunk.failures) == [0, 2]
    assert all("nonsilent_region: expects a non-empty 1-D numeric signal" in e.reason for e in chunk.failures.values())
    assert begin[0] is begin[2] is length[0] is length[2] is None
    assert (int(begin[1]), int(length[1])) == (391, 509 - 391)  # as test_burst_in_silence, window 10
