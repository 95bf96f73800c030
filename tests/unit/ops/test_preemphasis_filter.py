"""``preemphasis_filter`` against DALI 2.4 CPU (float32 within 1e-7 absolute; int16 output exact) and numpy."""

from __future__ import annotations

import numpy as np
import pytest
from audio_helpers import assert_close_decimated, dali, excerpts
from dali_reference.audio_cases import preemphasis_cases
from helpers import run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.preemphasis_filter import PreemphasisFilter

CASES = preemphasis_cases(int16="int16")


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(case: str) -> None:
    ref = dali("preemphasis_filter")
    (out,) = run_arrays(excerpts(), lambda a: fn.preemphasis_filter(a, **CASES[case]))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"{case}/{i}", atol=1e-7)


def test_integer_input_and_per_sample_coefficient_match_dali() -> None:
    ref = dali("preemphasis_filter")
    x = excerpts()
    (out,) = run_arrays([(v * 32767).astype(np.int16) for v in x], lambda a: fn.preemphasis_filter(a))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"int16_in/{i}", atol=1e-3, rtol=1e-6)
    (out,) = run_arrays(x, lambda a, c: fn.preemphasis_filter(a, preemph_coeff=c), c=[np.float32(v) for v in (0.9, 0.0, 0.97)])
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"per_sample/{i}", atol=1e-7)


def test_formula() -> None:
    x = np.array([1.0, 2.0, 4.0, 8.0], np.float32)
    (out,) = run_arrays([x], lambda a: fn.preemphasis_filter(a, preemph_coeff=0.5, border="reflect"))
    assert np.allclose(out[0], [1 - 0.5 * 2, 2 - 0.5, 4 - 1, 8 - 2])


def test_bad_border() -> None:
    with pytest.raises(PipelineDefinitionError, match="border"):
        PreemphasisFilter(border="wrap")


# --- the GPU implementation -----------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_equals_cpu(kernel_ctx, case: str) -> None:
    from audio_helpers import gpu_vs_cpu

    x = excerpts()
    samples = [x[0], (x[1] * 32767).astype(np.int16), np.stack([x[2], x[2]], axis=1), x[0][:1],
               np.zeros((2, 2, 2), np.float32)]
    gpu_vs_cpu(kernel_ctx, PreemphasisFilter(**CASES[case]), samples, args={"preemph_coeff": [0.9, 0.5, 0.97, 0.1, 0.0]}
               if case == "default" else None)


def test_gpu_integer_output_rounds_as_cast(kernel_ctx) -> None:
    """0.49999997 + 0.5 is 1 in float32 but not in float64: the output rounds as ``cast`` does (to 0)."""
    from audio_helpers import gpu_vs_cpu

    x = np.array([0.49999997, -0.49999997, 2.5, -2.5, 1e9, np.nan], np.float32)
    for dtype in ("int16", "int32", "uint8"):
        gpu_vs_cpu(kernel_ctx, PreemphasisFilter(preemph_coeff=0.0, border="zero", dtype=dtype), [x])
