"""``normalize``: given and computed statistics, axes, dtypes, errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    run_arrays,
)

import streamflow as sf
from streamflow import fn


# --- normalize --------------------------------------------------------------
def sample(seed=0, shape=(5, 6, 3)):
    return np.random.default_rng(seed).random(shape).astype(np.float32) * 10


def test_normalize_default_all_axes() -> None:
    x = sample()
    out = run_arrays([x], lambda d: fn.normalize(d))[0][0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, (x - x.mean()) / x.std(), atol=1e-5)


def test_normalize_axes_and_axis_names() -> None:
    x = sample(1)
    m, s = x.mean((0, 1), keepdims=True), x.std((0, 1), keepdims=True)
    a, b, c = run_arrays([x], lambda d: (fn.normalize(d, axes=[0, 1]), fn.normalize(d, axis_names="HW"),
                                     fn.normalize(d, axes=(1, 0))))
    np.testing.assert_allclose(a[0], (x - m) / s, atol=1e-5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[0], c[0])


def test_normalize_given_mean_stddev_epsilon_scale_shift_ddof() -> None:
    x = sample(2)
    out = run_arrays([x], lambda d: (
        fn.normalize(d, mean=0.5, stddev=2.0, epsilon=1.0),  # measured on DALI: sqrt(stddev^2 + eps)
        fn.normalize(d, mean=0.5),  # stddev computed around the given mean
        fn.normalize(d, ddof=1, scale=2.0, shift=3.0),
        fn.normalize(d, epsilon=1.0),
    ))
    np.testing.assert_allclose(out[0][0], (x - 0.5) / np.sqrt(5.0), atol=1e-5)
    np.testing.assert_allclose(out[1][0], (x - 0.5) / np.sqrt(((x.astype(np.float64) - 0.5) ** 2).mean()), atol=1e-5)
    np.testing.assert_allclose(out[2][0], 2 * (x - x.mean()) / x.std(ddof=1) + 3, atol=1e-5)
    np.testing.assert_allclose(out[3][0], (x - x.mean()) / np.sqrt(x.var() + 1), atol=1e-5)


def test_normalize_tensor_mean_infers_axes_and_per_sample() -> None:
    xs = [sample(3), sample(4)]
    mean = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 1, 3)
    std = np.array([2.0, 4.0, 8.0], np.float32).reshape(1, 1, 3)
    out = run_arrays(xs, lambda d: fn.normalize(d, mean=mean, stddev=std))[0]
    np.testing.assert_allclose(out[0], (xs[0] - mean) / std, atol=1e-5)
    # mean given as a tensor, stddev computed over the axes where the mean has extent 1
    out = run_arrays(xs[:1], lambda d: fn.normalize(d, mean=mean))[0][0]
    np.testing.assert_allclose(out, (xs[0] - mean) / np.sqrt(((xs[0] - mean) ** 2).mean((0, 1), keepdims=True)), atol=1e-5)
    per = [np.float32(1.0), np.float32(5.0)]
    out = run_arrays(xs, lambda d, m: fn.normalize(d, mean=m, stddev=2.0), m=per)[0]
    for x, o, m in zip(xs, out, per):
        np.testing.assert_allclose(o, (x - m) / 2.0, atol=1e-5)


def test_normalize_integer_output_and_constant_input() -> None:
    x = (sample(5) * 25).astype(np.uint8)
    out = run_arrays([x], lambda d: fn.normalize(d, dtype="uint8", scale=64, shift=128))[0][0]
    ref = 64 * (x - x.mean(dtype=np.float64)) / x.std(dtype=np.float64) + 128
    assert out.dtype == np.uint8
    assert np.abs(out.astype(int) - np.clip(np.trunc(ref + 0.5), 0, 255)).max() <= 1
    flat = run_arrays([np.full((3, 3), 7.0, np.float32)], lambda d: fn.normalize(d, shift=1.5))[0][0]
    assert np.all(flat == 1.5)  # zero stddev: DALI gives shift


def test_normalize_errors() -> None:
    src = fn.external_source([[sample()]])
    with pytest.raises(sf.PipelineError, match="batch=True needs samples of equal extents"):
        run_arrays([sample(shape=(5, 6, 3)), sample(shape=(5, 6, 4))], lambda d: fn.normalize(d, batch=True, axes=[0, 1]))
    with pytest.raises(sf.PipelineDefinitionError, match="not both"):
        fn.normalize(src, axes=[0], axis_names="H")
    with pytest.raises(sf.PipelineDefinitionError, match="epsilon"):
        fn.normalize(src, epsilon=-1)
    with pytest.raises(sf.PipelineDefinitionError, match="not in the input layout"):
        fn.normalize(src, axis_names="D")
    with pytest.raises(sf.PipelineError, match="does not fit"):
        run_arrays([sample()], lambda d: fn.normalize(d, mean=np.zeros((1, 1, 4)), axes=[0, 1]))
    fn.normalize(src, batch=True, mean=0.0, stddev=1.0)  # fine: nothing to compute over the batch


def test_normalize_batch_statistics_match_dali() -> None:
    """batch=True: one mean / stddev over the reduced axes of all samples (DALI 2.4's CPU outputs below,
    the first 6 values of each sample; float32 within 1e-6 relative)."""
    a = np.arange(24, dtype=np.float32).reshape(2, 4, 3) ** 1.5
    b = np.array([[19, 21, 23], [25, 27, 29], [7, 9, 11], [13, 15, 17]], np.float32).reshape(1, 4, 3)
    out = run_arrays([a, b], lambda d: (
        fn.normalize(d, batch=True), fn.normalize(d, batch=True, axes=[0, 1]),
        fn.normalize(fn.reshape(d, layout="HWC"), batch=True, axis_names="HW", ddof=1, epsilon=0.5, scale=2,
                     shift=3),
        fn.normalize(d, batch=True, mean=10.0)))
    dali = [
        ([-1.151738, -1.1195097, -1.0605825, -0.9842746, -0.8939111, -0.791414],
         [-0.539399, -0.4749423, -0.4104855, -0.3460288, -0.281572, -0.2171153]),
        ([-1.0985416, -1.123961, -1.1284261, -0.919769, -0.8970202, -0.8722095],
         [-0.4448504, -0.4755585, -0.5096108, -0.2384216, -0.2810378, -0.3255453]),
        ([0.8970232, 0.8482964, 0.8396945, 1.239254, 1.2827506, 1.330206],
         [2.1484075, 2.089594, 2.02438, 2.5435812, 2.4619832, 2.3767626]),
        ([-0.2480578, -0.223252, -0.1778964, -0.1191632, -0.0496115, 0.0292792],
         [0.223252, 0.2728635, 0.3224751, 0.3720866, 0.4216982, 0.4713097]),
    ]
    for got, want in zip(out, dali):
        for sample_out, ref in zip(got, want):
            np.testing.assert_allclose(sample_out.ravel()[:6], ref, rtol=1e-6, atol=1e-6)


# --- the GPU implementation (the CPU code over cupy; numpy in CI) ---------------------------------
from helpers import run_cpu_op, run_gpu_impl

from streamflow.ops.normalize import Normalize


def assert_close_on_device(ctx, got, want, what: str) -> None:
    """Bit-identical on the host build; on a GPU, within the reductions' rounding (docs/gpu.md)."""
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what} sample {i}"
        if ctx.xp is np:
            assert np.array_equal(g, w, equal_nan=True), f"{what} sample {i}"
        elif g.dtype.kind == "f":
            np.testing.assert_array_max_ulp(g, w, maxulp=2)
        else:
            assert np.abs(g.astype(np.int64) - w.astype(np.int64)).max() <= 1, f"{what} sample {i}"


