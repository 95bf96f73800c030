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
