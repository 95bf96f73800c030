"""``fn.transforms.*``: matrices bit-identical to DALI 2.4's CPU ones, and usable by coord_transform / warp_affine."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dali_reference.record_detection import CASES, replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError, PipelineError

MATRIX_CASES = [n for n in CASES if n.startswith("transforms") and n != "transforms_warp_affine"]


@pytest.mark.parametrize("case", MATRIX_CASES)
def test_matrices_and_points_match_dali(case: str) -> None:
    got, want = replay(case, fn, types, sf.pipeline_def)
    for out in range(2):  # the matrix, then the points it maps
        for g, w in zip(got[out], want[out]):
            assert g.dtype == np.float32 and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def test_warp_affine_takes_the_matrices() -> None:
    # The matrices are bit-identical; the warp itself is warp_affine's (uint8 within 1, on a few pixels).
    got, want = replay("transforms_warp_affine", fn, types, sf.pipeline_def)
    for g, w in zip(got[0], want[0]):
        assert g.shape == w.shape
        diff = np.abs(g.astype(int) - w)
        assert diff.max() <= 1 and (diff > 0).mean() < 0.01


def _matrix(build, samples=1):  # type: ignore[no-untyped-def]
    pts = [np.zeros((1, 2), np.float32)] * samples
    return run_arrays(pts, lambda p: (p, build()))[1]


def test_against_closed_forms() -> None:
    rot = _matrix(lambda: fn.transforms.rotation(angle=90.0, center=[1.0, 0.0]))[0]
    np.testing.assert_allclose(rot, [[0, -1, 1], [1, 0, -1]], atol=1e-6)
    shear = _matrix(lambda: fn.transforms.shear(angles=[45.0, 0.0]))[0]
    np.testing.assert_allclose(shear, [[1, 1, 0], [0, 1, 0]], atol=1e-6)
    crop = _matrix(lambda: fn.transforms.crop(from_start=[10.0, 20.0], from_end=[30.0, 60.0]))[0]
    np.testing.assert_allclose(crop @ np.array([30.0, 60.0, 1.0]), [1.0, 1.0])
    np.testing.assert_allclose(crop @ np.array([10.0, 20.0, 1.0]), [0.0, 0.0], atol=1e-7)
    # combine applies its inputs in order: translate, then rotate by 90 degrees
    comb = _matrix(lambda: fn.transforms.combine(fn.transforms.translation(offset=[1.0, 0.0]),
                                                 fn.transforms.rotation(angle=90.0)))[0]
    np.testing.assert_allclose(comb @ np.array([0.0, 0.0, 1.0]), [0.0, 1.0], atol=1e-6)


def test_per_sample_random_angle_is_used() -> None:
    pts = [np.array([[1.0, 0.0]], np.float32)] * 4
    angle, m, out = run_arrays(pts, lambda p: (lambda a: (lambda m: (a, m, fn.coord_transform(p, MT=m)))(
        fn.transforms.rotation(angle=a)))(fn.random.uniform(range=[-180.0, 180.0])))
    for a, mat, o in zip(angle, m, out):
        rad = math.radians(float(a))
        np.testing.assert_allclose(o, [[math.cos(rad), math.sin(rad)]], atol=1e-6)
        assert mat.shape == (2, 3)


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="transforms.scale: a scalar scale needs ndim"):
        fn.transforms.scale(scale=2.0)
    with pytest.raises(PipelineDefinitionError, match="transforms.shear: give exactly one of shear and angles"):
        fn.transforms.shear()
    with pytest.raises(PipelineDefinitionError, match="transforms.combine: needs at least 2"):
        fn.transforms.combine(fn.transforms.translation(offset=[1.0, 2.0]))
    with pytest.raises(TypeError, match=r"transforms.rotation\(\) got an unexpected keyword argument 'angel'"):
        fn.transforms.rotation(angel=3.0)
    with pytest.raises(PipelineError, match="input is a 2D transform but the arguments describe a 3D"):
        _matrix(lambda: fn.transforms.translation(fn.transforms.rotation(angle=1.0), offset=[1.0, 2.0, 3.0]))
    with pytest.raises(PipelineError, match="center has 3 values but the transform is 2D"):
        _matrix(lambda: fn.transforms.rotation(angle=1.0, center=[1.0, 2.0, 3.0]))


def test_warp_affine_takes_a_transform_as_its_second_input() -> None:
    img = (np.arange(20 * 30 * 3) % 251).astype(np.uint8).reshape(20, 30, 3)
    by_kw, by_input = run_arrays([img], lambda x: (
        fn.warp_affine(x, matrix=fn.transforms.rotation(angle=15.0, center=[15.0, 10.0]), fill_value=0),
        fn.warp_affine(x, fn.transforms.rotation(angle=15.0, center=[15.0, 10.0]), fill_value=0)))
    np.testing.assert_array_equal(by_kw[0], by_input[0])
    with pytest.raises(PipelineDefinitionError, match="give the matrix once"):
        node = fn.external_source([[img]])
        fn.warp_affine(node, fn.transforms.rotation(angle=1.0), matrix=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0])


def test_per_frame_arguments_give_one_matrix_per_frame() -> None:
    """DALI: arguments marked with fn.per_frame give a (frames, 2, 3) sample; a 1-frame argument is shared
    (the multiple_crops tutorial's crop windows)."""
    starts = [np.float32([[0, 0], [10, 5], [3, 7]])]
    size = [np.float32([[8, 4]])]

    @sf.pipeline_def(batch_size=1, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        s = fn.external_source([starts])
        z = fn.external_source([size])
        return (fn.transforms.crop(from_start=fn.per_frame(s), from_end=fn.per_frame(s + z), to_start=0.0,
                                   to_end=fn.per_frame(z)),
                fn.transforms.crop(from_start=[10.0, 5.0], from_end=[18.0, 9.0], to_end=[8.0, 4.0]))

    with pipe() as p:
        frames, one = (np.asarray(t.at(0)) for t in p.run())
    assert frames.shape == (3, 2, 3) and frames.dtype == np.float32
    np.testing.assert_array_equal(frames[1], one)


def test_combine_broadcasts_a_matrix_over_per_frame_matrices() -> None:
    """DALI 2.4: combining per-frame matrices (transforms given fn.per_frame arguments) with a single matrix
    applies the single one to every frame (was 'every input must be a ... matrix of the same size')."""
    angles = [np.float32([0, 30, 90])]

    (per_frame, single) = run_arrays(
        [np.zeros(1, np.float32)],
        lambda _, a: (fn.transforms.combine(fn.transforms.rotation(angle=fn.per_frame(a)),
                                            fn.transforms.translation(offset=[2, -3])),
                      fn.transforms.translation(offset=[2, -3])), a=angles)
    assert per_frame[0].shape == (3, 2, 3)
    for f, angle in enumerate(angles[0]):
        (want,) = run_arrays([np.zeros(1, np.float32)], lambda _, v=float(angle): fn.transforms.combine(
            fn.transforms.rotation(angle=v), fn.transforms.translation(offset=[2, -3])))
        np.testing.assert_array_equal(per_frame[0][f], want[0])
    with pytest.raises(PipelineError, match="different numbers of frames"):
        run_arrays([np.zeros(1, np.float32)], lambda _, a, b: fn.transforms.combine(
            fn.transforms.rotation(angle=fn.per_frame(a)), fn.transforms.rotation(angle=fn.per_frame(b))),
            a=angles, b=[np.float32([1, 2])])
