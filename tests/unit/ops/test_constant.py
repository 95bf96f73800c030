"""``constant``, ``full``, ``full_like``, ``zeros``, ``ones``, ``zeros_like``, ``ones_like`` against
DALI 2.4's CPU operators (exact: integer conversions and float copies), plus their GPU versions
through the host context."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.breadth_cases import CONSTANT, FULL, FULL_LIKE, ZEROS_ONES, check
from helpers import assert_same_outputs, make_chunk, run_arrays, run_cpu_op

from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.constant import Constant, Fill


@pytest.mark.parametrize("case", CONSTANT, ids=lambda c: c.name)
def test_constant_matches_dali(case) -> None:
    check("constant", case)


@pytest.mark.parametrize("case", FULL, ids=lambda c: c.name)
def test_full_matches_dali(case) -> None:
    check("full", case)


@pytest.mark.parametrize("case", FULL_LIKE, ids=lambda c: c.name)
def test_full_like_matches_dali(case) -> None:
    check("full_like", case)


@pytest.mark.parametrize("case", ZEROS_ONES, ids=lambda c: c.name)
def test_zeros_ones_matches_dali(case) -> None:
    check("zeros_ones", case, error_names=("zeros", "ones"))


def test_definition_errors_name_the_argument() -> None:
    with pytest.raises(PipelineDefinitionError, match="fdata"):
        run_arrays([np.zeros(1)], lambda x: (fn.constant(), x))
    with pytest.raises(PipelineDefinitionError, match="shape"):
        run_arrays([np.zeros(1)], lambda x: (fn.zeros(shape=[-1]), x))
    with pytest.raises(PipelineDefinitionError, match="dtype"):
        run_arrays([np.zeros(1)], lambda x: (fn.ones(shape=[1], dtype="complex"), x))


def test_full_fill_and_like_are_per_sample() -> None:
    like = [np.zeros((2, 3), np.uint8), np.zeros((1, 4), np.uint8)]
    out = run_arrays(like, lambda x, f: fn.full_like(x, f), f=[np.array([300.0], np.float32),
                                                                np.array([-1.5], np.float32)])[0]
    assert out[0].dtype == np.uint8 and out[0].shape == (2, 3) and (out[0] == 255).all()
    assert out[1].shape == (1, 4) and (out[1] == 0).all()


def test_constant_output_is_shared_and_read_only() -> None:
    op = Constant(np.arange(3, dtype=np.int32))
    out = op.run(make_chunk([None, None]))[0]
    assert out[0] is out[1] and not out[0].flags.writeable


# --- GPU implementations (kernels' host context in CI) ----------------------------------------------

@pytest.mark.parametrize("op", [
    Fill("zeros", value=0, like=False, shape=(2, 3), dtype=np.dtype(np.float16)),
    Fill("ones_like", value=1, like=True, shape=None, dtype=None),
    Fill("full_like", value=None, like=True, shape=None, dtype=None),
], ids=["zeros", "ones_like", "full_like"])
def test_gpu_fill_equals_cpu(kernel_ctx, op) -> None:
    from streamflow.gpu.ops import find_impl

    like = [np.arange(12, dtype=np.int16).reshape(3, 4), np.zeros((2, 1), np.int16)]
    fills = [np.array([[7.6], [-1.0], [40000.0]], np.float32), np.array([2.5], np.float32)]
    inputs = [like, fills] if op.value is None else [like] if op.like else []
    samples = like
    cpu_chunk = make_chunk(samples)
    cpu_chunk.inputs = inputs
    want = op.run(cpu_chunk)[0]
    impl = find_impl(op)
    with kernel_ctx.activate():
        chunk = make_chunk(samples)
        chunk.inputs = [kernel_ctx.to_device(i) for i in inputs]
        got = impl(op, chunk, kernel_ctx)[0]
    kernel_ctx.synchronize()
    assert_same_outputs([kernel_ctx.to_host(g) for g in got], want, op.op_name)


def test_gpu_constant_equals_cpu(kernel_ctx) -> None:
    from helpers import run_gpu_impl

    op = Constant(np.array([[1.5, 2.0]], np.float32))
    got, _ = run_gpu_impl(kernel_ctx, op, [np.zeros(1), np.zeros(1)])
    want, _ = run_cpu_op(op, [np.zeros(1), np.zeros(1)])
    assert_same_outputs(got, want, "constant")


def test_dtype_enum_and_names_agree() -> None:
    a = run_arrays([np.zeros(1)], lambda x: (fn.zeros(shape=[2], dtype=types.FLOAT), x))[0][0]
    b = run_arrays([np.zeros(1)], lambda x: (fn.zeros(shape=[2], dtype="float32"), x))[0][0]
    assert a.dtype == b.dtype == np.float32


def test_constant_float64_beyond_dali() -> None:
    # DALI 2.4's constant refuses FLOAT64 ("Unsupported type: double"); here the float32 data widens.
    out = run_arrays([np.zeros(1)], lambda x: (fn.constant(fdata=[0.1], dtype=types.FLOAT64), x))[0][0]
    assert out.dtype == np.float64 and out[0] == float(np.float32(0.1))


@pytest.mark.parametrize("fill, shape", [(np.array([7, 8, 9], np.int32), [2, 1]),
                                         (np.array([[1, 2], [3, 4]], np.int32), [2]),
                                         (np.array([4, 5], np.int32), None)])
def test_full_refuses_fills_numpy_cannot_broadcast(fill, shape) -> None:
    # DALI 2.4 accepts these and picks values numpy does not define (see ops/constant.py).
    with pytest.raises(Exception, match="can't be broadcast"):
        run_arrays([np.zeros(1)], lambda x: (fn.full(fill, shape=shape), x))
