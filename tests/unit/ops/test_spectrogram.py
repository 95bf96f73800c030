"""``spectrogram`` against DALI 2.4 CPU and librosa.

Tolerance against DALI (speech excerpts, |x| < 0.6): 2e-5 relative to each
output's maximum (float32 FFT rounding; DALI uses a float32 FFT, we round a
float64 one).
"""

from __future__ import annotations

import numpy as np
import pytest
from audio_helpers import assert_close_decimated, dali, excerpts
from dali_reference.audio_cases import SPECTROGRAMS
from helpers import make_chunk, run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.spectrogram import Spectrogram, windowed_fft

CASES = SPECTROGRAMS


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(case: str) -> None:
    ref = dali("spectrogram")
    (out,) = run_arrays(excerpts(), lambda a: fn.spectrogram(a, **CASES[case]))
    for i, o in enumerate(out):
        assert o.dtype == np.float32
        assert_close_decimated(o, ref, f"{case}/{i}", atol=2e-5 * float(np.abs(o).max()))


def test_equals_librosa_stft_with_the_same_window() -> None:
    librosa = pytest.importorskip("librosa")
    x = excerpts()[0]
    window = np.hanning(320).astype(np.float32)
    (out,) = run_arrays([x], lambda a: fn.spectrogram(a, nfft=512, window_length=320, window_step=160,
                                                      window_fn=list(window)))
    want = np.abs(librosa.stft(x, n_fft=512, hop_length=160, win_length=320, window=window, center=True,
                               pad_mode="reflect")) ** 2
    np.testing.assert_allclose(out[0], want, atol=2e-5 * want.max(), rtol=1e-4)


def test_c_framing_and_powers_equal_the_numpy_path() -> None:
    """The operator's C windows and powers give the numpy path's bits (framing, padding, layouts, powers)."""
    rng = np.random.default_rng(0)
    for t in range(200):
        length = int(rng.integers(1, 600))
        kw = dict(window_length=length, nfft=length + int(rng.integers(0, 3)) * int(rng.integers(0, 200)),
                  window_step=int(rng.integers(1, 400)), power=int(rng.choice([1, 2])),
                  center_windows=bool(t % 5), reflect_padding=bool(rng.integers(0, 2)),
                  layout=str(rng.choice(["ft", "tf"])))
        if t % 3 == 0:
            kw["window_fn"] = list(rng.random(length))
        op = Spectrogram(**kw)
        n = int(rng.integers(1, 5000)) if t % 4 else int(rng.integers(1, length + 3))
        x = (rng.standard_normal(n) * 0.3).astype(np.float32)
        got = op.run(make_chunk([x]))[0][0]
        want = op.finish(np, windowed_fft(op.frames(np, x, windowed=False), op.window, op.nfft))
        assert got.shape == want.shape, (t, kw, n)
        np.testing.assert_array_equal(got, want, err_msg=f"{t} {kw} {n}")


def test_layout_flows_to_the_mel_bank() -> None:
    (out,) = run_arrays(excerpts()[:1], lambda a: fn.mel_filter_bank(fn.spectrogram(a, layout="tf"), nfilter=10))
    assert out[0].shape == (8000 // 256 + 1, 10)


def test_argument_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="nfft"):
        Spectrogram(nfft=256, window_length=512)
    with pytest.raises(PipelineDefinitionError, match="window_fn"):
        Spectrogram(window_length=4, window_fn=[1.0, 1.0])
    with pytest.raises(PipelineDefinitionError, match="power"):
        Spectrogram(power=3)


# --- the GPU implementation (numpy through the host context in CI; cupy's cuFFT on a GPU) ------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_equals_cpu(kernel_ctx, case: str) -> None:
    from audio_helpers import gpu_vs_cpu

    x = excerpts()
    samples = [x[0], x[1][:, None], x[2][None, :], np.zeros((3, 4), np.float32), x[0].astype(np.float64)]
    gpu_vs_cpu(kernel_ctx, Spectrogram(**CASES[case]), samples, rtol_of_max=2e-6)
