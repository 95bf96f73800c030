"""``brightness`` and ``contrast`` (``ops/color.py``) against DALI 2.4's recorded CPU outputs.

Tolerance: bit-identical for every input type (uint8, int16, float32) and
output type; both are ``brightness_contrast`` with the other arguments
neutral, in DALI's float32 arithmetic.
"""

from __future__ import annotations

import numpy as np
import pytest
from augment_refs import batch, inputs, max_diff
from helpers import assert_gpu_equals_cpu, run_arrays

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError

CASES = {
    "brightness_1.3_0.1": lambda x: fn.brightness(x, brightness=1.3, brightness_shift=0.1),
    "brightness_0.5": lambda x: fn.brightness(x, brightness=0.5),
    "brightness_shift_-0.2_float": lambda x: fn.brightness(x, brightness_shift=-0.2, dtype=sf.types.FLOAT),
    "contrast_1.5": lambda x: fn.contrast(x, contrast=1.5),
    "contrast_0.3_center_60": lambda x: fn.contrast(x, contrast=0.3, contrast_center=60.0),
    "contrast_2_float": lambda x: fn.contrast(x, contrast=2.0, dtype=sf.types.FLOAT),
}


@pytest.mark.parametrize("kind", ["u8", "i16", "f32"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(kind: str, case: str) -> None:
    (out,) = run_arrays(inputs("color", kind), CASES[case])
    assert max_diff(out, batch("color", f"{kind}/{case}")) == 0


def test_per_sample_arguments_match_dali() -> None:
    b = [np.float32(v) for v in (0.4, 1.0, 1.7)]
    c = [np.float32(v) for v in (30.0, 128.0, 200.0)]
    (out,) = run_arrays(inputs("color", "u8"), lambda x, b, c: fn.contrast(
        fn.brightness(x, brightness=b), contrast=1.4, contrast_center=c), b=b, c=c)
    assert max_diff(out, batch("color", "u8/per_sample")) == 0


def test_layout_is_kept_and_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="contrast_center"):
        fn.brightness(None, contrast_center=3.0)  # type: ignore[arg-type]

    @sf.pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        x = fn.external_source([[np.zeros((2, 2, 3), np.uint8)]], layout="HWC")
        return fn.reductions.mean(fn.contrast(x, contrast=0.0), axis_names="HW")

    with pipe() as p:
        assert np.array_equal(p.run()[0].at(0), np.full(3, 128.0, np.float32))
    with pytest.raises(PipelineDefinitionError, match="contrast"):
        run_arrays([np.zeros((2, 2), np.uint8)], lambda x: fn.contrast(x, contrast="high"))


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------
from helpers import odd_images, run_gpu_impl

from streamflow.ops.color import BrightnessContrast


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.float32])
def test_gpu_equals_cpu(kernel_ctx, grid, dtype) -> None:
    rng = np.random.default_rng(5)
    images = odd_images(rng, 3, dtype=dtype, hi=90) + [rng.integers(0, 255, (3, 5000)).astype(dtype)]
    args = {"brightness": [np.float32(v) for v in (0.5, 1.3, 1.0, 2.0)],
            "contrast_center": [np.float32(v) for v in (10.0, 128.0, 0.5, 300.0)]}
    ops = [BrightnessContrast(contrast=1.7, brightness_shift=0.1), BrightnessContrast(op_name="contrast", contrast=0.3),
           BrightnessContrast(op_name="brightness", brightness_shift=-0.4, dtype=sf.types.FLOAT),
           BrightnessContrast(contrast=1.5, dtype="uint8")]
    for op in ops:
        use = {k: v for k, v in args.items() if k in op.per_sample_args}
        assert_gpu_equals_cpu(kernel_ctx, op, images, use, what=f"{op.name} {np.dtype(dtype)}")


def test_gpu_refuses_other_types(kernel_ctx) -> None:
    _, failures = run_gpu_impl(kernel_ctx, BrightnessContrast(), [np.zeros(3, np.int32), np.zeros(3, np.uint8)])
    assert "got int32" in str(failures[0]) and 1 not in failures
