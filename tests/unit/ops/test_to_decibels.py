"""``to_decibels`` against DALI 2.4 CPU, on spectrograms of the speech excerpts.

Tolerance: 2e-3 dB within 80 dB of each output's maximum, 0.1 dB below. The
conversion itself agrees to float32 rounding (see ``test_formula_and_cutoff``);
the rest is the input spectrogram's float32 FFT noise, relatively large in the
quietest bins (around -100 dB).
"""

from __future__ import annotations

import numpy as np
import pytest
from audio_helpers import assert_close_decimated, dali, excerpts
from dali_reference.audio_cases import TO_DECIBELS
from helpers import run_arrays

from streamflow import fn

CASES = TO_DECIBELS


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(case: str) -> None:
    ref = dali("to_decibels")
    spec = lambda a: fn.spectrogram(a, nfft=512, window_length=320, window_step=160)  # noqa: E731
    (out,) = run_arrays(excerpts(), lambda a: fn.to_decibels(spec(a), **CASES[case]))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"{case}/{i}", atol=0.1)
        step = int(ref[f"{case}/{i}/step"])
        got, want = o.reshape(-1)[::step], ref[f"{case}/{i}"]
        scale = 10.0 / CASES[case].get("multiplier", 10.0)  # output units -> dB of power
        loud = (want - want.max()) * scale > -80
        np.testing.assert_allclose(got[loud], want[loud], atol=2e-3)


def test_formula_and_cutoff() -> None:
    x = np.array([[1.0, 0.1], [1e-12, 0.0]], np.float32)
    (out,) = run_arrays([x], lambda a: fn.to_decibels(a, cutoff_db=-80.0))
    np.testing.assert_allclose(out[0], [[0.0, -10.0], [-80.0, -80.0]], atol=1e-5)
    (out,) = run_arrays([x * 4], lambda a: fn.to_decibels(a, multiplier=20.0, reference=2.0))
    np.testing.assert_allclose(out[0][0], [20 * np.log10(2.0), 20 * np.log10(0.2)], atol=1e-5)


# --- the GPU implementation (element-wise, the reference on the device) --------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_equals_cpu(kernel_ctx, case: str) -> None:
    from audio_helpers import gpu_vs_cpu

    from streamflow.ops.to_decibels import ToDecibels

    rng = np.random.default_rng(5)
    samples = [rng.random((64, 9), dtype=np.float32) ** 4, np.zeros((3, 3), np.float32), np.arange(6, dtype=np.int16)]
    gpu_vs_cpu(kernel_ctx, ToDecibels(**CASES[case]), samples, atol=1e-4)
