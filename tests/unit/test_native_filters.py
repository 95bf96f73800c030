"""The augmentation kernels (``_native/filters.c``) against numpy doing the same float32 operations.

The C code keeps several fast paths that must not change a bit: 8 outputs per vector across
a filter's taps, zero-weight taps left out for integer data, source rows converted into a
small cache, 8-bit sources of ``linear`` through a 256-entry table, 16 values packed at a time
when converting to 8/16-bit types, partial histograms. Each is compared here with a plain
numpy computation in the kernels' order (sums tap by tap in float32; integer outputs rounded
half away from zero and saturated, NaN -> 0), byte for byte. The operators' own tests compare
them with DALI.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from streamflow._native import filters as native
from streamflow.ops.slice import border_index

F32 = np.float32
INT_TYPES = (np.uint8, np.int8, np.uint16, np.int16)


def _image(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def _convert(values: np.ndarray, dtype: Any) -> np.ndarray:
    """The kernels' store: floats as they are; integers NaN -> 0, saturated, rounded half away from zero."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return values.astype(dtype)
    info = np.iinfo(dtype)
    v = np.clip(np.nan_to_num(values.astype(np.float64), nan=0.0), info.min, info.max)
    return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(dtype)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


_POLICY = {"reflect_101": "reflect_101", "reflect_1001": "reflect_1001", "wrap": "wrap", "clamp": "edge"}


def _filter_reference(img: np.ndarray, k: np.ndarray, anchor: tuple[int, int], border: str, fill: float,
                      out_dtype: Any) -> np.ndarray:
    h, w, _ = img.shape
    kh, kw = k.shape
    ay, ax = anchor
    ys, xs = np.arange(-ay, h + kh - 1 - ay), np.arange(-ax, w + kw - 1 - ax)
    src = img.astype(F32)
    if border == "constant":
        padded = np.full((len(ys), len(xs), img.shape[2]), F32(fill))
        iy, ix = (ys >= 0) & (ys < h), (xs >= 0) & (xs < w)
        padded[np.ix_(iy, ix)] = src[np.ix_(ys[iy], xs[ix])]
    else:
        padded = src[np.ix_(border_index(ys, h, _POLICY[border]), border_index(xs, w, _POLICY[border]))]
    acc = np.zeros(img.shape, F32)
    for dy in range(kh):
        for dx in range(kw):
            acc = acc + k[dy, dx] * padded[dy:dy + h, dx:dx + w]
    return _convert(acc, out_dtype)


@pytest.mark.parametrize("border", ["reflect_101", "reflect_1001", "wrap", "clamp", "constant"])
def test_filter2d_matches_numpy_in_kernel_order(border: str) -> None:
    rng = np.random.default_rng(len(border))
    for trial in range(24):
        dtype = (np.uint8, np.int16, np.float32, np.uint16)[trial % 4]
        shape = (int(rng.integers(1, 30)), int(rng.integers(1, 40)), int(rng.choice([1, 3, 4])))
        img = _image(rng, shape, dtype)
        if dtype == np.float32:  # zero taps over these must stay (0 * inf is NaN)
            img.flat[rng.integers(0, img.size, 2)] = (np.nan, np.inf)
        kh, kw = ((3, 3), (5, 5), (1, 7), (4, 2), (9, 11), (3, 3))[trial % 6]  # 9x11: larger than some images
        k = rng.standard_normal((kh, kw)).astype(F32)
        if (trial // 2) % 2:  # sparse kernels (zero taps are left out for integer data) and a negative zero
            k[rng.random(k.shape) < 0.5] = 0.0
            k.flat[0] = -0.0
        anchor = (int(rng.integers(0, kh)), int(rng.integers(0, kw)))
        out_dtype = dtype if trial % 3 else np.float32
        with np.errstate(invalid="ignore"):  # inf - inf, 0 * inf
            want = _filter_reference(img, k, anchor, border, 3.0, out_dtype)
        got = native.filter2d(img, k, anchor=anchor, border=border, fill=3.0, out_dtype=out_dtype)
        assert _same(got, want), (trial, dtype, (kh, kw), anchor)


def test_linear_and_color_matrix_match_numpy() -> None:
    rng = np.random.default_rng(7)
    for dtype in (*INT_TYPES, np.float32):
        img = _image(rng, (33, 71, 3), dtype)  # 7029 values: the table path of 8-bit sources, packed stores
        for out_dtype in (*INT_TYPES, np.float32):
            mul, add = F32(rng.uniform(-3, 3)), F32(rng.uniform(-300, 300))
            want = _convert(img.astype(F32) * mul + add, out_dtype)
            assert _same(native.linear(img, float(mul), float(add), out_dtype), want), (dtype, out_dtype)
            m = rng.standard_normal((3, 3)).astype(F32)
            x = img.astype(F32)
            acc = x[..., 0:1] * m[:, 0]
            acc = acc + x[..., 1:2] * m[:, 1]
            acc = acc + x[..., 2:3] * m[:, 2]
            want = _convert(acc + add, out_dtype)
            assert _same(native.color_matrix(img, m, float(add), out_dtype), want), (dtype, out_dtype)
    special = np.array([np.nan, np.inf, -np.inf, 0.49999997, -0.5, 254.5, 255.5, 1e30], F32)
    assert _same(native.linear(special, 1.0, 0.0, np.uint8), _convert(special, np.uint8))


def test_histograms_and_lookups_match_numpy() -> None:
    rng = np.random.default_rng(8)
    for channels in (1, 2, 3, 4, 5):
        img = rng.integers(0, 256, (37, 29, channels), dtype=np.uint8)
        img[:10] = 200  # long runs of one value
        hist = native.histograms(img, channels)
        want = np.stack([np.bincount(img[..., c].ravel(), minlength=256) for c in range(channels)])
        assert np.array_equal(hist, want)
        luts = rng.integers(0, 256, (channels, 256), dtype=np.uint8)
        got = native.apply_luts(img, luts)
        assert np.array_equal(got, np.stack([luts[c][img[..., c]] for c in range(channels)], axis=-1))


def test_outputs_written_in_place() -> None:
    rng = np.random.default_rng(9)
    img = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    k = np.ones((3, 3), F32) / 9
    for call in (lambda out: native.filter2d(img, k, out=out), lambda out: native.linear(img, 1.5, 2.0, out=out),
                 lambda out: native.apply_luts(img, np.arange(256, dtype=np.uint8)[None], out=out)):
        slot = np.empty_like(img)
        assert call(slot) is slot
        assert np.array_equal(slot, call(None))
    assert native.linear(img, 1.5, 2.0, out=np.empty((3, 3), np.uint8)).shape == img.shape  # no fit: a new array
