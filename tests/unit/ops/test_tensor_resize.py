"""``tensor_resize`` against DALI 2.4's CPU operator on real data (photos, MRI volume, signals).

Tolerances: 1 on uint8/int16 (float32 rounding of the passes, measured at most 3% of the values
off by 1), 1e-3 on float signals (measured 2e-7), 5e-3 on float volumes/photos (measured 3e-3 on
values up to 17986, 1e-4 on 276); nearest-neighbour with whole sizes exact. (With fractional
``scales`` and NN, source positions that fall exactly on a pixel boundary may round to the other
neighbour than DALI's float32 arithmetic does.)"""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.breadth_cases import TENSOR_RESIZE, check
from dali_reference.geometry_cases import photo, volume
from helpers import assert_same_outputs, make_chunk, run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.tensor_resize import TensorResize
from streamflow.types import InterpType


@pytest.mark.parametrize("case", TENSOR_RESIZE, ids=lambda c: c.name)
def test_tensor_resize_matches_dali(case) -> None:
    check("tensor_resize", case)


def test_equals_resize_on_images() -> None:
    img = photo("chelsea.png", 2)
    a, b = run_arrays([img], lambda x: (fn.tensor_resize(x, sizes=[77, 111], axes=[0, 1]),
                                        fn.resize(x, size=[77, 111])))
    assert np.abs(a[0].astype(int) - b[0].astype(int)).max() <= 1


def test_argument_errors() -> None:
    x = [np.zeros((4, 4), np.float32)]
    with pytest.raises(PipelineDefinitionError, match="exactly one of sizes and scales"):
        run_arrays(x, lambda a: fn.tensor_resize(a))
    with pytest.raises(PipelineDefinitionError, match="size_rounding"):
        run_arrays(x, lambda a: fn.tensor_resize(a, scales=[2.0], size_rounding="floor"))
    with pytest.raises(Exception, match="2 values for 1 resized axes|resized axes"):
        run_arrays(x, lambda a: fn.tensor_resize(a, sizes=[2, 3], axes=[0]))
    out = run_arrays(x, lambda a: fn.experimental.tensor_resize(a, sizes=[2, 8]))[0][0]
    assert out.shape == (2, 8)


def test_gpu_equals_cpu(kernel_ctx) -> None:
    from streamflow.gpu.ops import find_impl

    op = TensorResize(axes=(0, 1, 2), sizes=(13, 20, 30), scales=None, mode="default", max_size=None,
                      size_rounding="round", roi_start=None, roi_end=None, roi_relative=False, subpixel_scale=True,
                      alignment=(0.5,), interp=InterpType.INTERP_CUBIC, antialias=True, dtype=None, layout="DHWC")
    samples = [volume()]
    want = op.run(make_chunk(samples))[0]
    with kernel_ctx.activate():
        got = find_impl(op)(op, make_chunk(kernel_ctx.to_device(samples)), kernel_ctx)[0]
    assert_same_outputs([kernel_ctx.to_host(g) for g in got], want, "tensor_resize")
