"""``random.uniform``, ``coin_flip``, ``normal``, ``choice``: distributions, types, determinism.
"""

from __future__ import annotations

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn


# --- random ------------------------------------------------------------------
def random_batch(build, n=512, seed=3):
    @sf.pipeline_def(batch_size=n, num_threads=2, seed=seed)
    def pipe():
        fn.external_source([[np.zeros(1)] * n])
        return build(), fn.external_source([[np.zeros(1)] * n])

    with pipe() as p:
        return p.run()[0].as_array()


def test_random_distributions_and_types() -> None:
    u = random_batch(lambda: fn.random.uniform(range=[2, 5]))
    assert u.dtype == np.float32 and u.min() >= 2 and u.max() < 5 and abs(u.mean() - 3.5) < 0.15
    c = random_batch(lambda: fn.random.coin_flip(probability=0.25))
    assert c.dtype == np.int32 and set(np.unique(c)) <= {0, 1} and abs(c.mean() - 0.25) < 0.06
    g = random_batch(lambda: fn.random.normal(mean=1, stddev=2))
    assert g.dtype == np.float32 and abs(g.mean() - 1) < 0.3 and abs(g.std() - 2) < 0.3
    v = random_batch(lambda: fn.random.uniform(values=[1, 7]))
    assert set(np.unique(v)) == {1.0, 7.0}
    s = random_batch(lambda: fn.random.uniform(shape=(2, 3)), n=4)
    assert s.shape == (4, 2, 3)


def test_random_is_a_function_of_seed() -> None:
    a = random_batch(lambda: fn.random.uniform(), seed=1)
    b = random_batch(lambda: fn.random.uniform(), seed=1)
    c = random_batch(lambda: fn.random.uniform(), seed=2)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    with pytest.raises(sf.PipelineDefinitionError, match="probability"):
        fn.random.coin_flip(probability=1.5)


def run_random(build, batch_size=8, seed=5):
    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=seed)
    def pipe():
        out = build()
        # a pipeline needs a source (the graph is walked from the outputs)
        return (*(out if isinstance(out, tuple) else (out,)), fn.external_source([[np.zeros(1)] * batch_size]))

    with pipe() as p:
        return [[np.asarray(t.at(i)) for i in range(batch_size)] for t in p.run()[:-1]]


# --- random.choice / random.uniform(values=) ---------------------------------
def test_choice_int_n_is_range_n_int32() -> None:
    (out,) = run_random(lambda: fn.random.choice(5, shape=[50]))
    vals = np.concatenate(out)
    assert vals.dtype == np.int32 and set(vals.tolist()) == set(range(5))


def test_choice_keeps_value_types() -> None:
    a, b, c = run_random(lambda: (
        fn.random.choice([1.5, 2.5, 7.0]), fn.random.choice(np.array([3, 4], np.int16)), fn.random.choice([10, 20]),
    ))
    assert a[0].dtype == np.float32 and a[0].shape == () and all(float(v) in (1.5, 2.5, 7.0) for v in a)
    assert b[0].dtype == np.int16 and all(int(v) in (3, 4) for v in b)
    assert c[0].dtype == np.int32


def test_choice_probabilities() -> None:
    (out,) = run_random(lambda: fn.random.choice([0, 1, 2], p=[0.1, 0.0, 0.9], shape=[2000]), batch_size=2)
    vals = np.concatenate(out)
    assert 1 not in vals
    assert abs((vals == 2).mean() - 0.9) < 0.03
    (always,) = run_random(lambda: fn.random.choice([4.0, 5.0], p=[0.0, 1.0]))
    assert all(float(v) == 5.0 for v in always)


