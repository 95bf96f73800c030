"""``batch_permutation``: DALI 2.4's outputs are random, so checked for their invariants (a
permutation of the batch, int32 scalars, no fixed points when asked) and for determinism."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rand_image

import streamflow as sf
from streamflow import fn
from streamflow.ops.batch_permutation import draw_permutation


def _run(batch_size: int, epochs: int = 1, seed: int = 3, **kw):  # type: ignore[no-untyped-def]
    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=seed)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source([[np.int32(i) for i in range(batch_size)]] * 3)
        p = fn.batch_permutation(**kw)
        return p, fn.permute_batch(x, indices=p)

    out = []
    with pipe() as p:
        for _ in range(epochs):
            batch = p.run()
            out.append(([int(np.asarray(batch[0].at(i))) for i in range(batch_size)],
                        [int(np.asarray(batch[1].at(i))) for i in range(batch_size)],
                        np.asarray(batch[0].at(0)).dtype, np.asarray(batch[0].at(0)).shape))
    return out


@pytest.mark.parametrize("kw", [{}, {"no_fixed_points": True}])
def test_is_a_permutation_and_shuffles(kw) -> None:
    perm, picked, dtype, shape = _run(16, **kw)[0]
    assert sorted(perm) == list(range(16)) and picked == perm
    assert dtype == np.int32 and shape == ()
    if kw:
        assert all(p != i for i, p in enumerate(perm))


def test_deterministic_per_seed() -> None:
    assert _run(12, seed=5) == _run(12, seed=5)
    assert _run(12, seed=5)[0][0] != _run(12, seed=6)[0][0]


def test_draw_rules() -> None:
    gen = np.random.default_rng(0)
    for n in (2, 3, 7, 50):
        for _ in range(20):
            assert not np.any(draw_permutation(n, gen, allow_repetitions=False, no_fixed_points=True) == np.arange(n))
            rep = draw_permutation(n, gen, allow_repetitions=True, no_fixed_points=True)
            assert ((rep >= 0) & (rep < n)).all() and not np.any(rep == np.arange(n))
    assert draw_permutation(1, gen, allow_repetitions=False, no_fixed_points=True).tolist() == [0]
    rep = np.concatenate([draw_permutation(8, gen, allow_repetitions=True, no_fixed_points=False)
                          for _ in range(200)])
    assert np.bincount(rep, minlength=8).min() > 150  # every index drawn, about uniformly (expected 200)


def test_shuffles_images() -> None:
    imgs = [rand_image(4, 5, seed=i) for i in range(6)]

    @sf.pipeline_def(batch_size=6, num_threads=1, seed=2)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source([imgs])
        p = fn.batch_permutation()
        return fn.permute_batch(x, indices=p), p

    with pipe() as p:
        shuffled, perm = p.run()
    for i in range(6):
        assert np.array_equal(shuffled.at(i), imgs[int(np.asarray(perm.at(i)))])
