"""Arithmetic on pipeline data and ``streamflow.math``: DALI 2.4's types and values, one operator per expression.

The expected values and types below are what DALI 2.4's CPU pipelines gave
for the same inputs (``nvidia-dali-cuda130``, ``device_id=None``).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow import math as sfmath
from streamflow.expressions import ArithmeticOp
from streamflow.graph import topological_order

U8 = np.array([200, 3, 0], np.uint8)
I16 = np.array([-5, 7, 300], np.int16)
F32 = np.array([1.5, -2.25, 0.0], np.float32)
I32 = np.array([7, -7, 3], np.int32)

# (name, build, operands, DALI's dtype, DALI's values)
DALI = [
    ("u8+u8", lambda a: a + a, [U8], "uint8", [144, 6, 0]),
    ("u8*2", lambda a: a * 2, [U8], "int32", [400, 6, 0]),
    ("u8*2.0", lambda a: a * 2.0, [U8], "float32", [400.0, 6.0, 0.0]),
    ("u8+i16", lambda a, b: a + b, [U8, I16], "int16", [195, 10, 300]),
    ("i32/2", lambda a: a / 2, [I32], "float32", [3.5, -3.5, 1.5]),
    ("i32//2", lambda a: a // 2, [I32], "int32", [3, -3, 1]),
    ("i32%3", lambda a: a % 3, [I32], "int32", [1, -1, 0]),
    ("-u8", lambda a: -a, [U8], "uint8", [56, 253, 0]),
    ("u8>100", lambda a: a > 100, [U8], "bool", [True, False, False]),
    ("f32**2", lambda a: a ** 2, [F32], "float32", [2.25, 5.0625, 0.0]),
    ("u8**2", lambda a: a ** 2, [U8], "int32", [40000, 9, 0]),
    ("i32&3", lambda a: a & 3, [I32], "int32", [3, 1, 3]),
    ("u8+f32", lambda a, b: a + b, [U8, F32], "float32", [201.5, 0.75, 0.0]),
    ("i16*i32", lambda a, b: a * b, [I16, I32], "int32", [-35, -49, 900]),
    ("abs(i32)", lambda a: sfmath.abs(a), [I32], "int32", [7, 7, 3]),
    ("clamp(i32,0,5)", lambda a: sfmath.clamp(a, 0, 5), [I32], "int32", [5, 0, 3]),
    ("min(u8,i16)", lambda a, b: sfmath.min(a, b), [U8, I16], "int16", [-5, 3, 0]),
    ("pow(i32,2)", lambda a: sfmath.pow(a, 2), [I32], "int32", [49, 49, 9]),
    ("fpow(i32,2)", lambda a: sfmath.fpow(a, 2), [I32], "float32", [49.0, 49.0, 9.0]),
    ("u8-5", lambda a: a - 5, [U8], "int32", [195, -2, -5]),
    ("u8*-1", lambda a: a * -1, [U8], "int32", [-200, -3, 0]),
    ("f32%1", lambda a: a % 1.0, [F32], "float32", [0.5, -0.25, 0.0]),
    ("i32%-3", lambda a: a % -3, [I32], "int32", [1, -1, 0]),
    ("i32//-2", lambda a: a // -2, [I32], "int32", [-3, 3, -1]),
    ("u8==u8", lambda a: a == a, [U8], "bool", [True, True, True]),
    ("u8^1", lambda a: a ^ 1, [U8], "int32", [201, 2, 1]),
    ("floor(i32)", lambda a: sfmath.floor(a), [I32], "float32", [7.0, -7.0, 3.0]),
]


def _run(build, operands):  # type: ignore[no-untyped-def]
    extra = {f"x{k}": [op] for k, op in enumerate(operands[1:], start=1)}
    (out,) = run_arrays([operands[0]], lambda a, **kw: build(a, *kw.values()), **extra)
    return out[0]


@pytest.mark.parametrize("name, build, operands, dtype, values", DALI, ids=[c[0] for c in DALI])
def test_types_and_values_match_dali(name, build, operands, dtype, values) -> None:  # type: ignore[no-untyped-def]
    got = _run(build, operands)
    assert got.dtype == np.dtype(dtype), name
    np.testing.assert_array_equal(got, np.asarray(values, dtype=dtype))


@pytest.mark.parametrize("fn_name, ref", [("sqrt", np.sqrt), ("exp", np.exp), ("log", np.log), ("sin", np.sin),
                                           ("cbrt", np.cbrt), ("tanh", np.tanh), ("atan", np.arctan),
                                           ("rsqrt", lambda x: 1 / np.sqrt(x)), ("ceil", np.ceil)])
def test_float_functions_against_numpy(fn_name, ref) -> None:  # type: ignore[no-untyped-def]
    x = np.array([0.25, 1.0, 2.5, 9.0], np.float32)
    got = _run(getattr(sfmath, fn_name), [x])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref(x).astype(np.float32), rtol=1e-6)
    assert _run(getattr(sfmath, fn_name), [np.array([1, 4], np.uint8)]).dtype == np.float32


def test_a_whole_expression_is_one_operator_evaluated_in_blocks() -> None:
    images = [np.random.default_rng(0).integers(0, 256, (300, 200, 3), np.uint8)]  # > one block of elements

    @sf.pipeline_def(batch_size=1, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source([images])
        y = (x * 2.0 + 1) / 3 - sfmath.sqrt(x) * (x > 128)
        return (y,)

    p = pipe()
    p.build()
    arithmetic = [n for n in topological_order(p._outputs) if isinstance(n.op, ArithmeticOp)]
    assert len(arithmetic) == 1, [n.name for n in arithmetic]
    with p:
        (out,) = p.run()
    x = images[0].astype(np.float32)
    want = (x * np.float32(2.0) + np.float32(1)) / np.float32(3) - np.sqrt(x) * (x > 128)
    np.testing.assert_allclose(out.at(0), want, rtol=1e-6)
    assert out.at(0).dtype == np.float32


def test_per_sample_scalars_broadcast_and_bad_shapes_fail_the_sample() -> None:
    images = [np.ones((2, 3, 3), np.float32), np.ones((4, 2, 3), np.float32)]
    scale = [np.float32(2.0), np.float32(3.0)]
    (out,) = run_arrays(images, lambda a, s: a * s, s=scale)
    np.testing.assert_array_equal(out[0], np.full((2, 3, 3), 2.0, np.float32))
    np.testing.assert_array_equal(out[1], np.full((4, 2, 3), 3.0, np.float32))

    @sf.pipeline_def(batch_size=2, num_threads=1, on_error="skip")
    def pipe():  # type: ignore[no-untyped-def]
        a = fn.external_source([images])
        b = fn.external_source([[np.ones((2, 3, 3), np.float32)] * 2])
        return (a + b,)

    with pipe() as p:
        batch = p.run()
    assert len(batch[0]) == 1 and "add(x0, x1)" in batch.dropped[0][1].reason


def test_comparison_makes_data_not_a_python_bool() -> None:
    x = fn.external_source([[U8]])
    with pytest.raises(sf.PipelineDefinitionError, match="no truth value"):
        bool(x == 3)
    with pytest.raises(sf.PipelineDefinitionError, match="operand must be pipeline data"):
        x + "a"
    with pytest.raises(sf.PipelineDefinitionError, match="at least one operand"):
        sfmath.sqrt(4.0)


# --- the generated GPU kernel (its host build in CI; a real GPU when present) -----------------

from helpers import assert_same_outputs, make_chunk

from streamflow.expressions import Const, Input, Node, constant


def _op(tree, n):  # type: ignore[no-untyped-def]
    return ArithmeticOp(tree, n)


EXACT = [  # integer and +-*/ results: the kernel equals numpy bit for bit
    ("u8+u8", Node("add", (Input(0), Input(0))), [U8]),
    ("u8*2", Node("mul", (Input(0), constant(2))), [U8]),
    ("u8+i16", Node("add", (Input(0), Input(1))), [U8, I16]),
    ("i32//-2", Node("floordiv", (Input(0), constant(-2))), [I32]),
    ("i32%3", Node("mod", (Input(0), constant(3))), [I32]),
    ("i32//0", Node("floordiv", (Input(0), constant(0))), [I32]),
    ("-u8", Node("neg", (Input(0),)), [U8]),
    ("u8**2", Node("pow", (Input(0), constant(2))), [U8]),
    ("u8>100", Node("gt", (Input(0), constant(100))), [U8]),
    ("i32^3", Node("xor", (Input(0), constant(3))), [I32]),
    ("f32/u8", Node("truediv", (Input(1), Input(0))), [U8, F32]),
    ("(x*2.0+1)/3", Node("truediv", (Node("add", (Node("mul", (Input(0), constant(2.0))), constant(1))),
                                      constant(3))), [F32]),
    ("f32%1", Node("mod", (Input(0), constant(1.0))), [F32]),
    ("min(u8,i16)", Node("min", (Input(0), Input(1))), [U8, I16]),
    ("max(f32 nan)", Node("max", (Input(0), Const(float("nan"), np.dtype(np.float32)))), [F32]),
    ("abs(i16)", Node("abs", (Input(0),)), [I16]),
    ("sqrt(u8)", Node("sqrt", (Input(0),)), [U8]),
    ("floor(f32)", Node("floor", (Input(0),)), [F32]),
]


@pytest.mark.parametrize("name, tree, operands", EXACT, ids=[c[0] for c in EXACT])
def test_gpu_kernel_equals_numpy(kernel_ctx, name, tree, operands) -> None:  # type: ignore[no-untyped-def]
    op = _op(tree, len(operands))
    big = [np.resize(o, (37, 41)).astype(o.dtype) for o in operands]
    gpu, failures = _run_impl(kernel_ctx, op, big)
    assert not failures
    want = op.evaluate(big)
    assert_same_outputs([gpu], [want], name)


@pytest.mark.parametrize("fn_name", ["exp", "log", "sin", "tanh", "cbrt", "atan"])
def test_gpu_kernel_transcendentals_within_an_ulp_or_two(kernel_ctx, fn_name) -> None:  # type: ignore[no-untyped-def]
    x = np.linspace(0.1, 3.0, 1001, dtype=np.float32)
    op = _op(Node(fn_name, (Input(0),)), 1)
    gpu, _ = _run_impl(kernel_ctx, op, [x])
    np.testing.assert_allclose(gpu, op.evaluate([x]), rtol=3e-7)


def test_gpu_kernel_broadcasts_per_sample_scalars(kernel_ctx) -> None:
    op = _op(Node("mul", (Input(0), Input(1))), 2)
    image, scale = np.arange(12, dtype=np.float32).reshape(3, 4), np.float32(2.5)
    gpu, _ = _run_impl(kernel_ctx, op, [image, np.asarray(scale)])
    np.testing.assert_array_equal(gpu, image * scale)


def _run_impl(ctx, op, operands):  # type: ignore[no-untyped-def]
    from streamflow.gpu.ops import find_impl

    impl = find_impl(op)
    with ctx.activate():
        chunk = make_chunk(ctx.to_device(operands[:1]))
        chunk.inputs = [ctx.to_device([o]) for o in operands]
        out = impl(op, chunk, ctx)[0]
    ctx.synchronize()
    return (None if out[0] is None else ctx.to_host(out[0])), chunk.failures


def test_input_sets_apply_the_operator_to_each_input() -> None:
    """DALI's input sets: fn.op([a, b]) is [fn.op(a), fn.op(b)] with the same arguments."""
    a = [np.array([1, 2], np.int32)]
    b = [np.array([5], np.int32)]
    out = run_arrays(a, lambda x, y: tuple(fn.cast([x, y], dtype=sf.types.FLOAT)), y=b)
    assert [o[0].tolist() for o in out] == [[1.0, 2.0], [5.0]] and out[0][0].dtype == np.float32
    with pytest.raises(sf.errors.PipelineDefinitionError, match="equally long"):
        run_arrays(a, lambda x, y: fn.cat([x, y], [x]), y=b)


