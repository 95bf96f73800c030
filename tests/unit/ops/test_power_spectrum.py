"""``power_spectrum`` against DALI 2.4's CPU operator on real signals (MRI voxel rows, as the audio
tests use): within 1e-3 for the power (measured 2.4e-4 on values up to 1832: DALI's FFT is
float32), 1e-4 for the magnitude; its GPU version (the same code over cupy) through the host context."""

from __future__ import annotations

import pytest
from dali_reference.breadth_cases import POWER_SPECTRUM, check
from dali_reference.geometry_cases import signal
from helpers import assert_same_outputs, make_chunk

from streamflow.errors import PipelineDefinitionError
from streamflow.ops.power_spectrum import PowerSpectrum


@pytest.mark.parametrize("case", POWER_SPECTRUM, ids=lambda c: c.name)
def test_power_spectrum_matches_dali(case) -> None:
    check("power_spectrum", case)


def test_definition_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="power"):
        PowerSpectrum(power=3)
    with pytest.raises(PipelineDefinitionError, match="nfft"):
        PowerSpectrum(nfft=0)


def test_gpu_equals_cpu(kernel_ctx) -> None:
    from streamflow.gpu.ops import find_impl

    op = PowerSpectrum(axis=0, nfft=300, power=1)
    samples = [signal(500, 2), signal(200, 2)]
    want = op.run(make_chunk(samples))[0]
    with kernel_ctx.activate():
        got = find_impl(op)(op, make_chunk(kernel_ctx.to_device(samples)), kernel_ctx)[0]
    assert_same_outputs([kernel_ctx.to_host(g) for g in got], want, "power_spectrum")
