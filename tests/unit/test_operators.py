"""CPU operators against independent references: sizes, windows, flips, normalization, random."""

from __future__ import annotations

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn, types
from streamflow.ops.crop import crop_window
from streamflow.ops.resize import output_size


def run_on(images, build, batch_size=None, **pipe_kw):
    """Run ``build(node)`` on the given images (fed through external_source); one batch."""
    batch_size = batch_size or len(images)

    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=3, **pipe_kw)
    def pipe():
        return build(fn.external_source([list(images)]))

    with pipe() as p:
        return p.run()


def rand_image(h, w, c=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


# --- resize ---------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,kw,expected",
    [
        ((526, 518), dict(resize_shorter=256), (260, 256)),  # SEMANTICS: 518x526 -> 256x260
        ((583, 373), dict(resize_longer=256), (256, 164)),  # 373x583 -> 164x256
        ((300, 400), dict(resize_x=200), (150, 200)),
        ((300, 400), dict(resize_y=150), (150, 200)),
        ((300, 400), dict(resize_x=100, resize_y=100), (100, 100)),
        ((300, 400), dict(size=(100, 100), mode="not_larger"), (75, 100)),
        ((300, 400), dict(size=(100, 100), mode="not_smaller"), (100, 133)),
        ((300, 400), dict(resize_x=200, mode="stretch"), (300, 200)),
        ((300, 400), dict(resize_shorter=600, max_size=700), (525, 700)),
        ((300, 400), dict(size=(0, 200)), (150, 200)),
    ],
)
def test_resize_output_size_rules(shape, kw, expected) -> None:
    assert output_size(*shape, **kw) == expected


def test_resize_operator_matches_kernel_and_shapes() -> None:
    from streamflow.ops import kernels

    images = [rand_image(37, 51, seed=1), rand_image(120, 80, seed=2)]
    out = run_on(images, lambda x: fn.resize(x, resize_shorter=24))
    assert out[0].shape() == [(24, 33, 3), (36, 24, 3)]
    assert np.array_equal(out[0].at(0), kernels.resample(images[0], (24, 33)))
    nn = run_on(images, lambda x: fn.resize(x, resize_x=10, resize_y=10, interp_type=types.INTERP_NN))
    ys = np.floor((np.arange(10) + 0.5) * 37 / 10).astype(int)
    xs = np.floor((np.arange(10) + 0.5) * 51 / 10).astype(int)
    assert np.array_equal(nn[0].at(0), images[0][ys][:, xs])


def test_resize_without_size_is_an_error() -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="say what size"):
        fn.resize(fn.external_source([[]]))
    with pytest.raises(sf.PipelineDefinitionError, match="mode must be one of"):
        fn.resize(fn.external_source([[]]), resize_x=3, mode="bigger")


