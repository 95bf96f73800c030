"""``roi_random_crop``: invariants over many draws, determinism, DALI's errors.

DALI's random stream cannot be reproduced, so the test checks what DALI
guarantees (measured on DALI 2.4 with the same arguments): the window holds
the ROI when it is smaller, lies inside it when it is larger, stays inside
the input, and every allowed start occurs.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_arrays

import streamflow as sf
from streamflow import fn


def _starts(n: int, pipe_seed: int = 3, **kw) -> list[np.ndarray]:
    @sf.pipeline_def(batch_size=n, num_threads=2, seed=pipe_seed)
    def pipe():
        ids = fn.external_source([[np.int32(i) for i in range(n)]])  # a pipeline needs a source
        return fn.roi_random_crop(**kw), ids

    with pipe() as p:
        out = p.run()[0]
        return [np.asarray(out.at(i)) for i in range(n)]


def test_roi_random_crop_invariants_and_coverage() -> None:
    starts = _starts(400, crop_shape=[4, 5], roi_start=[2, 3], roi_end=[10, 6], in_shape=[20, 20])
    ys = {int(s[0]) for s in starts}
    xs = {int(s[1]) for s in starts}
    assert all(s.dtype == np.int64 and s.shape == (2,) for s in starts)
    assert ys == set(range(2, 7))   # ROI longer than the crop: the window stays inside the ROI
    assert xs == {1, 2, 3}          # ROI shorter: the window holds [3, 6)


def test_roi_random_crop_clamps_to_the_input() -> None:
    vol = np.zeros((20, 20, 3), np.uint8)
    out = run_arrays([vol] * 64, lambda x: fn.roi_random_crop(x, crop_shape=[4, 5, 3], roi_start=[2, 3, 0],
                                                              roi_shape=[3, 1, 3]))[0]
    assert {int(s[0]) for s in out} == {1, 2} and {int(s[1]) for s in out} == {0, 1, 2, 3}
    assert all(int(s[2]) == 0 for s in out)


def test_roi_random_crop_is_deterministic_and_seeded() -> None:
    kw = dict(crop_shape=[8, 8], roi_start=[0, 0], roi_end=[64, 64], in_shape=[64, 64])
    assert all(np.array_equal(a, b) for a, b in zip(_starts(32, **kw), _starts(32, **kw)))
    assert not all(np.array_equal(a, b) for a, b in zip(_starts(32, **kw), _starts(32, pipe_seed=4, **kw)))
    fixed = dict(kw, seed=77)
    assert all(np.array_equal(a, b) for a, b in zip(_starts(16, pipe_seed=1, **fixed), _starts(16, pipe_seed=2, **fixed)))


def test_roi_random_crop_feeds_slice() -> None:
    img = np.arange(30 * 40, dtype=np.int32).reshape(30, 40)
    out = run_arrays([img] * 8, lambda x: fn.slice(
        x, fn.roi_random_crop(x, crop_shape=[10, 12], roi_start=[5, 5], roi_end=[25, 30]), [10, 12], axes=[0, 1]))[0]
    assert all(o.shape == (10, 12) and 5 <= o[0, 0] // 40 <= 15 for o in out)


@pytest.mark.parametrize("kw, match", [
    (dict(crop_shape=[30, 5], roi_start=[2, 3], roi_end=[10, 6], in_shape=[20, 20]), "larger than the input"),
    (dict(crop_shape=[3, 5], roi_start=[2, 3], roi_end=[30, 6], in_shape=[20, 20]), "leaves the input"),
])
def test_roi_random_crop_errors_like_dali(kw, match) -> None:
    with pytest.raises(sf.errors.PipelineError, match=match):
        _starts(1, **kw)
