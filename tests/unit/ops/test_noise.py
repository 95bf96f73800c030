"""``noise.gaussian``, ``noise.shot``, ``noise.salt_and_pepper``: distributions, types, determinism.

DALI's values come from another generator, so these tests check the
distributions DALI documents (moments, probabilities, saturation) instead.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import make_chunk, run_arrays

import streamflow as sf
from streamflow import fn
from streamflow.ops.noise import GaussianNoise, SaltAndPepperNoise

GRAY = np.full((200, 150, 3), 100, np.uint8)


def test_gaussian_moments_and_saturation() -> None:
    f = np.full((300, 200), 0.25, np.float32)
    (out,) = run_arrays([f], lambda x: fn.noise.gaussian(x, mean=0.5, stddev=0.2))
    d = out[0] - f
    assert out[0].dtype == np.float32 and abs(d.mean() - 0.5) < 0.005 and abs(d.std() - 0.2) < 0.005
    mid = np.full((200, 150, 3), 128, np.uint8)  # saturation symmetric around 127.5 +- 0.5
    (u8,) = run_arrays([mid], lambda x: fn.noise.gaussian(x, stddev=60.0))
    assert u8[0].dtype == np.uint8 and u8[0].min() == 0 and u8[0].max() == 255  # saturated, not wrapped
    assert abs(u8[0].astype(float).mean() - 128) < 1.0


def test_shot_noise_is_poisson_times_factor() -> None:
    (out, same) = run_arrays([GRAY], lambda x: (fn.noise.shot(x, factor=4.0), fn.noise.shot(x, factor=0.0)))
    v = out[0].astype(np.float64)
    assert np.all(v % 4 == 0)  # quantised to multiples of the factor
    assert abs(v.mean() - 100) < 0.5 and abs(v.var() - 100 * 4) < 20  # E = in, Var = in * factor
    assert np.array_equal(same[0], GRAY)


def test_salt_and_pepper() -> None:
    (out, per_ch) = run_arrays([GRAY], lambda x: (fn.noise.salt_and_pepper(x, prob=0.2, salt_vs_pepper=0.25),
                                                  fn.noise.salt_and_pepper(x, prob=0.2, per_channel=True)))
    o = out[0]
    changed = (o != 100).any(-1)
    assert abs(changed.mean() - 0.2) < 0.01
    assert np.all((o == 100).all(-1) | (o == 255).all(-1) | (o == 0).all(-1))  # whole pixels
    assert abs((o[changed][:, 0] == 255).mean() - 0.25) < 0.03
    mixed = (per_ch[0] != 100).any(-1) & (per_ch[0] == 100).any(-1)
    assert mixed.any()  # per_channel: some pixels have only some channels replaced
    f = np.zeros((50, 50), np.float32)
    (fo,) = run_arrays([f], lambda x: fn.noise.salt_and_pepper(x, prob=1.0, salt_val=7.0))
    assert set(np.unique(fo[0]).tolist()) == {-1.0, 7.0}


def test_deterministic_per_seed_and_sample() -> None:
    imgs = [GRAY, GRAY]
    a = run_arrays(imgs, lambda x: fn.noise.gaussian(x, stddev=10.0))[0]
    b = run_arrays(imgs, lambda x: fn.noise.gaussian(x, stddev=10.0))[0]
    c = run_arrays(imgs, lambda x: fn.noise.gaussian(x, stddev=10.0), seed=8)[0]
    assert np.array_equal(a[0], b[0]) and not np.array_equal(a[0], a[1]) and not np.array_equal(a[0], c[0])
    d = run_arrays(imgs, lambda x: fn.noise.gaussian(x, stddev=10.0, seed=5), seed=1)[0]
    e = run_arrays(imgs, lambda x: fn.noise.gaussian(x, stddev=10.0, seed=5), seed=2)[0]
    assert np.array_equal(d[0], e[0])


def test_per_sample_arguments_and_errors() -> None:
    stds = [np.float32(0.0), np.float32(30.0)]
    (out,) = run_arrays([GRAY, GRAY], lambda x, s: fn.noise.gaussian(x, stddev=s), s=stds)
    assert np.array_equal(out[0], GRAY) and not np.array_equal(out[1], GRAY)
    with pytest.raises(sf.PipelineDefinitionError, match="prob must be in"):
        SaltAndPepperNoise(prob=2.0)
    chunk = make_chunk([np.zeros(3, np.bool_), np.zeros(3, np.float32)], {"stddev": [1.0, -1.0]})
    GaussianNoise().run(chunk)
    assert "unsupported input type bool" in str(chunk.failures[0]) and "stddev must be >= 0" in str(chunk.failures[1])
