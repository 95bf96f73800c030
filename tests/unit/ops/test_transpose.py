"""``transpose``: permutations and layout names.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    assert_gpu_equals_cpu,
    rand_image,
)

import streamflow as sf
from streamflow import fn


# --- transpose --------------------------------------------------------------
def test_transpose_perm_layout_and_default_reverse() -> None:
    images = [rand_image(4, 5, seed=1), rand_image(6, 3, seed=2)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        x = fn.external_source([images], layout="HWC")
        return fn.transpose(x, perm=[2, 0, 1]), fn.transpose(x), fn.transpose(x, perm=[1, 0, 2], output_layout="WHC")

    with pipe() as p:
        chw, rev, named = p.run()
    assert np.array_equal(chw.at(0), images[0].transpose(2, 0, 1)) and chw.layout == "CHW"
    assert np.array_equal(rev.at(1), images[1].transpose(2, 1, 0)) and rev.layout == "CWH"
    assert np.array_equal(named.at(1), images[1].transpose(1, 0, 2)) and named.layout == "WHC"
    with pytest.raises(sf.PipelineDefinitionError, match="permutation"):
        fn.transpose(fn.external_source([[]]), perm=[0, 0, 1])


# --- the GPU implementation (cupy on a GPU; numpy in CI) -----------------------------------------
from helpers import run_gpu_impl

from streamflow.ops.transpose import Transpose


@pytest.mark.parametrize("perm", [(2, 0, 1), None, (0, 1, 2)])
def test_gpu_transpose_equals_cpu(kernel_ctx, perm) -> None:
    images = [rand_image(4, 5, seed=1), rand_image(6, 3, seed=2).astype(np.float32)[::-1],
              np.arange(24, dtype=np.int64).reshape(2, 3, 4)]
    op = Transpose(perm, input_layout="HWC")
    gpu = assert_gpu_equals_cpu(kernel_ctx, op, images, what=f"perm={perm}")
    assert all(g.flags.c_contiguous for g in gpu)


def test_gpu_transpose_errors(kernel_ctx) -> None:
    _, failures = run_gpu_impl(kernel_ctx, Transpose((1, 0)), [rand_image(), np.zeros((2, 3))])
    assert "has 2 dimensions but the sample has shape (23, 31, 3)" in str(failures[0]) and 1 not in failures
