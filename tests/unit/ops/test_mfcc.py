"""``mfcc`` against DALI 2.4 CPU (log-mel spectrograms of the speech excerpts; within 1e-4 of each output's
maximum) and scipy's DCT."""

from __future__ import annotations

import numpy as np
import pytest
from audio_helpers import assert_close_decimated, dali, excerpts
from dali_reference.audio_cases import MFCCS
from helpers import run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.mfcc import Mfcc

CASES = MFCCS


def _log_mel(a):  # type: ignore[no-untyped-def]
    spec = fn.spectrogram(a, nfft=512, window_length=320, window_step=160)
    return fn.to_decibels(fn.mel_filter_bank(spec, sample_rate=16000.0, nfilter=40), cutoff_db=-80.0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(case: str) -> None:
    ref = dali("mfcc")
    (out,) = run_arrays(excerpts(), lambda a: fn.mfcc(_log_mel(a), **CASES[case]))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"{case}/{i}", atol=1e-4 * float(np.abs(o).max()))


@pytest.mark.parametrize("dct_type", [2, 3, 4])
def test_orthonormal_equals_scipy(dct_type: int) -> None:
    scipy_fft = pytest.importorskip("scipy.fft")
    x = np.random.default_rng(1).standard_normal((24, 7)).astype(np.float32)
    (out,) = run_arrays([x], lambda a: fn.mfcc(a, dct_type=dct_type, normalize=True, n_mfcc=24))
    np.testing.assert_allclose(out[0], scipy_fft.dct(x.astype(np.float64), type=dct_type, axis=0, norm="ortho"),
                               atol=1e-5)


def test_argument_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="dct_type=1"):
        Mfcc(dct_type=1, normalize=True)
    with pytest.raises(PipelineDefinitionError, match="dct_type"):
        Mfcc(dct_type=5)


# --- the GPU implementation: the DCT as one matrix product per batch -----------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_equals_cpu(kernel_ctx, case: str) -> None:
    from audio_helpers import gpu_vs_cpu

    rng = np.random.default_rng(4)
    samples = [rng.standard_normal((40, t)).astype(np.float32) for t in (7, 30)] + [np.zeros((5, 2), np.float32)]
    gpu_vs_cpu(kernel_ctx, Mfcc(**CASES[case]), samples, rtol_of_max=1e-5)
    gpu_vs_cpu(kernel_ctx, Mfcc(**CASES[case], axis=1), [s.T.copy() for s in samples[:2]], rtol_of_max=1e-5)
