"""The warp kernels (``_native/warp.c``) give the same bits as the numpy code they replace.

warp_affine / rotate (images and DHWC volumes), experimental.warp_perspective and
experimental.remap keep their numpy implementations for the element types the kernels do
not take; here both run on random images, matrices and arguments (every element type,
channel count, interpolation, fill and border), and the results must be identical, byte for
byte. The operators' own tests compare them with DALI.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from helpers import run_arrays

from streamflow import fn
from streamflow._native import warp as native_warp
from streamflow.ops import volume, warp_affine, warp_perspective
from streamflow.types import InterpType

pytestmark = pytest.mark.skipif(not native_warp.available(), reason="C extension not built")

LINEAR, NN = InterpType.INTERP_LINEAR, InterpType.INTERP_NN
TYPES = (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.uint32, np.float32, np.float64)


def _image(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -70000), min(info.max, 70000), shape, endpoint=True).astype(dtype)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.fixture
def numpy_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A context in which the kernels refuse every call (the operators run their numpy code)."""

    class Off:
        def __enter__(self) -> None:
            def refuse(*args: Any, **kwargs: Any) -> Any:
                raise native_warp.KernelUnsupported("off")

            monkeypatch.setattr(native_warp, "affine", refuse)
            monkeypatch.setattr(native_warp, "perspective", refuse)

        def __exit__(self, *exc: Any) -> None:
            monkeypatch.undo()

    yield Off


def _affine_matrix(rng: np.random.Generator, kind: int) -> list[float]:
    if kind == 0:  # near identity
        return list(rng.standard_normal(6) * [1, 0.3, 5, 0.3, 1, 5] + [1, 0, 0, 0, 1, 0])
    if kind == 1:  # a rotation about some point
        a = rng.uniform(-3.2, 3.2)
        return [np.cos(a), -np.sin(a), rng.uniform(-20, 20), np.sin(a), np.cos(a), rng.uniform(-20, 20)]
    if kind == 2:  # far outside: every tap is the border
        return list(rng.standard_normal(6) * 1e4)
    return [1, 0, int(rng.integers(-5, 5)), 0, 1, int(rng.integers(-5, 5))]  # integer shifts


