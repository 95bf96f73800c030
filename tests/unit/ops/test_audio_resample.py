"""``audio_resample``: DALI's windowed-sinc resampler, against DALI 2.4 and soxr.

Tolerance against DALI 2.4 CPU (``tests/dali_reference/record_audio.py``,
excerpts of the shipped speech clips): float32 within 3e-7 absolute on
[-1, 1] signals (the taps are summed in another order); int16 within 1 LSB.
"""

from __future__ import annotations

import numpy as np
import pytest
from audio_helpers import assert_close_decimated, dali, excerpts
from dali_reference.audio_cases import audio_resample_cases
from helpers import make_chunk, run_arrays

from streamflow import fn
from streamflow._native import audio as native_audio
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.audio_resample import AudioResample

CASES = audio_resample_cases(int16="int16")


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(case: str) -> None:
    ref = dali("audio_resample")
    (out,) = run_arrays(excerpts(), lambda a: fn.audio_resample(a, **CASES[case]))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"{case}/{i}", atol=1.0 if o.dtype == np.int16 else 3e-7)


def test_per_sample_scale_and_stereo_match_dali() -> None:
    ref = dali("audio_resample")
    x = excerpts()
    (out,) = run_arrays(x, lambda a, s: fn.audio_resample(a, scale=s), s=[np.float32(v) for v in (0.9, 1.1, 1.05)])
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"per_sample/{i}", atol=3e-7)
    stereo = [np.stack([v, v[::-1] * 0.5], axis=1).copy() for v in x]
    (out,) = run_arrays(stereo, lambda a: fn.audio_resample(a, scale=0.7))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"stereo/{i}", atol=3e-7)


def dali_arithmetic(x: np.ndarray, in_rate: float, out_rate: float, quality: float) -> tuple[np.ndarray, np.ndarray]:
    """DALI's CPU resampler written out in numpy float32: per-tap window offsets and interpolated
    weights, each output's taps summed in four lanes (groups of four), lanes added pairwise, then the
    remaining taps. Returns (outputs, mask of the outputs whose taps all lie inside the signal)."""
    window = native_audio.window_for_quality(quality)
    lobes, n = window.lobes, len(x)
    length = native_audio.resampled_length(n, in_rate, out_rate)
    ratio = in_rate / out_rate
    blocks = -(-length // 256)
    start = np.arange(blocks, dtype=np.float64) * 256 * ratio
    steps = np.full((blocks, 256), np.float32(ratio), dtype=np.float32)
    steps[:, 0] = (start - np.floor(start)).astype(np.float32)
    pos = np.add.accumulate(steps, axis=1, dtype=np.float32).reshape(-1)[:length]
    base = np.repeat(np.floor(start).astype(np.int64), 256)[:length]
    first = np.ceil(pos).astype(np.int64) - lobes
    taps = np.arange(2 * lobes)
    index = (base + first)[:, None] + taps
    inside = (index[:, 0] >= 0) & (index[:, -1] < n)
    # tap offsets as DALI steps them: lane l of group g is (first + l - pos) + 4 + ... + 4, and the
    # remaining taps (first + 4 groups - pos) + 1 + ... + 1, each addition rounded to float32
    groups = 2 * lobes // 4
    offsets = np.empty((length, 2 * lobes), np.float32)
    x4 = (first[:, None] + np.arange(4)).astype(np.float32) - pos[:, None]
    for g in range(groups):
        offsets[:, 4 * g : 4 * g + 4] = x4
        x4 = x4 + np.float32(4)
    tail = (first + 4 * groups).astype(np.float32) - pos
    for k in range(4 * groups, 2 * lobes):
        offsets[:, k] = tail
        tail = tail + np.float32(1)
    products = x[np.clip(index, 0, n - 1)] * window(offsets)
    lanes = np.zeros((length, 4), np.float32)
    for g in range(groups):
        lanes += products[:, 4 * g : 4 * g + 4]
    out = (lanes[:, 0] + lanes[:, 2]) + (lanes[:, 1] + lanes[:, 3])
    for k in range(4 * groups, 2 * lobes):
        out += products[:, k]
    return out, inside


@pytest.mark.parametrize("quality", [0.0, 10.0, 50.0, 100.0])
def test_same_bits_as_dalis_arithmetic(quality: float) -> None:
    """The C resampler's phase tables (no per-tap lookups) give DALI's float32 arithmetic bit for bit."""
    x = np.concatenate(excerpts())
    for in_rate, out_rate in ((16000.0, 16000 / 0.85), (16000.0, 16000 / 1.15), (16000.0, 22050.0),
                              (16000.0, 8000.0), (44100.0, 16000.0), (16000.0, 16001.0)):
        in_rate, out_rate = float(np.float32(in_rate)), float(np.float32(out_rate))
        want, inside = dali_arithmetic(x, in_rate, out_rate, quality)
        got = native_audio.resample(x, in_rate, out_rate, quality)
        assert inside.mean() > 0.95
        np.testing.assert_array_equal(got[inside], want[inside], err_msg=f"{in_rate} -> {out_rate}")


def test_close_to_soxr() -> None:
    """Against soxr (librosa's default resampler): same length and timing, within 3% of the peak.

    DALI's filter is a short windowed sinc that is not widened or renormalised,
    so it differs from soxr's near-ideal filter near Nyquist; a shift of one
    output sample would give errors of ~35% of the peak.
    """
    soxr = pytest.importorskip("soxr")
    x = excerpts()[0]
    ours = native_audio.resample(x, 16000, 22050, quality=100)
    theirs = soxr.resample(x, 16000, 22050, "VHQ")
    assert len(ours) == len(theirs)
    err = np.abs(ours[200:-200] - theirs[200:-200])
    peak = np.abs(x).max()
    assert err.max() < 0.03 * peak and err.mean() < 2e-3 * peak


def test_types_rescale_like_dali() -> None:
    x = (excerpts()[1] * 32767).astype(np.int16)
    (out,) = run_arrays([x], lambda a: fn.audio_resample(a, scale=1.0, dtype="float32"))
    assert out[0].dtype == np.float32
    np.testing.assert_allclose(out[0], x / 32767.0, atol=1e-6)


def test_argument_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="together"):
        AudioResample(in_rate=1.0)
    with pytest.raises(PipelineDefinitionError, match="one of"):
        AudioResample(scale=1.0, out_length=3)
    with pytest.raises(PipelineDefinitionError, match="no resampling factor"):
        AudioResample()
    op = AudioResample(scale=1.0)
    chunk = make_chunk([np.zeros((2, 2, 2), np.float32), np.zeros(5, np.float32)], {"scale": [1.0, -1.0]})
    op.run(chunk)
    assert "time" in str(chunk.failures[0]) and "scale" in str(chunk.failures[1])


# --- the GPU implementation: gathered taps and a weighted sum -------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_equals_cpu(kernel_ctx, case: str) -> None:
    from audio_helpers import gpu_vs_cpu

    x = excerpts()
    samples = [x[0], x[1], np.stack([x[2], -x[2]], axis=1).copy(), (x[0] * 32767).astype(np.int16)[:3000],
               np.zeros((0,), np.float32)]
    gpu_vs_cpu(kernel_ctx, AudioResample(**CASES[case]), samples, atol=2e-6)
