"""Arithmetic on pipeline data and ``streamflow.math``: DALI 2.4's types and values, one operator per expression.

The expected values and types below are what DALI 2.4's CPU pipelines gave
for the same inputs (``nvidia-dali-cuda130``, ``device_id=None``).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_arrays

import streamflow as sf
from streamflow import fn
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
