"""``mel_filter_bank`` against DALI 2.4 CPU (within 2e-5 of each output's maximum) and librosa's filters."""

from __future__ import annotations

import numpy as np
import pytest
from audio_helpers import assert_close_decimated, dali, excerpts
from dali_reference.audio_cases import MELS
from helpers import make_chunk, run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.mel_filter_bank import MelFilterBank, mel_weights

CASES = MELS


def _spec(a, **kw):  # type: ignore[no-untyped-def]
    return fn.spectrogram(a, nfft=512, window_length=320, window_step=160, **kw)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(case: str) -> None:
    ref = dali("mel_filter_bank")
    (out,) = run_arrays(excerpts(), lambda a: fn.mel_filter_bank(_spec(a), **CASES[case]))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"{case}/{i}", atol=2e-5 * float(np.abs(o).max()))


def test_time_major_input_matches_dali() -> None:
    ref = dali("mel_filter_bank")
    (out,) = run_arrays(excerpts(), lambda a: fn.mel_filter_bank(_spec(a, layout="tf"), sample_rate=16000.0, nfilter=40))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"tf/{i}", atol=2e-5 * float(np.abs(o).max()))


@pytest.mark.parametrize("htk", [False, True])
def test_weights_equal_librosa(htk: bool) -> None:
    librosa = pytest.importorskip("librosa")
    ours = mel_weights(40, 257, 16000.0, 0.0, 0.0, True, "htk" if htk else "slaney")
    theirs = librosa.filters.mel(sr=16000, n_fft=512, n_mels=40, htk=htk)
    np.testing.assert_allclose(ours, theirs, atol=1e-6 * theirs.max())


def test_sums_in_dalis_order_and_layouts_agree() -> None:
    """"ft" spectrograms (C kernel): each filter's weighted bins added in increasing bin order in float32,
    bit for bit; "tf" (numpy) within float32 rounding of it; degenerate spectra give zeros."""
    rng = np.random.default_rng(3)
    for kw in (dict(sample_rate=16000.0, nfilter=80), dict(nfilter=40, freq_low=300.0, freq_high=8000.0,
                                                           mel_formula="htk", normalize=False)):
        for bins in (257, 201, 2, 3):
            specs = [rng.random((bins, t)).astype(np.float32) ** 4 for t in (0, 1, 37)]
            ft = MelFilterBank(**kw).run(make_chunk(specs))[0]
            tf = MelFilterBank(**kw, layout="tf").run(make_chunk([np.ascontiguousarray(s.T) for s in specs]))[0]
            weights = MelFilterBank(**kw).weights(bins).astype(np.float32)
            for got, other, spec in zip(ft, tf, specs):
                want = np.zeros((weights.shape[0], spec.shape[1]), np.float32)
                for f in range(weights.shape[0]):
                    for k in np.flatnonzero(weights[f]):
                        want[f] = want[f] + spec[k] * weights[f, k]
                np.testing.assert_array_equal(got, want)
                np.testing.assert_allclose(other.T, want, rtol=1e-6, atol=0)


def test_argument_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="freq"):
        MelFilterBank(sample_rate=16000.0, freq_high=9000.0)
    with pytest.raises(PipelineDefinitionError, match="mel_formula"):
        MelFilterBank(mel_formula="bark")


# --- the GPU implementation: one matrix product per batch ---------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_equals_cpu(kernel_ctx, case: str) -> None:
    from audio_helpers import gpu_vs_cpu

    rng = np.random.default_rng(3)
    samples = [rng.random((257, t), dtype=np.float32) for t in (5, 51, 1)] + [rng.random((3, 257, 4), dtype=np.float32)]
    samples.append(np.zeros((1, 3), np.float32))  # one bin: fails on both
    gpu_vs_cpu(kernel_ctx, MelFilterBank(**CASES[case]), samples, rtol_of_max=1e-6)
    gpu_vs_cpu(kernel_ctx, MelFilterBank(**CASES[case], layout="tf"), [s.T.copy() for s in samples[:3]],
               rtol_of_max=1e-6)
