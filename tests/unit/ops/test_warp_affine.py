"""``warp_affine``: pixel-centre conventions, fill and clamp, a float64 reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    rand_image,
)
from reference import reference_warp

import streamflow as sf
from streamflow import fn
from streamflow.ops.warp_affine import invert_affine, warp_affine_image
from streamflow.types import InterpType


# --- warp_affine ------------------------------------------------------------
def test_warp_affine_integer_shift_with_fill_and_clamp() -> None:
    img = rand_image(10, 12, seed=7)
    out = warp_affine_image(img, [1, 0, 3, 0, 1, -2], (10, 12), fill_value=9)
    expect = np.full_like(img, 9)
    expect[2:, :9] = img[:8, 3:]
    assert np.array_equal(out, expect)
    clamped = warp_affine_image(img, [1, 0, 3, 0, 1, -2], (10, 12))
    ys = np.clip(np.arange(10) - 2, 0, 9)
    xs = np.clip(np.arange(12) + 3, 0, 11)
    assert np.array_equal(clamped, img[ys][:, xs])


def test_warp_affine_nn_scaling_uses_pixel_centres() -> None:
    img = rand_image(16, 20, seed=8)
    # dst(x, y) = src(2x, 2y): centre j + 0.5 -> 2j + 1 -> pixel 2j + 1.
    out = warp_affine_image(img, [2, 0, 0, 0, 2, 0], (8, 10), interp=InterpType.INTERP_NN)
    assert np.array_equal(out, img[1::2, 1::2])
    # Bilinear 2x downscale: centre 2j + 1 lies between pixels 2j and 2j+1.
    lin = warp_affine_image(img.astype(np.float32), [2, 0, 0, 0, 2, 0], (8, 10))
    f = img.astype(np.float32)
    expect = (f[0::2, 0::2] + f[0::2, 1::2] + f[1::2, 0::2] + f[1::2, 1::2]) / 4
    assert np.allclose(lin, expect, atol=1e-4)


def test_warp_affine_matches_float64_reference() -> None:
    img = rand_image(19, 14, seed=9)
    m = [0.9, 0.2, -3.0, -0.1, 1.1, 2.5]
    ref = reference_warp(img, m, (21, 17), 0)
    out = warp_affine_image(img, m, (21, 17), fill_value=0, out_dtype=np.float32)
    assert np.abs(out - ref).max() < 5e-3


def test_warp_affine_operator_inverse_map_per_sample_and_size() -> None:
    images = [rand_image(20, 24, seed=1), rand_image(18, 22, seed=2)]
    fwd = np.array([[1.1, 0.1, 2.0], [-0.2, 0.9, 1.0]], dtype=np.float32)
    mats = [fwd, np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        img = fn.external_source([images])
        mat = fn.external_source([mats])
        return (fn.warp_affine(img, matrix=fwd.reshape(-1).tolist(), inverse_map=False, fill_value=0),
                fn.warp_affine(img, matrix=mat, size=(10, 11)))

    with pipe() as p:
        inv, per = p.run()
    expect = warp_affine_image(images[0], invert_affine(fwd), (20, 24), fill_value=0)
    assert np.array_equal(inv.at(0), expect)
    assert per.shape() == [(10, 11, 3), (10, 11, 3)]
    assert np.array_equal(per.at(1), images[1][:10, :11])
    with pytest.raises(sf.PipelineDefinitionError, match="6 values"):
        fn.warp_affine(fn.external_source([[]]), matrix=[1, 2, 3])
    with pytest.raises(sf.PipelineDefinitionError, match="singular"):
        fn.warp_affine(fn.external_source([[]]), matrix=[1, 1, 0, 1, 1, 0], inverse_map=False)
