"""``reinterpret`` against DALI 2.4 (exact: the same bytes), its errors, and its GPU version."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.breadth_cases import REINTERPRET, check
from helpers import assert_same_outputs, make_chunk, run_arrays

from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.reinterpret import Reinterpret, reinterpreted_shape


@pytest.mark.parametrize("case", REINTERPRET, ids=lambda c: c.name)
def test_reinterpret_matches_dali(case) -> None:
    check("reinterpret", case)


def test_shape_rules() -> None:
    assert reinterpreted_shape((480, 640, 3), 1, 1, shape=None, rel_shape=[0.5, -1], src_dims=None) == (240, 3840)
    assert reinterpreted_shape((300, 200, 1), 1, 1, shape=None, rel_shape=None, src_dims=[-1, 1, 0]) == (1, 200, 300)
    assert reinterpreted_shape((300, 200, 1), 1, 1, shape=None, rel_shape=[-1, 0.5, 2],
                               src_dims=[-1, 1, 0]) == (1, 100, 600)
    assert reinterpreted_shape((4, 6), 2, 4, shape=None, rel_shape=None, src_dims=None) == (4, 3)


def test_output_is_a_view() -> None:
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    op = Reinterpret(dtype=np.dtype(np.uint8), shape=None, rel_shape=None, src_dims=None, layout="")
    out = op.run(make_chunk([x]))[0][0]
    assert out.shape == (3, 16) and np.shares_memory(out, x)


def test_bad_arguments_are_definition_errors() -> None:
    x = [np.zeros((2, 2), np.uint8)]
    with pytest.raises(PipelineDefinitionError, match="mutually exclusive"):
        run_arrays(x, lambda a: fn.reinterpret(a, shape=[4], rel_shape=[1.0, 1.0]))
    with pytest.raises(PipelineDefinitionError, match="one extent"):
        run_arrays(x, lambda a: fn.reinterpret(a, shape=[-1, -1]))
    with pytest.raises(PipelineDefinitionError, match="dtype"):
        run_arrays(x, lambda a: fn.reinterpret(a, dtype="nope"))
    one = run_arrays(x, lambda a: fn.reinterpret(a, dtype=types.UINT16))[0][0]
    assert one.shape == (2, 1) and one.dtype == np.uint16


@pytest.mark.parametrize("kw", [dict(dtype=np.dtype(np.uint8)), dict(shape=(-1,)), dict(src_dims=(1, -1, 0)),
                                dict(rel_shape=(1.0, -1.0), dtype=np.dtype(np.float32))])
def test_gpu_reinterpret_equals_cpu(kernel_ctx, kw) -> None:
    from streamflow.gpu.ops import find_impl

    samples = [np.arange(24, dtype=np.int16).reshape(4, 6), np.arange(8, dtype=np.int16).reshape(2, 4)]
    op = Reinterpret(dtype=kw.get("dtype"), shape=kw.get("shape"), rel_shape=kw.get("rel_shape"),
                     src_dims=kw.get("src_dims"), layout="")
    want = op.run(make_chunk(samples))[0]
    with kernel_ctx.activate():
        got = find_impl(op)(op, make_chunk(kernel_ctx.to_device(samples)), kernel_ctx)[0]
    assert_same_outputs([kernel_ctx.to_host(g) for g in got], want, f"reinterpret {kw}")
