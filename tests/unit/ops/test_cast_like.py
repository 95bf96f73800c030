"""``cast_like`` against DALI 2.4 (exact: rounding half away from zero, saturation, NaN -> 0), and its
GPU version (``cast_array`` over the array module) through the host context."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.breadth_cases import CAST_LIKE, check
from helpers import assert_same_outputs, make_chunk

from streamflow.ops.cast import cast_array
from streamflow.ops.cast_like import CastLike


@pytest.mark.parametrize("case", CAST_LIKE, ids=lambda c: c.name)
def test_cast_like_matches_dali(case) -> None:
    check("cast_like", case)


VALUES = [
    np.array([1.5, -2.5, 300.7, -1e9, 0.49999997, 2.5, np.nan, np.inf, -np.inf, 65535.5, -0.0], np.float32),
    np.array([-(2 ** 40), 2 ** 40, -1, 0, 70000, 255, 256], np.int64),
    np.array([0, 1, 65535, 300], np.uint16),
    np.array([True, False]),
]


@pytest.mark.parametrize("target", [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                    np.float16, np.float32, np.float64, np.bool_])
def test_gpu_cast_like_equals_cpu(kernel_ctx, target) -> None:
    from streamflow.gpu.ops import find_impl

    likes = [np.zeros(1, target)] * len(VALUES)
    want = [cast_array(v, np.dtype(target)) for v in VALUES]
    with kernel_ctx.activate():
        chunk = make_chunk(kernel_ctx.to_device(VALUES))
        chunk.inputs.append(kernel_ctx.to_device(likes))
        got = find_impl(CastLike())(CastLike(), chunk, kernel_ctx)[0]
    kernel_ctx.synchronize()
    assert_same_outputs([kernel_ctx.to_host(g) for g in got], want, f"cast_like to {np.dtype(target)}")


class _OtherArrayModule:
    """numpy under another name: ``cast_array`` then runs its array-module code (cupy's path on a GPU)."""

    def __getattr__(self, name: str):
        return getattr(np, name)


@pytest.mark.parametrize("target", [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                    np.uint64, np.float16, np.float32, np.float64, np.bool_])
def test_cast_array_over_another_array_module_equals_numpy(target) -> None:
    for v in VALUES:
        want = cast_array(v, np.dtype(target))
        got = cast_array(v, np.dtype(target), _OtherArrayModule())
        assert got.dtype == want.dtype, (v.dtype, target)
        np.testing.assert_array_equal(got, want, err_msg=f"{v.dtype} -> {np.dtype(target)}")  # NaN == NaN here