@pytest.mark.parametrize("name, tree, operands", EXACT, ids=[c[0] for c in EXACT])
def test_cpu_compiled_kernel_equals_numpy(name, tree, operands) -> None:  # type: ignore[no-untyped-def]
    """The CPU path runs the generated kernel (host C++) on samples of >= MIN_ELEMENTS: numpy's bits."""
    from streamflow.expression_kernels import CompiledExpression

    op = _op(tree, len(operands))
    n = CompiledExpression.MIN_ELEMENTS + 7
    big = [np.resize(o, (n,)).astype(o.dtype) for o in operands]
    got = CompiledExpression(tree).evaluate(big)
    assert got is not None, "the compiled path was not taken"
    assert_same_outputs([got], [op.evaluate(big)], name)


def test_cpu_compiled_kernel_writes_into_the_batch_array_and_skips_what_it_cannot_do() -> None:
    from streamflow.expression_kernels import CompiledExpression

    tree = Node("mul", (Input(0), constant(2.0)))
    x = np.arange(5000, dtype=np.uint8).reshape(50, 100)
    slot = np.empty((50, 100), np.float32)
    assert CompiledExpression(tree).evaluate([x], lambda shape, dtype: slot) is slot
    assert CompiledExpression(tree).evaluate([x[:1, :10]]) is None  # small: numpy
    assert CompiledExpression(Node("exp", (Input(0),))).evaluate([x]) is None  # libm: numpy
    assert CompiledExpression(Node("add", (Input(0), Input(1)))).evaluate(
        [x, np.ones((50, 1), np.uint8)]) is None  # broadcasting other than a scalar: numpy
