"""Operators are made once per distinct call and reused (``dynamic/cache.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rand_image

import streamflow as sf
import streamflow.dynamic as ndd
from streamflow.dynamic.invoke import CACHE

IMG = rand_image(10, 12, seed=2)


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    CACHE.clear()


def _ops(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Records the operator of every node the dynamic executor runs."""
    from streamflow.dynamic import executor

    seen: list[object] = []
    real = executor.run_node
    monkeypatch.setattr("streamflow.dynamic.invoke.run_node",
                        lambda node, *a, **k: (seen.append(node.op), real(node, *a, **k))[1])
    return seen


def test_the_same_call_reuses_its_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _ops(monkeypatch)
    a = ndd.resize(IMG, size=(5, 6))
    b = ndd.resize(IMG[:8], size=(5, 6))  # other data of the same kind: the same operator
    c = ndd.resize(IMG, size=(6, 6))  # another constant: another operator
    d = ndd.resize([IMG, IMG], size=(5, 6))  # a batch (not a single sample): kept apart too
    assert seen[0] is seen[1] and seen[2] is not seen[0] and seen[3] is not seen[0]
    assert a.shape == b.shape == (5, 6, 3) and c.shape == (6, 6, 3) and d.batch_size == 2


def test_reused_operators_give_the_first_calls_values_and_checks() -> None:
    first = np.asarray(ndd.crop_mirror_normalize(IMG, crop=(4, 4), mean=[1.0, 2.0, 3.0], std=[2.0, 2.0, 2.0]))
    again = np.asarray(ndd.crop_mirror_normalize(IMG, crop=(4, 4), mean=[1.0, 2.0, 3.0], std=[2.0, 2.0, 2.0]))
    np.testing.assert_array_equal(first, again)
    for _ in range(2):  # a bad argument is refused every time, never kept
        with pytest.raises(sf.PipelineDefinitionError, match="resize_x must be"):
            ndd.resize(IMG, resize_x="abc")


def test_random_operators_reused_still_draw_new_values() -> None:
    rng = ndd.random.RNG(4)
    a, b = (np.asarray(ndd.random.uniform(batch_size=4, rng=rng)) for _ in range(2))
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(np.asarray(ndd.random.uniform(batch_size=4, rng=ndd.random.RNG(4, 1))), b)


def test_functions_and_large_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _ops(monkeypatch)
    ndd.python_function(IMG, function=lambda x: x + 1)
    ndd.python_function(IMG, function=lambda x: x + 2)  # another function: another operator
    assert seen[0] is not seen[1]
    big = np.ones((1, 10_000), np.float32)
    ndd.normalize(np.ones((3, 10_000), np.float32), mean=big, stddev=big)
    ndd.normalize(np.ones((3, 10_000), np.float32), mean=big, stddev=big)
    assert seen[2] is not seen[3]  # too large to compare: not kept


def test_readers_are_never_kept(image_root) -> None:  # type: ignore[no-untyped-def]
    a = ndd.readers.file(file_root=str(image_root))
    b = ndd.readers.file(file_root=str(image_root))
    assert a is not b and len(CACHE) == 0
