"""``lookup_table``: DALI 2.4's outputs (exact, saturating integer outputs) and its documented example."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import assert_equal_outputs, replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError, PipelineError


@pytest.mark.parametrize("case", ["lookup_table", "lookup_table_uint8"])
def test_matches_dali(case: str) -> None:
    assert_equal_outputs(*replay(case, fn, types, sf.pipeline_def))


def test_documented_example() -> None:
    x = np.array([1, 4, 1, 0, 100, 2, 3, 4], np.int32)
    out = run_arrays([x], lambda v: fn.lookup_table(v, keys=[0, 2, 3, 4, 5, 3],
                                                    values=[0.2, 0.4, 0.5, 0.6, 0.7, 0.10], default_value=0.99))[0][0]
    np.testing.assert_allclose(out, [0.99, 0.6, 0.99, 0.2, 0.99, 0.4, 0.10, 0.6], rtol=1e-6)


def test_errors() -> None:
    node = fn.external_source([[np.zeros(2, np.int32)]])
    with pytest.raises(PipelineDefinitionError, match="2 keys but 1 values"):
        fn.lookup_table(node, keys=[1, 2], values=[1.0])
    with pytest.raises(PipelineDefinitionError, match=r"keys must be integers in \[0, 65535\]"):
        fn.lookup_table(node, keys=[70000], values=[1.0])
    with pytest.raises(PipelineError, match="the input must be integers, got float32"):
        run_arrays([np.zeros(2, np.float32)], lambda v: fn.lookup_table(v, keys=[1], values=[1.0]))


# --- the GPU implementation (the CPU code over cupy; numpy in CI) ---------------------------------
from detection_gpu import check_recorded_on_gpu


@pytest.mark.parametrize("case", ["lookup_table", "lookup_table_uint8"])
def test_gpu_matches_cpu_and_dali(kernel_ctx, case: str) -> None:
    check_recorded_on_gpu(kernel_ctx, case)
