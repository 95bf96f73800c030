"""``one_hot``: DALI 2.4's outputs (exact), and its rules on hand-made inputs."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import assert_equal_outputs, replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError


@pytest.mark.parametrize("case", ["one_hot_scalars", "one_hot_axis0_int16", "one_hot_2d_axis1", "one_hot_float_input",
                                  "one_hot_mixed_batch", "one_hot_single_elements"])
def test_matches_dali(case: str) -> None:
    assert_equal_outputs(*replay(case, fn, types, sf.pipeline_def))


def test_against_numpy_eye() -> None:
    labels = np.array([[0, 3], [2, 1]], np.int32)
    out = run_arrays([labels], lambda x: fn.one_hot(x, num_classes=4))[0][0]
    np.testing.assert_array_equal(out, np.eye(4, dtype=np.float32)[labels])
    assert run_arrays([np.array([2], np.int32)], lambda x: fn.one_hot(x, num_classes=3, axis=-1))[0][0].shape == (1, 3)


def test_values_must_fit_the_type() -> None:
    node = fn.external_source([[np.int32(1)]])
    with pytest.raises(PipelineDefinitionError, match="on_value=300.0 does not fit the output type uint8"):
        fn.one_hot(node, num_classes=3, dtype=types.UINT8, on_value=300)
    with pytest.raises(PipelineDefinitionError, match="num_classes must be at least 1"):
        fn.one_hot(node)


# --- the GPU implementation (the CPU code over cupy; numpy in CI) ---------------------------------
from detection_gpu import check_recorded_on_gpu


@pytest.mark.parametrize("case", ["one_hot_scalars", "one_hot_axis0_int16", "one_hot_mixed_batch",
                                  "one_hot_single_elements", "one_hot_2d_axis1", "one_hot_float_input"])
def test_gpu_matches_cpu_and_dali(kernel_ctx, case: str) -> None:
    check_recorded_on_gpu(kernel_ctx, case)
