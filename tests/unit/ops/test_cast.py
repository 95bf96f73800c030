"""``cast``: rounding half away from zero, saturation, NaN.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    run_arrays,
)

import streamflow as sf
from streamflow import fn

# --- cast -------------------------------------------------------------------
VALUES = np.array([-300.7, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4999, 254.5, 255.5, 1e10, np.nan], np.float32)


@pytest.mark.parametrize(
    "dtype,expected",
    [  # measured on DALI 2.4 fn.cast (NaN -> 0 for integer targets)
        ("uint8", [0, 0, 0, 1, 2, 3, 2, 255, 255, 255, 0]),
        (sf.types.INT8, [-128, -2, -1, 1, 2, 3, 2, 127, 127, 127, 0]),
        ("int32", [-301, -2, -1, 1, 2, 3, 2, 255, 256, 2**31 - 1, 0]),
    ],
)
def test_cast_rounds_half_away_and_saturates(dtype, expected) -> None:
    out = run_arrays([VALUES], lambda x: fn.cast(x, dtype=dtype))[0][0]
    assert out.dtype == np.dtype(str(np.dtype(sf.types.parse_dtype(dtype).numpy)))
    assert out.tolist() == expected


def test_cast_int_to_narrower_int_saturates_and_float_is_plain() -> None:
    x = np.array([-5, 0, 200, 70000], np.int32)
    out = run_arrays([x], lambda d: (fn.cast(d, dtype="uint8"), fn.cast(d, dtype="float16"), fn.cast(d, dtype="int64")))
    assert out[0][0].tolist() == [0, 0, 200, 255]
    assert out[1][0].dtype == np.float16 and out[1][0].tolist() == [-5, 0, 200, np.inf]
    assert out[2][0].dtype == np.int64 and out[2][0].tolist() == x.tolist()


def test_cast_errors() -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="unknown data type"):
        fn.cast(fn.external_source([[VALUES]]), dtype="uint7")


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------
from helpers import assert_same_outputs, run_cpu_op, run_gpu_impl

from streamflow.ops.cast import Cast

_KERNEL_TYPES = [np.uint8, np.int8, np.uint16, np.int16, np.float16, np.float32]
_OTHER_TYPES = [np.int32, np.int64, np.float64, np.bool_]


def _cast_inputs(dtype) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    specials = np.array([-70000.5, -300.7, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 2.4999, 127.5, 254.5, 255.5,
                         32767.5, 65504.0, 65520.0, 1e10, np.inf, -np.inf, np.nan], np.float64)
    noise = rng.normal(0, 3000, (3, 1700))
    dt = np.dtype(dtype)
    if dt.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            return [specials.astype(dt), noise.astype(dt), np.array(2.5, dt)]
    if dt == np.bool_:
        return [np.array([True, False, True]), (noise > 0)]
    info = np.iinfo(dt)
    ints = [info.min, info.min + 1, -1, 0, 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, info.max]
    return [np.array([v for v in ints if info.min <= v <= info.max], dt),
            np.clip(noise, info.min, info.max).astype(dt), np.array(7, dt)]


@pytest.mark.parametrize("src", _KERNEL_TYPES + _OTHER_TYPES, ids=lambda t: np.dtype(t).name)
def test_gpu_cast_equals_cpu(kernel_ctx, grid, src) -> None:
    """Every pair of types, bit-identical (rounding, saturation, NaN -> 0, float16 overflow, -0)."""
    images = _cast_inputs(src)
    for dst in _KERNEL_TYPES + _OTHER_TYPES:
        op = Cast(np.dtype(dst).name)
        gpu, gf = run_gpu_impl(kernel_ctx, op, images)
        with np.errstate(over="ignore", invalid="ignore"):
            cpu, cf = run_cpu_op(op, images)
        assert not gf and not cf
        assert_same_outputs(gpu, cpu, f"{np.dtype(src).name} -> {np.dtype(dst).name}")
        for g, c in zip(gpu, cpu):  # the sign of zero too
            if np.dtype(dst).kind == "f":
                assert np.array_equal(np.signbit(g), np.signbit(c))


def test_gpu_cast_errors(kernel_ctx) -> None:
    _, failures = run_gpu_impl(kernel_ctx, Cast("float32"), [np.array(["a"]), np.zeros(2, np.uint8)])
    assert "numeric" in str(failures[0]) and 1 not in failures