@pytest.mark.parametrize("dtype", TYPES)
def test_affine_2d_matches_numpy(dtype: Any, numpy_only: Any) -> None:
    rng = np.random.default_rng(np.dtype(dtype).num)
    outs = [None, np.uint8, np.float32, np.int16, np.float16, np.float64]
    for trial in range(48):
        h, w = (int(v) for v in rng.integers(1, 24, 2))
        img = _image(rng, (h, w, int(rng.choice([1, 2, 3, 4, 5]))), dtype)
        if trial % 6 == 5:
            img = img[:, :, 0]
        channels = 1 if img.ndim == 2 else img.shape[2]
        size = (int(rng.integers(1, 30)), int(rng.integers(1, 300 if trial % 8 == 0 else 30)))  # > 256: tiles
        fill = [None, 128, list(rng.uniform(-300, 300, channels)), 3.7][trial % 4]
        kw = dict(interp=(LINEAR, NN)[trial % 2], fill_value=fill, out_dtype=outs[(trial // 2) % len(outs)] or dtype)
        m = _affine_matrix(rng, trial % 4)
        with numpy_only(), np.errstate(all="ignore"):  # 32-bit integer outputs may overflow
            want = warp_affine.warp_affine_image(img, m, size, **kw)
        with np.errstate(all="ignore"):
            got = warp_affine.warp_affine_image(img, m, size, **kw)
        assert _same(got, want), (trial, kw)


def test_affine_2d_edges_nan_and_last_pixel(numpy_only: Any) -> None:
    rng = np.random.default_rng(5)
    cases = []
    img = rng.standard_normal((7, 9, 3)).astype(np.float32)
    img[2, 3, 1] = np.nan
    img[4, 4, 0] = np.inf
    cases.append((img, [1.1, 0.1, -0.3, 0.05, 0.9, 0.2], (8, 8), np.float32))
    one = rng.integers(0, 256, (1, 1, 3), dtype=np.uint8)  # a single pixel: every tap is the edge or the fill
    cases.append((one, [0.3, 0.0, -1.0, 0.0, 0.3, -1.0], (5, 5), np.uint8))
    # the bottom-right pixel's 4-element read must stop at the buffer's end (3 channels)
    last = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)
    cases.append((last, [1, 0, 4.7, 0, 1, 4.6], (4, 4), np.uint8))
    cases.append((last.astype(np.float32), [1, 0, 4.7, 0, 1, 4.6], (4, 4), np.float32))
    for img, m, size, odt in cases:
        for interp in (LINEAR, NN):
            for fill in (None, 9.0):
                with numpy_only(), np.errstate(invalid="ignore"):
                    want = warp_affine.warp_affine_image(img, m, size, interp=interp, fill_value=fill, out_dtype=odt)
                got = warp_affine.warp_affine_image(img, m, size, interp=interp, fill_value=fill, out_dtype=odt)
                assert _same(got, want), (img.shape, interp, fill)


def test_affine_2d_non_contiguous_and_unsupported_types_fall_back() -> None:
    rng = np.random.default_rng(6)
    img = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    view = img[::2, ::3]
    m = [0.9, 0.1, 1.0, -0.1, 1.1, 0.5]
    assert np.array_equal(warp_affine.warp_affine_image(view, m, (9, 9)),
                          warp_affine.warp_affine_image(np.ascontiguousarray(view), m, (9, 9)))
    with pytest.raises(native_warp.KernelUnsupported):
        native_warp.affine(img, np.zeros(6, np.float32), (4, 4), linear=True, fill=None, out_dtype=np.dtype(np.int32))
    out = warp_affine.warp_affine_image(img, m, (9, 9), out_dtype=np.int32)  # numpy computes it
    assert out.dtype == np.int32 and out.shape == (9, 9, 3)


@pytest.mark.parametrize("dtype", (np.uint8, np.int16, np.float32, np.float64, np.int32))
def test_affine_3d_matches_numpy(dtype: Any, numpy_only: Any) -> None:
    rng = np.random.default_rng(10 + np.dtype(dtype).num)
    outs = [None, np.uint8, np.float32, np.float16]
    for trial in range(24):
        d, h, w = (int(v) for v in rng.integers(1, 9, 3))
        vol = _image(rng, (d, h, w, int(rng.choice([1, 2, 3]))), dtype)
        m = np.hstack([np.eye(3) + rng.standard_normal((3, 3)) * 0.3, rng.standard_normal((3, 1)) * 3])
        if trial % 6 == 5:
            m = rng.standard_normal((3, 4)) * 1e4
        size = tuple(int(v) for v in rng.integers(1, 10, 3))
        kw = dict(interp=(LINEAR, NN)[trial % 2], fill_value=[None, (128.0,), tuple(rng.uniform(-300, 300, vol.shape[3]))][trial % 3],
                  out_dtype=outs[(trial // 2) % len(outs)] or dtype)
        with numpy_only(), np.errstate(all="ignore"):
            want = volume.warp_affine_volume(vol, m, size, **kw)
        with np.errstate(all="ignore"):
            got = volume.warp_affine_volume(vol, m, size, **kw)
        assert _same(got, want), (trial, kw)


def _homography(rng: np.random.Generator, kind: int) -> np.ndarray:
    if kind == 0:
        return np.eye(3) + rng.standard_normal((3, 3)) * [[0.3, 0.3, 5], [0.3, 0.3, 5], [0.01, 0.01, 0.1]]
    if kind == 1:
        return rng.standard_normal((3, 3)) * 3
    if kind == 2:
        return np.array([[1, 0, rng.integers(-5, 5)], [0, 1, rng.integers(-5, 5)], [0, 0, 1]], dtype=float)
    return np.array([[1, 0.2, 0], [0.1, 1, 0], [0.01, -0.02, 0]])  # w crosses 0 inside the image


@pytest.mark.parametrize("dtype", TYPES + (np.float16,))
def test_perspective_and_remap_match_numpy(dtype: Any, numpy_only: Any) -> None:
    rng = np.random.default_rng(20 + np.dtype(dtype).num)
    borders = list(warp_perspective._BORDERS.values())
    for trial in range(40):
        h, w = (int(v) for v in rng.integers(1, 20, 2))
        img = _image(rng, (h, w, int(rng.choice([1, 2, 3, 4]))), dtype)
        if trial % 3 == 0:
            img = img[:, :, 0]
        size = (int(rng.integers(1, 25)), int(rng.integers(1, 25)))
        channels = 1 if img.ndim == 2 else img.shape[2]
        kw = dict(interp=(LINEAR, NN)[trial % 2], border=borders[(trial // 2) % len(borders)],
                  fill=[(), (7.5,), tuple(rng.uniform(-300, 300, channels))][trial % 3])
        m = _homography(rng, trial % 4)
        corner = trial % 4 < 2
        with numpy_only():
            want = warp_perspective.warp_perspective_image(img, m, size, corner=corner, **kw)
        assert _same(warp_perspective.warp_perspective_image(img, m, size, corner=corner, **kw), want), (trial, kw)
        sx = rng.uniform(-5, w + 5, size)
        sy = rng.uniform(-5, h + 5, size)
        with numpy_only():
            want = warp_perspective.sample_image(img, sx, sy, **kw)
        assert _same(warp_perspective.sample_image(img, sx, sy, **kw), want), (trial, kw)


def test_remap_operator_float32_maps_match_numpy(numpy_only: Any) -> None:
    rng = np.random.default_rng(30)
    img = rng.integers(0, 256, (21, 17, 3), dtype=np.uint8)
    mx = rng.uniform(-3, 20, (12, 15)).astype(np.float32)
    my = rng.uniform(-3, 24, (12, 15)).astype(np.float32)
    for interp in ("INTERP_LINEAR", "INTERP_NN"):
        for origin in ("corner", "center"):
            def step(x: Any, mapx: Any, mapy: Any, interp: str = interp, origin: str = origin) -> Any:
                return fn.experimental.remap(x, mapx, mapy, interp=interp, pixel_origin=origin)

            with numpy_only():
                (want,) = run_arrays([img], step, mapx=[mx], mapy=[my])
            (got,) = run_arrays([img], step, mapx=[mx], mapy=[my])
            assert _same(got[0], want[0])


def test_threads_release_the_gil() -> None:
    rng = np.random.default_rng(0)
    src = rng.integers(0, 256, (200, 300, 3), dtype=np.uint8)
    m = [0.95, 0.2, -10.0, -0.1, 1.05, 4.0]
    want = warp_affine.warp_affine_image(src, m, (180, 280), fill_value=0)
    results: list[bool] = []

    def work() -> None:
        for _ in range(4):
            results.append(np.array_equal(warp_affine.warp_affine_image(src, m, (180, 280), fill_value=0), want))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 12