@pytest.mark.parametrize("kw", [
    {}, {"axes": (0, 1)}, {"axis_names": "HW", "layout": "HWC"}, {"mean": 0.5, "stddev": 2.0, "epsilon": 1.0},
    {"ddof": 1, "scale": 64.0, "shift": 128.0, "dtype": "uint8"}, {"axes": 1, "dtype": "int16", "scale": 1000.0},
    {"mean": np.full((1, 1, 3), 2.0), "stddev_per_sample": True},
])
def test_gpu_normalize_equals_cpu(kernel_ctx, kw) -> None:
    images = [sample(3), sample(4, (7, 2, 3)), np.full((4, 5, 3), 3.0, np.float32),
              np.random.default_rng(5).integers(0, 255, (6, 9, 3)).astype(np.uint8)]
    args = {"stddev": [np.full((1, 1, 3), v) for v in (1.0, 0.5, 2.0, 30.0)]} if kw.get("stddev_per_sample") else {}
    op = Normalize(**kw)
    gpu, gf = run_gpu_impl(kernel_ctx, op, images, args)
    cpu, cf = run_cpu_op(op, images, args)
    assert not gf and not cf
    assert_close_on_device(kernel_ctx, gpu, cpu, str(kw))


def test_gpu_normalize_errors(kernel_ctx) -> None:
    _, failures = run_gpu_impl(kernel_ctx, Normalize(axes=3), [sample(), np.zeros((2, 2, 2, 2), np.float32)])
    assert "normalize: axes=[3]: axis 3 is out of range for a 3-D sample (valid: -3..2)" in str(failures[0]) and 1 not in failures