def test_resize_per_sample_size() -> None:
    sizes = [np.float32(10), np.float32(20)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        img = fn.external_source([[rand_image(40, 40), rand_image(40, 40)]])
        width = fn.external_source([sizes])
        return fn.resize(img, resize_x=width)

    with pipe() as p:
        assert p.run()[0].shape() == [(10, 10, 3), (20, 20, 3)]


# --- crop ----------------------------------------------------------------
@pytest.mark.parametrize(
    "extent,size,pos,rounding,anchor",
    [(100, 50, 0.5, "round", 25), (101, 50, 0.5, "round", 26), (101, 50, 0.5, "truncate", 25),
     (10, 3, 1.0, "round", 7), (10, 14, 0.5, "round", -2), (10, 13, 0.5, "round", -2)],
)
def test_crop_anchor_rounding(extent, size, pos, rounding, anchor) -> None:
    y0, x0, h, w = crop_window(extent, extent, size, size, pos, pos, rounding)
    assert (y0, x0, h, w) == (anchor, anchor, size, size)


def test_fractional_crop_sizes_truncate() -> None:
    assert crop_window(10, 10, 4.9, 3.2)[2:] == (4, 3)


def test_crop_is_exact_slicing_and_policies() -> None:
    img = rand_image(20, 30, seed=4)
    out = run_on([img], lambda x: fn.crop(x, crop=(10, 12), crop_pos_x=0.25, crop_pos_y=1.0))
    x0 = int(np.floor(0.25 * 18 + 0.5))
    assert np.array_equal(out[0].at(0), img[10:20, x0 : x0 + 12])
    with pytest.raises(sf.PipelineError, match="does not fit the 20x30 image"):
        run_on([img], lambda x: fn.crop(x, crop=(24, 12)))
    padded = run_on([img], lambda x: fn.crop(x, crop=(24, 30), out_of_bounds_policy="pad", fill_values=[1, 2, 3]))[0].at(0)
    assert padded.shape == (24, 30, 3)
    assert np.array_equal(padded[2:22], img) and (padded[0] == [1, 2, 3]).all() and (padded[23] == [1, 2, 3]).all()
    trimmed = run_on([img], lambda x: fn.crop(x, crop=(24, 12), out_of_bounds_policy="trim_to_shape"))[0].at(0)
    assert trimmed.shape == (20, 12, 3)


# --- flip ----------------------------------------------------------------
def test_flip_per_sample() -> None:
    imgs = [rand_image(5, 7, seed=i) for i in range(2)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        x = fn.external_source([imgs])
        h = fn.external_source([[np.int32(1), np.int32(0)]])
        return fn.flip(x, horizontal=h, vertical=1)

    with pipe() as p:
        out = p.run()[0]
    assert np.array_equal(out.at(0), imgs[0][::-1, ::-1])
    assert np.array_equal(out.at(1), imgs[1][::-1])


# --- crop_mirror_normalize ---------------------------------------------------
def test_cmn_against_numpy_float32() -> None:
    img = rand_image(31, 45, seed=5)
    mean, std = [120.0, 110.0, 100.0], [50.0, 60.0, 70.0]
    out = run_on([img, img], lambda x: fn.crop_mirror_normalize(
        x, crop=(16, 20), mean=mean, std=std, scale=2.0, shift=0.5, mirror=fn.external_source([[np.int32(0), np.int32(1)]])))
    y0, x0 = int(np.floor(0.5 * 15 + 0.5)), int(np.floor(0.5 * 25 + 0.5))
    crop = img[y0 : y0 + 16, x0 : x0 + 20].astype(np.float32)
    ref = (2.0 * (crop - np.float32(mean)) / np.float32(std) + 0.5).transpose(2, 0, 1)
    np.testing.assert_allclose(out[0].at(0), ref, atol=1e-5)
    np.testing.assert_allclose(out[0].at(1), ref[:, :, ::-1], atol=1e-5)
    assert out[0].layout == "CHW" and out[0].dtype is types.FLOAT


def test_cmn_defaults_return_image_as_chw_float() -> None:
    img = rand_image(9, 11, seed=6)
    out = run_on([img], lambda x: fn.crop_mirror_normalize(x))[0].at(0)
    assert out.dtype == np.float32 and np.array_equal(out, img.transpose(2, 0, 1).astype(np.float32))


def test_cmn_pad_output_layout_and_dtypes() -> None:
    img = rand_image(6, 6, seed=7)
    out = run_on([img], lambda x: fn.crop_mirror_normalize(x, pad_output=True, output_layout="HWC", dtype=types.FLOAT16))[0].at(0)
    assert out.shape == (6, 6, 4) and out.dtype == np.float16 and (out[..., 3] == 0).all()
    u8 = run_on([img], lambda x: fn.crop_mirror_normalize(x, mean=0.5, dtype=types.UINT8))[0].at(0)
    assert np.array_equal(u8, np.floor(img.astype(np.float32) - 0.5 + 0.5).clip(0, 255).astype(np.uint8).transpose(2, 0, 1))


def test_resize_then_cmn_fusion_equals_unfused() -> None:
    imgs = [rand_image(61 + i, 83 - i, seed=i) for i in range(4)]

    def fused(x):
        return fn.crop_mirror_normalize(fn.resize(x, resize_x=40, resize_y=36), crop=(24, 30), mirror=fn.random.coin_flip(), mean=[1, 2, 3])

    def unfused(x):
        r = fn.resize(x, resize_x=40, resize_y=36)
        return r, fn.crop_mirror_normalize(r, crop=(24, 30), mirror=fn.random.coin_flip(), mean=[1, 2, 3])

    a = run_on(imgs, fused)[0].as_tensor()
    b = run_on(imgs, unfused)[1].as_tensor()
    assert np.array_equal(a, b)


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
