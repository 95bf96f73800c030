"""The random-crop window draw (DALI's RandomCropGenerator): ranges, fallbacks, determinism.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamflow as sf
from streamflow import rng
from streamflow.ops.random_crop_window import RandomCropParams, draw_crop_window

# --- the random-crop draw -----------------------------------------------------
areas = st.tuples(st.floats(0.01, 1.0), st.floats(0.01, 1.0)).map(sorted)


ratios = st.tuples(st.floats(0.2, 5.0), st.floats(0.2, 5.0)).map(sorted)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 2000), st.integers(1, 2000), areas, ratios, st.integers(1, 20), st.integers(0, 2**32))
def test_draw_window_inside_and_in_range(h, w, area, ratio, attempts, seed) -> None:
    params = RandomCropParams.from_args("t", area, ratio, attempts)
    d = draw_crop_window(h, w, params, np.random.default_rng(seed))
    assert 0 <= d.y0 and 0 <= d.x0 and d.h >= 1 and d.w >= 1
    assert d.y0 + d.h <= h and d.x0 + d.w <= w
    if d.accepted:
        f32 = np.float32
        assert f32(area[0]) * (1 - 1e-6) <= d.area <= f32(area[1]) * (1 + 1e-6)
        assert f32(ratio[0]) * (1 - 1e-6) <= d.ratio <= f32(ratio[1]) * (1 + 1e-6)
        assert f32(ratio[0]) <= f32(d.w) / f32(d.h) <= f32(ratio[1])  # the rounded window's ratio
        # w and h are the rounded sides of the drawn area and ratio (at least 1).
        side_w = math.sqrt(d.area * h * w * d.ratio)
        side_h = math.sqrt(d.area * h * w / d.ratio)
        assert abs(d.w - max(1.0, side_w)) <= 0.5 + 1e-3
        assert abs(d.h - max(1.0, side_h)) <= 0.5 + 1e-3
        # so the window's area is within the requested range, up to that rounding.
        lo = max(1.0, math.sqrt(area[0] * h * w * d.ratio) - 0.5) * max(1.0, math.sqrt(area[0] * h * w / d.ratio) - 0.5)
        hi = max(1.0, math.sqrt(area[1] * h * w * d.ratio) + 0.5) * max(1.0, math.sqrt(area[1] * h * w / d.ratio) + 0.5)
        assert lo - 1e-3 <= d.w * d.h <= hi + 1e-3


def test_draw_fallbacks() -> None:
    params = RandomCropParams()
    g = np.random.default_rng(0)
    # Too wide for any window of ratio <= 4/3 and area >= 8%: full height, maxW = int(H * 4/3).
    d = draw_crop_window(10, 1000, params, g)
    assert (d.h, d.w, d.accepted) == (10, 13, False)
    d = draw_crop_window(1000, 10, params, g)
    assert (d.h, d.w, d.accepted) == (13, 10, False)
    # The early exits also cover requests that are impossible for other reasons:
    # 3x7 with ratio exactly 1 and area >= 50%: at most 3 columns of full height.
    p = RandomCropParams.from_args("t", (0.5, 0.5), (1.0, 1.0), 3)
    d = draw_crop_window(3, 7, p, np.random.default_rng(1))
    assert (d.h, d.w, d.accepted) == (3, 3, False) and d.y0 == 0 and 0 <= d.x0 <= 4
    # Too tall for ratio 2 at >= 90%: maxH = int(W / 2) rows of full width.
    d = draw_crop_window(100, 100, RandomCropParams.from_args("t", (0.9, 1.0), (2.0, 2.0), 5), np.random.default_rng(2))
    assert (d.h, d.w, d.accepted) == (50, 100, False)
    # Attempts exhausted (size granularity): 2x2, area 30%, ratio in [1.2, 1.3]
    # always rounds to 1x1 (ratio 1). Fallback: own ratio 1 clamped to 1.2 ->
    # 1x2 (maxH x W), shrunk to area <= 1.2 pixels: sides * sqrt(0.6) -> 1x1.
    p = RandomCropParams.from_args("t", (0.3, 0.3), (1.2, 1.3), 10)
    d = draw_crop_window(2, 2, p, np.random.default_rng(3))
    assert (d.h, d.w, d.accepted) == (1, 1, False)


def test_draw_is_deterministic_per_seed_epoch_sample() -> None:
    params = RandomCropParams()
    key = rng.RandomKey(7, 2)

    def window(epoch, sid, k=key):
        return draw_crop_window(300, 400, params, rng.sample_generator(k, epoch, sid)).window

    assert window(0, 5) == window(0, 5)
    draws = {window(e, s) for e in range(3) for s in range(20)}
    assert len(draws) > 50  # different samples and epochs draw differently
    assert window(0, 5, rng.RandomKey(8, 2)) != window(0, 5)


def test_draw_distribution() -> None:
    """Area uniform, ratio log-uniform (checked on the accepted draws' parameters)."""
    params = RandomCropParams()
    draws = [draw_crop_window(1000, 1000, params, np.random.default_rng(i)) for i in range(3000)]
    acc = [d for d in draws if d.accepted]
    assert len(acc) > 0.9 * len(draws)
    areas_ = np.array([d.area for d in acc])
    logs = np.log([d.ratio for d in acc])
    # A square image accepts every draw with area <= 0.75 or so; compare quantiles below.
    assert abs(np.mean(areas_ < 0.3) - (0.3 - 0.08) / 0.92) < 0.04
    assert abs(np.mean(logs < 0) - 0.5) < 0.04


def test_params_validation() -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="random_area"):
        RandomCropParams.from_args("t", (0.5, 0.1))
    with pytest.raises(sf.PipelineDefinitionError, match="random_aspect_ratio"):
        RandomCropParams.from_args("t", (0.1, 1), (0, 1))
    with pytest.raises(sf.PipelineDefinitionError, match="num_attempts"):
        RandomCropParams.from_args("t", (0.1, 1), (1, 1), 0)
