"""``streamflow.plugin.jax.fn.jax_function``: JAX functions of whole batches as pipeline steps (DALI's)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import run_arrays

import streamflow as sf

jax = pytest.importorskip("jax")

from streamflow.plugin.jax.fn import jax_function  # after the skip: needs jax


def test_decorated_function_gets_the_batch_as_one_array() -> None:
    seen: list[Any] = []

    @jax_function
    def flip(batch: Any) -> Any:
        seen.append((isinstance(batch, jax.Array), batch.shape))
        return batch[:, ::-1]

    data = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)]
    (out,) = run_arrays(data, flip)
    np.testing.assert_array_equal(out[0], data[0][::-1])
    assert seen[0] == (True, (2, 2, 3))


def test_jit_vmap_and_several_outputs() -> None:
    @jax_function(num_outputs=2, output_layouts=["HW", ""])
    @jax.jit
    @jax.vmap
    def twice_and_sum(x: Any) -> Any:
        return x * 2, x.sum()

    data = [np.full((2, 2), 3, np.int32), np.eye(2, dtype=np.int32)]
    doubled, sums = run_arrays(data, lambda x: tuple(twice_and_sum(x)))
    np.testing.assert_array_equal(doubled[1], data[1] * 2)
    assert sums[0] == 12 and sums[1] == 2


def test_samples_of_different_shapes_fail_clearly() -> None:
    @jax_function
    def ident(x: Any) -> Any:
        return x

    with pytest.raises(sf.PipelineError, match="different shapes"):
        run_arrays([np.zeros(2, np.float32), np.zeros(3, np.float32)], ident)


def test_sharding_is_refused() -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="sharding"):
        jax_function(lambda x: x, sharding=object())
