"""``erase`` (DALI's generic erase; time and frequency masking): against DALI 2.4 CPU (identical) on a real
photo and on log-mel spectrograms of the speech clips."""

from __future__ import annotations

import numpy as np
import pytest
from audio_helpers import assert_close_decimated, dali, excerpts, photo
from dali_reference.audio_cases import ERASES
from helpers import make_chunk, run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.erase import Erase


@pytest.mark.parametrize("case", sorted(ERASES))
def test_image_matches_dali(case: str) -> None:
    ref = dali("erase")
    (out,) = run_arrays([photo()], lambda a: fn.erase(fn.reshape(a, layout="HWC"), **ERASES[case]))
    assert_close_decimated(out[0], ref, f"{case}/0", atol=0)


def _log_mel(a):  # type: ignore[no-untyped-def]
    mel = fn.mel_filter_bank(fn.spectrogram(a, nfft=512, window_length=320, window_step=160),
                             sample_rate=16000.0, nfilter=40)
    return fn.to_decibels(mel, cutoff_db=-80.0)


def test_spectrogram_masks_match_dali() -> None:
    ref = dali("erase")
    anchors = [np.array(v, np.float32) for v in ([0.1, 0.6], [0.3, 0.8], [0.0, 0.5])]
    (out,) = run_arrays(excerpts(), lambda a, t: fn.erase(_log_mel(a), anchor=t, shape=[5, 8], axes=[1],
                                                          normalized_anchor=True), t=anchors)
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"time_masks/{i}", atol=2e-3)
        assert (o == 0).sum(axis=0).max() == 40  # whole frames erased
    (out,) = run_arrays(excerpts(), lambda a: fn.erase(_log_mel(a), anchor=[10], shape=[7], axis_names="f",
                                                       fill_value=-80.0))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"freq_mask/{i}", atol=2e-3)
        assert np.all(o[10:17] == -80.0)


def test_random_time_masks_are_reproducible() -> None:
    x = excerpts()

    def build(a):  # type: ignore[no-untyped-def]
        start = fn.random.uniform(range=[0.0, 0.8], shape=[2])
        return fn.erase(_log_mel(a), anchor=start, shape=[4, 4], axes=[1], normalized_anchor=True)

    first = run_arrays(x, build, seed=5)[0]
    again = run_arrays(x, build, seed=5)[0]
    other = run_arrays(x, build, seed=6)[0]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="not both"):
        Erase(normalized=True, normalized_anchor=True)
    op = Erase(anchor=[1, 2, 3], shape=[1, 1, 1], axes=[0, 1])
    chunk = make_chunk([np.zeros((4, 4), np.float32)])
    op.run(chunk)
    assert "per region" in str(chunk.failures[0])
    op = Erase(anchor=[1], shape=[1], axes=[0], fill_value=[1, 2])
    chunk = make_chunk([np.zeros((4, 4), np.float32)])
    op.run(chunk)
    assert "channel" in str(chunk.failures[0])


# --- the GPU implementation -----------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(ERASES))
def test_gpu_equals_cpu(kernel_ctx, case: str) -> None:
    from audio_helpers import gpu_vs_cpu

    gpu_vs_cpu(kernel_ctx, Erase(**ERASES[case], layout="HWC"), [photo(), photo()[:30].copy()])
