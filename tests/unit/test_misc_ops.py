"""cast, normalize, random.choice and random.uniform(values=...) against numpy references."""

from __future__ import annotations

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn
from streamflow.fn import misc
from streamflow.fn import random as frandom


def run_on(samples, build, **extra_sources):
    @sf.pipeline_def(batch_size=len(samples), num_threads=2, seed=5)
    def pipe():
        nodes = {k: fn.external_source([list(v)]) for k, v in extra_sources.items()}
        out = build(fn.external_source([list(samples)]), **nodes)
        return out if isinstance(out, tuple) else (out,)

    with pipe() as p:
        return [[np.asarray(t.at(i)) for i in range(len(samples))] for t in p.run()]


def run_random(build, batch_size=8, seed=5):
    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=seed)
    def pipe():
        out = build()
        # a pipeline needs a source (the graph is walked from the outputs)
        return (*(out if isinstance(out, tuple) else (out,)), fn.external_source([[np.zeros(1)] * batch_size]))

    with pipe() as p:
        return [[np.asarray(t.at(i)) for i in range(batch_size)] for t in p.run()[:-1]]


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
    out = run_on([VALUES], lambda x: misc.cast(x, dtype=dtype))[0][0]
    assert out.dtype == np.dtype(str(np.dtype(sf.types.parse_dtype(dtype).numpy)))
    assert out.tolist() == expected


def test_cast_int_to_narrower_int_saturates_and_float_is_plain() -> None:
    x = np.array([-5, 0, 200, 70000], np.int32)
    out = run_on([x], lambda d: (misc.cast(d, dtype="uint8"), misc.cast(d, dtype="float16"), misc.cast(d, dtype="int64")))
    assert out[0][0].tolist() == [0, 0, 200, 255]
    assert out[1][0].dtype == np.float16 and out[1][0].tolist() == [-5, 0, 200, np.inf]
    assert out[2][0].dtype == np.int64 and out[2][0].tolist() == x.tolist()


def test_cast_errors() -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="unknown data type"):
        misc.cast(fn.external_source([[VALUES]]), dtype="uint7")


# --- normalize --------------------------------------------------------------
def sample(seed=0, shape=(5, 6, 3)):
    return np.random.default_rng(seed).random(shape).astype(np.float32) * 10


def test_normalize_default_all_axes() -> None:
    x = sample()
    out = run_on([x], lambda d: misc.normalize(d))[0][0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, (x - x.mean()) / x.std(), atol=1e-5)


def test_normalize_axes_and_axis_names() -> None:
    x = sample(1)
    m, s = x.mean((0, 1), keepdims=True), x.std((0, 1), keepdims=True)
    a, b, c = run_on([x], lambda d: (misc.normalize(d, axes=[0, 1]), misc.normalize(d, axis_names="HW"),
                                     misc.normalize(d, axes=(1, 0))))
    np.testing.assert_allclose(a[0], (x - m) / s, atol=1e-5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[0], c[0])


def test_normalize_given_mean_stddev_epsilon_scale_shift_ddof() -> None:
    x = sample(2)
    out = run_on([x], lambda d: (
        misc.normalize(d, mean=0.5, stddev=2.0, epsilon=1.0),  # measured on DALI: sqrt(stddev^2 + eps)
        misc.normalize(d, mean=0.5),  # stddev computed around the given mean
        misc.normalize(d, ddof=1, scale=2.0, shift=3.0),
        misc.normalize(d, epsilon=1.0),
    ))
    np.testing.assert_allclose(out[0][0], (x - 0.5) / np.sqrt(5.0), atol=1e-5)
    np.testing.assert_allclose(out[1][0], (x - 0.5) / np.sqrt(((x.astype(np.float64) - 0.5) ** 2).mean()), atol=1e-5)
    np.testing.assert_allclose(out[2][0], 2 * (x - x.mean()) / x.std(ddof=1) + 3, atol=1e-5)
    np.testing.assert_allclose(out[3][0], (x - x.mean()) / np.sqrt(x.var() + 1), atol=1e-5)


def test_normalize_tensor_mean_infers_axes_and_per_sample() -> None:
    xs = [sample(3), sample(4)]
    mean = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 1, 3)
    std = np.array([2.0, 4.0, 8.0], np.float32).reshape(1, 1, 3)
    out = run_on(xs, lambda d: misc.normalize(d, mean=mean, stddev=std))[0]
    np.testing.assert_allclose(out[0], (xs[0] - mean) / std, atol=1e-5)
    # mean given as a tensor, stddev computed over the axes where the mean has extent 1
    out = run_on(xs[:1], lambda d: misc.normalize(d, mean=mean))[0][0]
    np.testing.assert_allclose(out, (xs[0] - mean) / np.sqrt(((xs[0] - mean) ** 2).mean((0, 1), keepdims=True)), atol=1e-5)
    per = [np.float32(1.0), np.float32(5.0)]
    out = run_on(xs, lambda d, m: misc.normalize(d, mean=m, stddev=2.0), m=per)[0]
    for x, o, m in zip(xs, out, per):
        np.testing.assert_allclose(o, (x - m) / 2.0, atol=1e-5)


