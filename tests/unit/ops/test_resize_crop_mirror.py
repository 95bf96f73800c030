"""``resize_crop_mirror`` against DALI 2.4 (real photos and the MRI volume), and against the unfused chain.

Tolerance against DALI: 1 on uint8 for linear resampling (float rounding of
the filter); nearest-neighbour float output at an exact scale: exact. Like
DALI's default ``subpixel_scale=True`` (and ``fn.resize``), a fractional
output size keeps its exact scale (a centred source range).
"""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.geometry_cases import RESIZE_CROP_MIRROR, _images, check_case
from helpers import assert_gpu_equals_cpu, run_arrays

from streamflow import fn


@pytest.mark.parametrize("case", RESIZE_CROP_MIRROR, ids=lambda c: c.name)
def test_resize_crop_mirror_matches_dali(case) -> None:
    check_case("resize_crop_mirror", case)


@pytest.mark.parametrize("resize", [
    dict(size=(90, 120)),
    dict(resize_shorter=77.5),  # fractional: both apply DALI's subpixel_scale
    dict(resize_x=130.3, min_filter="INTERP_CUBIC", mag_filter="INTERP_NN", roi_start=(3.5, 10), roi_end=(80, 140)),
])
def test_resize_crop_mirror_equals_the_chain(resize) -> None:
    images = _images()
    fused = run_arrays(images, lambda x: fn.resize_crop_mirror(x, crop=(70, 80), crop_pos_x=0.3, mirror=3, **resize))[0]
    chain = run_arrays(images, lambda x: fn.flip(fn.crop(fn.resize(x, **resize), crop=(70, 80), crop_pos_x=0.3),
                                                 horizontal=1, vertical=1))[0]
    for a, b in zip(fused, chain):
        assert np.array_equal(a, b)


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------
from helpers import odd_images, run_gpu_impl


def _rcm_op(**kw):
    """The operator that ``fn.resize_crop_mirror`` adds (per-sample arguments: given per chunk)."""
    source = fn.external_source([[np.zeros((4, 4, 3), np.uint8)]])
    per_sample = {k: fn.external_source([[np.float32(0)]]) for k in kw.pop("per_sample", ())}
    return fn.resize_crop_mirror(source, **kw, **per_sample).producer.op


@pytest.mark.parametrize("kw", [
    {"size": (90, 120), "crop": (70, 80), "crop_pos_x": 0.3, "mirror": 3},
    {"resize_shorter": 61.5, "crop": (40, 50), "per_sample": ("mirror", "crop_pos_y")},
    {"resize_x": 30, "resize_y": 20, "crop": (35, 44), "mirror": 1, "interp_type": "INTERP_CUBIC"},  # past the edge
    {"size": (64, 64), "crop": (64, 64), "dtype": "float", "antialias": False, "mirror": 2},
])
def test_gpu_resize_crop_mirror_equals_cpu(kernel_ctx, grid, kw) -> None:
    rng = np.random.default_rng(2)
    images = _images()[:2] + odd_images(rng, 2, hi=150) + odd_images(rng, 1, channels=0, hi=90)
    images += [odd_images(rng, 1, dtype=np.float32, hi=80)[0]]
    n = len(images)
    args = {"mirror": [np.int32(i % 4) for i in range(n)], "crop_pos_y": [np.float32(i / n) for i in range(n)]}
    op = _rcm_op(**kw)
    use = {k: v for k, v in args.items() if k in kw.get("per_sample", ())}
    assert_gpu_equals_cpu(kernel_ctx, op, images, use, what=str(kw))


def test_gpu_resize_crop_mirror_refuses_volumes(kernel_ctx) -> None:
    op = _rcm_op(size=(8, 8), crop=(4, 4))
    _, failures = run_gpu_impl(kernel_ctx, op, [np.zeros((4, 6, 6, 1), np.uint8), np.zeros((6, 6, 3), np.uint8)])
    assert "CPU only" in str(failures[0]) and 1 not in failures
