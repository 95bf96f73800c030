"""``random_crop_generator``: DALI 2.4's windows are random (its Philox stream is not reproduced), so
checked for DALI's output format (int32 (y, x) anchor and (h, w) shape, recorded from DALI: see the
docstring of ``ops/random_crop_generator.py``), the windows' invariants and determinism."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_arrays

import streamflow as sf
from streamflow import fn


def _windows(shapes, seed=3, **kw):  # type: ignore[no-untyped-def]
    return run_arrays(shapes, lambda s: fn.random_crop_generator(s, **kw), seed=seed)


def test_windows_fit_and_follow_the_ranges() -> None:
    shapes = [np.array([100 + i, 200 - i, 3], np.int64) for i in range(40)] + [np.array([50, 40], np.uint8)]
    anchors, sizes = _windows(shapes, random_area=[0.2, 0.6], random_aspect_ratio=[0.5, 2.0])
    for shape, a, s in zip(shapes, anchors, sizes):
        assert a.dtype == s.dtype == np.int32 and a.shape == s.shape == (2,)
        H, W = int(shape[0]), int(shape[1])
        assert (a >= 0).all() and a[0] + s[0] <= H and a[1] + s[1] <= W and (s >= 1).all()
        area = s[0] * s[1] / (H * W)
        assert 0.15 <= area <= 0.65 and 0.45 <= s[1] / s[0] <= 2.1


def test_deterministic_and_slices() -> None:
    imgs = [np.random.default_rng(i).integers(0, 255, (30 + i, 40, 3), dtype=np.uint8) for i in range(4)]
    shapes = [np.array(im.shape, np.int64) for im in imgs]
    assert all(np.array_equal(a, b) for a, b in zip(_windows(shapes, seed=9)[0], _windows(shapes, seed=9)[0]))

    @sf.pipeline_def(batch_size=4, num_threads=2, seed=9)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source([imgs], layout="HWC")
        anchor, shape = fn.random_crop_generator(fn.shapes(x))
        return fn.slice(x, start=anchor, shape=shape, axes=[0, 1]), anchor, shape

    with pipe() as p:
        crops, anchors, sizes = p.run()
    for i, im in enumerate(imgs):
        (y, x), (h, w) = np.asarray(anchors.at(i)), np.asarray(sizes.at(i))
        assert np.array_equal(crops.at(i), im[y:y + h, x:x + w])


@pytest.mark.parametrize("bad", [np.array([100], np.int64), np.array([5, 100, 200, 3], np.int64),
                                 np.array([10.0, 20.0], np.float32), np.array([0, 5], np.int32)])
def test_bad_shapes_fail_the_sample(bad) -> None:
    with pytest.raises(Exception, match="random_crop_generator"):
        _windows([bad])