def test_choice_per_sample_p_and_determinism() -> None:
    ps = [np.array([1.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():
        return fn.random.choice(2, p=fn.external_source([ps]), shape=[10])  # the source feeds p

    with pipe() as p:
        out = p.run()[0]
    assert np.all(out.at(0) == 0) and np.all(out.at(1) == 1)
    first, second = run_random(lambda: fn.random.choice(100)), run_random(lambda: fn.random.choice(100))
    assert [int(v) for v in first[0]] == [int(v) for v in second[0]]


def test_choice_errors() -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="positive"):
        fn.random.choice(0)
    with pytest.raises(sf.PipelineDefinitionError, match="non-empty"):
        fn.random.choice([])
    with pytest.raises(sf.PipelineDefinitionError, match="3 entries"):
        fn.random.choice([1, 2, 3], p=[0.5, 0.5])
    with pytest.raises(sf.PipelineDefinitionError, match="sum to 1"):
        fn.random.choice([1, 2], p=[0.5, 0.6])


def test_uniform_values() -> None:
    (out,) = run_random(lambda: fn.random.uniform(values=[1, 2, 3], shape=[300]), batch_size=2)
    vals = np.concatenate(out)
    assert vals.dtype == np.float32 and set(vals.tolist()) == {1.0, 2.0, 3.0}
    with pytest.raises(sf.PipelineDefinitionError, match="empty"):
        fn.random.uniform(values=[])


# --- random.beta, dtype, seed, shape_like, choice from pipeline data ----------
def test_beta_distribution() -> None:
    (out,) = run_random(lambda: fn.random.beta(alpha=2.0, beta=5.0, shape=[4000]), batch_size=2)
    vals = np.concatenate(out)
    assert vals.dtype == np.float32 and vals.min() >= 0 and vals.max() <= 1
    assert abs(vals.mean() - 2 / 7) < 0.01  # mean a / (a + b)
    assert abs(vals.var() - 10 / (49 * 8)) < 0.003  # a b / ((a + b)^2 (a + b + 1))
    (f64,) = run_random(lambda: fn.random.beta(alpha=0.5, beta=0.5, dtype=sf.types.FLOAT64))
    assert f64[0].dtype == np.float64 and f64[0].shape == ()
    with pytest.raises(sf.PipelineDefinitionError, match="alpha must be a positive number"):
        fn.random.beta(alpha=0.0)
    with pytest.raises(sf.PipelineDefinitionError, match="dtype must be one of float32, float64"):
        fn.random.beta(dtype=sf.types.INT32)


def test_dtypes_round_and_clamp() -> None:
    u, n, c, b = run_random(lambda: (
        fn.random.uniform(range=[0, 10], dtype=sf.types.INT32, shape=[500]),
        fn.random.normal(mean=100, stddev=80, dtype=sf.types.UINT8, shape=[500]),
        fn.random.coin_flip(dtype=sf.types.BOOL, shape=[50]),
        fn.random.uniform(values=[0, 1, 2], dtype=sf.types.INT64, shape=[50]),
    ), batch_size=2)
    assert u[0].dtype == np.int32 and set(np.concatenate(u).tolist()) == set(range(11))  # 10 from rounding
    vals = np.concatenate(n)
    assert vals.dtype == np.uint8 and vals.min() == 0 and vals.max() == 255  # clamped, not wrapped
    assert c[0].dtype == np.bool_ and b[0].dtype == np.int64 and set(np.concatenate(b).tolist()) == {0, 1, 2}


def test_seed_fixes_the_stream() -> None:
    a, b, c = run_random(lambda: (fn.random.uniform(seed=42), fn.random.uniform(seed=42), fn.random.uniform()))
    assert all(float(x) == float(y) for x, y in zip(a, b)) and any(float(x) != float(y) for x, y in zip(a, c))
    (d,) = run_random(lambda: fn.random.uniform(seed=42), seed=99)  # the pipeline's seed does not matter
    assert all(float(x) == float(y) for x, y in zip(a, d))
    (e,) = run_random(lambda: fn.random.normal(seed=42))  # another operator: another stream
    assert any(float(x) != float(y) for x, y in zip(a, e))


def test_shape_like_and_choice_from_pipeline_data() -> None:
    shapes = [np.zeros((2, 3), np.uint8), np.zeros((4,), np.uint8)]
    pools = [np.array([5, 6, 7], np.int16), np.array(3, np.int64)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():
        x = fn.external_source([shapes])
        a = fn.external_source([pools])
        return fn.random.uniform(x), fn.random.coin_flip(x), fn.random.choice(a, shape=[40]), fn.random.choice(a, x)

    with pipe() as p:
        u, c, ch, chx = p.run()
    assert u.at(0).shape == (2, 3) and u.at(1).shape == (4,) and c.at(0).dtype == np.int32
    assert ch.at(0).dtype == np.int16 and set(ch.at(0).tolist()) == {5, 6, 7}
    assert ch.at(1).dtype == np.int64 and set(ch.at(1).tolist()) == {0, 1, 2}
    assert chx.at(0).shape == (2, 3) and chx.at(1).shape == (4,)


def test_uniform_shape_per_sample_as_dali() -> None:
    """DALI: random.uniform(shape=DataNode) draws an array of each sample's own shape (multiple_crops)."""
    from streamflow import types

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=3)
    def pipe():  # type: ignore[no-untyped-def]
        n = fn.external_source([[np.int32([2]), np.int32([3])]])
        s = fn.external_source([[np.int32([2, 1]), np.int32([1, 3])]])
        return (fn.random.uniform(range=(0, 10), shape=n, dtype=types.INT32),
                fn.random.uniform(range=(0, 1), shape=s))

    with pipe() as p:
        ints, floats = p.run()
    assert [np.asarray(ints.at(i)).shape for i in range(2)] == [(2,), (3,)]
    assert [np.asarray(floats.at(i)).shape for i in range(2)] == [(2, 1), (1, 3)]
    assert all(0 <= v < 10 for i in range(2) for v in np.asarray(ints.at(i)))