def test_numpy_scalar_on_the_left_keeps_its_type() -> None:
    x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    @sf.pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        d = fn.external_source([[x]])
        return np.uint8(255) - d, np.float32(0.5) * d
    with pipe() as p:
        a, b = (np.asarray(t.at(0)) for t in p.run())
    assert a.dtype == np.uint8 and np.array_equal(a, 255 - x)  # DALI: Constant(255, UINT8) - uint8 is uint8
    assert b.dtype == np.float32
def test_array_constants_broadcast_with_the_samples() -> None:
    scalars = [np.float32(2.0), np.float32(-1.0)]
    big = np.ones((70, 80, 3), np.float32)  # more elements than one evaluation block
    @sf.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        s = fn.external_source([scalars])
        x = fn.external_source([[big, big]])
        return s * np.array([1.0, 0.0], np.float32) + 1, x * np.array([1, 2, 3], np.float32)
    with pipe() as p:
        vec, scaled = p.run()
    assert np.array_equal(vec.at(0), [3.0, 1.0]) and np.array_equal(vec.at(1), [0.0, 1.0])
    assert np.array_equal(np.asarray(scaled.at(0))[5, 7], [1, 2, 3])


# --- types.Constant (DALI's typed constants in expressions, expr_type_promotions tutorial) -----------
def test_types_constant_scalar_types_follow_dali() -> None:
    """DALI 2.4: Constant(10) is INT32, Constant(10.0) FLOAT, Constant(10.0, UINT8) and .uint8() UINT8."""
    c = types.Constant
    assert str(c(10)) == "10:DALIDataType.INT32" and str(c(10.0)) == "10.0:DALIDataType.FLOAT"
    assert str(c(10.0, types.DALIDataType.UINT8)) == "10:DALIDataType.UINT8" == str(c(10).uint8())
    assert types.to_dali_type("float32") is types.FLOAT and types.to_dali_type("uint8") is types.UINT8
    x = [np.array([42, 8], np.uint8)]
    out = run_arrays(x, lambda t: (t * c(10), c(10.0) * t, t * c(10).uint8(), c(15).float32() - t,
                                   (c(4).uint16() * t) // c(20).uint16()))
    want = [("int32", [420, 80]), ("float32", [420, 80]), ("uint8", [164, 80]), ("float32", [-27, 7]),
            ("uint16", [8, 1])]
    for got, (dtype, values) in zip(out, want):
        assert got[0].dtype == np.dtype(dtype) and got[0].tolist() == values


def test_types_constant_array_is_pipeline_data() -> None:
    """Constant(array) gives the array for every sample (DALI: an operator node), usable as an input."""
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = run_arrays([np.zeros((2, 3), np.int32)] * 2,
                     lambda t: (fn.cat(types.Constant(arr), t + 1, axis=0), types.Constant(arr, layout="AB") + t))
    assert out[0][1].tolist() == [[0, 1, 2], [3, 4, 5], [1, 1, 1], [1, 1, 1]]
    assert out[1][0].tolist() == arr.tolist()
    with pytest.raises(TypeError):
        types.Constant("ten")


def test_float_floordiv_is_a_plain_division_as_in_dali() -> None:
    """DALI 2.4: `//` with a floating-point operand divides without flooring (values below are its outputs)."""
    a, b, c = np.float32([42, -7.5, 7]), np.float32([9, 2, 4]), np.uint8([42, 8, 7])
    out = run_arrays([a], lambda x, y, z: (x // y, z // y, x // 2, z // 2.0), y=[b], z=[c])
    want = [[4.6666665, -3.75, 1.75], [4.6666665, 4.0, 1.75], [21.0, -3.75, 3.5], [21.0, 4.0, 3.5]]
    for got, values in zip(out, want):
        assert got[0].dtype == np.float32
        np.testing.assert_allclose(got[0], values, rtol=1e-7)
    big = np.linspace(-50, 50, 5000, dtype=np.float32)  # long enough for the compiled CPU kernel
    got = run_arrays([big], lambda x: x // np.float32(3.0))[0][0]
    np.testing.assert_allclose(got, big / np.float32(3.0), rtol=1e-6)
