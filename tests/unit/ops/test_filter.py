"""``filter`` against DALI 2.4's recorded CPU outputs.

Tolerance: float32 outputs of integer inputs bit-identical; of float32
inputs within 1e-6 (a few ulps: DALI sums float inputs in another order);
uint8 outputs equal except at most one value per case, off by one at an x.5
tie (the sums differ in the last bit at some borders).
"""

from __future__ import annotations

import numpy as np
import pytest
from augment_refs import batch, inputs, load, max_diff
from helpers import make_chunk, run_arrays

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.filter import Filter


def kernel(name: str) -> np.ndarray:
    return load("filters")[f"kernel/{name}"]


def assert_close_u8(got, want, most=1):
    assert max_diff(got, want) <= 1
    assert sum(int((g != w).sum()) for g, w in zip(got, want)) <= most


@pytest.mark.parametrize("border", ["reflect_101", "reflect_1001", "wrap", "clamp", "constant"])
def test_borders_match_dali(border: str) -> None:
    k = kernel("k35_avg")
    (out,) = run_arrays(inputs("filters", "u8"), lambda x: fn.filter(x, k, border=border))
    assert_close_u8(out, batch("filters", f"filter/u8/k35_avg_{border}"))


def test_float_modes_anchor_and_fill_match_dali() -> None:
    imgs = inputs("filters", "u8")
    k = kernel("k35")
    cases = {
        "float/k35_reflect_101": lambda x: fn.filter(x, k, dtype=sf.types.FLOAT),
        "float/k35_anchor_0_4": lambda x: fn.filter(x, k, anchor=(0, 4), dtype=sf.types.FLOAT),
        "float/k35_valid": lambda x: fn.filter(x, k, mode="valid", dtype=sf.types.FLOAT),
        "float/k44": lambda x: fn.filter(x, kernel("k44"), dtype=sf.types.FLOAT),
        "u8/k35_avg_fill_77": lambda x: fn.filter(x, kernel("k35_avg"), np.uint8(77), border="constant"),
        "u8/sharpen": lambda x: fn.filter(x, kernel("sharpen")),
    }
    for key, build in cases.items():
        (out,) = run_arrays(imgs, build)
        assert max_diff(out, batch("filters", f"filter/{key}")) == 0, key
    (out,) = run_arrays(imgs, lambda x: fn.filter(x, kernel("big")))
    assert_close_u8(out, batch("filters", "filter/u8/big_reflect"))


def test_types_gray_and_per_sample_kernels_match_dali() -> None:
    (out,) = run_arrays(inputs("filters", "f32"), lambda x: fn.filter(x, kernel("k35")))
    assert max_diff(out, batch("filters", "filter/f32/k35")) <= 1e-6  # values in [-3, 3]: a few ulps
    (out,) = run_arrays(inputs("filters", "i16"), lambda x: fn.filter(x, kernel("sharpen")))
    assert max_diff(out, batch("filters", "filter/i16/sharpen")) == 0
    gray = [np.ascontiguousarray(im[..., 1]) for im in inputs("filters", "u8")]
    (out,) = run_arrays(gray, lambda x: fn.filter(x, kernel("k35"), dtype=sf.types.FLOAT))
    assert max_diff(out, batch("filters", "filter/gray/k35")) == 0
    ks = [kernel("k35"), kernel("sharpen") / 3, kernel("big")]
    (out,) = run_arrays(inputs("filters", "u8"), lambda x, k: fn.filter(x, k), k=ks)
    assert_close_u8(out, batch("filters", "filter/u8/per_sample"))


def test_per_sample_fill_values_and_identity() -> None:
    img = np.arange(12, dtype=np.uint8).reshape(3, 4, 1)
    shift = np.zeros((3, 3), np.float32)
    shift[0, 0] = 1  # out[y, x] = in[y - 1, x - 1]
    fills = [np.uint8(200), np.uint8(7)]
    (out,) = run_arrays([img, img], lambda x, f: fn.filter(x, shift, f, border="constant"), f=fills)
    for o, f in zip(out, fills):
        assert o[0, 0, 0] == f and o[1, 1, 0] == img[0, 0, 0] and o[2, 3, 0] == img[1, 2, 0]
    (same,) = run_arrays([img], lambda x: fn.filter(x, np.ones((1, 1))))
    assert np.array_equal(same[0], img)


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="border must be one of"):
        Filter(np.ones((3, 3)), border="mirror")
    with pytest.raises(PipelineDefinitionError, match="mode must be 'same' or 'valid'"):
        Filter(np.ones((3, 3)), mode="full")
    with pytest.raises(PipelineDefinitionError, match="non-empty 2-D array"):
        Filter(np.ones(3))
    chunk = make_chunk([np.zeros((5, 5), np.uint8), np.zeros((2, 2), np.uint8), np.zeros((5, 5), np.uint16)],
                       {"anchor": [np.array([5, 0]), np.array([0, 0]), np.array([1, 1])]})
    Filter(np.ones((3, 3)), mode="valid").run(chunk)
    assert "anchor (5, 0) must lie within the 3x3 filter" in str(chunk.failures[0])
    assert "does not fit" in str(chunk.failures[1])
    assert 2 not in chunk.failures
    chunk = make_chunk([np.zeros((5, 5), np.uint8)])
    Filter(np.ones((3, 3)), dtype="int16").run(chunk)
    assert "dtype must be FLOAT or the input's type (uint8)" in str(chunk.failures[0])
