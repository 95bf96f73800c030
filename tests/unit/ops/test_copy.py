"""``copy`` against DALI 2.4 (exact), and its GPU version through the host context."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.breadth_cases import COPY, check
from helpers import assert_same_outputs, odd_images, run_arrays, run_cpu_op, run_gpu_impl

from streamflow import fn
from streamflow.ops.copy import Copy


@pytest.mark.parametrize("case", COPY, ids=lambda c: c.name)
def test_copy_matches_dali(case) -> None:
    check("copy", case)


def test_copy_is_a_new_buffer_with_the_layout() -> None:
    img = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    out = run_arrays([img], lambda x: (fn.copy(x), fn.get_property(fn.copy(x), key="layout")))
    assert np.array_equal(out[0][0], img)
    assert bytes(out[1][0]) == b""  # external_source without a layout
    op = Copy()
    got, _ = run_cpu_op(op, [img])
    assert got[0] is not img and not np.shares_memory(got[0], img)


def test_gpu_copy_equals_cpu(kernel_ctx) -> None:
    images = odd_images(np.random.default_rng(1), 3, dtype=np.float32, hi=30) + [np.float64(2.5)]
    gpu, _ = run_gpu_impl(kernel_ctx, Copy(), images)
    cpu, _ = run_cpu_op(Copy(), images)
    assert_same_outputs(gpu, cpu, "copy")