def test_normalize_integer_output_and_constant_input() -> None:
    x = (sample(5) * 25).astype(np.uint8)
    out = run_on([x], lambda d: misc.normalize(d, dtype="uint8", scale=64, shift=128))[0][0]
    ref = 64 * (x - x.mean(dtype=np.float64)) / x.std(dtype=np.float64) + 128
    assert out.dtype == np.uint8
    assert np.abs(out.astype(int) - np.clip(np.trunc(ref + 0.5), 0, 255)).max() <= 1
    flat = run_on([np.full((3, 3), 7.0, np.float32)], lambda d: misc.normalize(d, shift=1.5))[0][0]
    assert np.all(flat == 1.5)  # zero stddev: DALI gives shift


def test_normalize_errors() -> None:
    src = fn.external_source([[sample()]])
    with pytest.raises(sf.PipelineDefinitionError, match="batch=True"):
        misc.normalize(src, batch=True)
    with pytest.raises(sf.PipelineDefinitionError, match="not both"):
        misc.normalize(src, axes=[0], axis_names="H")
    with pytest.raises(sf.PipelineDefinitionError, match="epsilon"):
        misc.normalize(src, epsilon=-1)
    with pytest.raises(sf.PipelineDefinitionError, match="not in the input layout"):
        misc.normalize(src, axis_names="D")
    with pytest.raises(sf.PipelineError, match="does not fit"):
        run_on([sample()], lambda d: misc.normalize(d, mean=np.zeros((1, 1, 4)), axes=[0, 1]))
    misc.normalize(src, batch=True, mean=0.0, stddev=1.0)  # fine: nothing to compute over the batch


# --- random.choice / random.uniform(values=) ---------------------------------
def test_choice_int_n_is_range_n_int32() -> None:
    (out,) = run_random(lambda: frandom.choice(5, shape=[50]))
    vals = np.concatenate(out)
    assert vals.dtype == np.int32 and set(vals.tolist()) == set(range(5))


def test_choice_keeps_value_types() -> None:
    a, b, c = run_random(lambda: (
        frandom.choice([1.5, 2.5, 7.0]), frandom.choice(np.array([3, 4], np.int16)), frandom.choice([10, 20]),
    ))
    assert a[0].dtype == np.float32 and a[0].shape == () and all(float(v) in (1.5, 2.5, 7.0) for v in a)
    assert b[0].dtype == np.int16 and all(int(v) in (3, 4) for v in b)
    assert c[0].dtype == np.int32


def test_choice_probabilities() -> None:
    (out,) = run_random(lambda: frandom.choice([0, 1, 2], p=[0.1, 0.0, 0.9], shape=[2000]), batch_size=2)
    vals = np.concatenate(out)
    assert 1 not in vals
    assert abs((vals == 2).mean() - 0.9) < 0.03
    (always,) = run_random(lambda: frandom.choice([4.0, 5.0], p=[0.0, 1.0]))
    assert all(float(v) == 5.0 for v in always)


def test_choice_per_sample_p_and_determinism() -> None:
    ps = [np.array([1.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():
        return frandom.choice(2, p=fn.external_source([ps]), shape=[10])  # the source feeds p

    with pipe() as p:
        out = p.run()[0]
    assert np.all(out.at(0) == 0) and np.all(out.at(1) == 1)
    first, second = run_random(lambda: frandom.choice(100)), run_random(lambda: frandom.choice(100))
    assert [int(v) for v in first[0]] == [int(v) for v in second[0]]


def test_choice_errors() -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="positive"):
        frandom.choice(0)
    with pytest.raises(sf.PipelineDefinitionError, match="non-empty"):
        frandom.choice([])
    with pytest.raises(sf.PipelineDefinitionError, match="3 entries"):
        frandom.choice([1, 2, 3], p=[0.5, 0.5])
    with pytest.raises(sf.PipelineDefinitionError, match="sum to 1"):
        frandom.choice([1, 2], p=[0.5, 0.6])


def test_uniform_values() -> None:
    (out,) = run_random(lambda: frandom.uniform(values=[1, 2, 3], shape=[300]), batch_size=2)
    vals = np.concatenate(out)
    assert vals.dtype == np.float32 and set(vals.tolist()) == {1.0, 2.0, 3.0}
    with pytest.raises(sf.PipelineDefinitionError, match="empty"):
        frandom.uniform(values=[])
