"""The DALI reference cases of the geometry operators: inputs, pipelines, tolerances.

Shared by ``record_geometry.py`` (which runs each case on DALI 2.4's CPU
operators and saves the outputs under ``tests/data/dali/geometry/``) and the
tests (which run the same case on streamflow and compare). A case's
``build(m, x, **extra)`` uses only what the two libraries share: ``m.fn`` and
``m.types`` are DALI's or streamflow's. ``extra`` are more external sources
(per-sample arguments or positional inputs), one value per sample.

Inputs are real data kept in ``tests/data``: PNG photographs (lossless, so
every decoder gives the same pixels) and a T1 MRI volume (``volumes/``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data"


@dataclass(frozen=True)
class Case:
    """One pipeline run on one batch.

    Attributes:
        name: unique within its operator.
        samples: the batch (called lazily).
        build: ``build(m, x, **extra) -> node or tuple of nodes``.
        layout: the layout given to ``external_source``.
        extra: per-sample inputs by name (called lazily).
        error: DALI refuses the case (a build or run error).
        atol: largest allowed absolute difference from DALI's output.
    """

    name: str
    samples: Callable[[], list[np.ndarray]]
    build: Callable[..., Any]
    layout: str | None = None
    extra: Callable[[], dict[str, list[np.ndarray]]] = field(default=lambda: {})
    error: bool = False
    atol: float = 0.0


@cache
def photo(name: str, step: int = 2) -> np.ndarray:
    """A PNG photograph as uint8 HWC (or HW for gray), every ``step``-th pixel to keep outputs small."""
    from PIL import Image

    with Image.open(DATA / "photos" / name) as im:
        arr = np.asarray(im.convert("L" if im.mode in ("L", "I;16") else "RGB"))
    return np.ascontiguousarray(arr[::step, ::step])


@cache
def volume() -> np.ndarray:
    """The T1 MRI volume, DHWC int16 (25 x 41 x 33 x 1)."""
    return np.load(DATA / "volumes" / "anatomical.npy")


def signal(length: int, channels: int = 0) -> np.ndarray:
    """A float32 signal (T,) or (T, C) made of the MRI's voxels, scaled to [-1, 1]."""
    v = volume().reshape(-1).astype(np.float32)
    v = (v - v.mean()) / np.abs(v - v.mean()).max()
    if channels:
        return np.ascontiguousarray(v[: length * channels].reshape(length, channels))
    return np.ascontiguousarray(v[:length])


def _images() -> list[np.ndarray]:
    return [photo("chelsea.png", 3), photo("coffee.png", 4)]


def _gray() -> list[np.ndarray]:
    return [photo("camera.png", 4)]


def _vol() -> list[np.ndarray]:
    return [volume()]


def _audio() -> list[np.ndarray]:
    return [signal(5000), signal(3001)]


def _f32(values: list[list[float]]) -> list[np.ndarray]:
    return [np.asarray(v, dtype=np.float32) for v in values]


def _i32(values: list[list[int]]) -> list[np.ndarray]:
    return [np.asarray(v, dtype=np.int32) for v in values]


def _float_images() -> list[np.ndarray]:
    return [(im.astype(np.float32) * 1.37 - 40.25) for im in _images()]


@cache
def _rounding_samples() -> tuple[list[np.ndarray], dict[str, list[np.ndarray]]]:
    """1-D ramps of many lengths with relative slice values on the half-pixel grid (rounding ties)."""
    rng = np.random.default_rng(0)
    ns = rng.integers(1, 50, 200)
    rs = [np.float32(rng.integers(0, 2 * n) / (2 * n)) for n in ns]
    rsh = [np.float32(min(rng.integers(1, 2 * n + 1) / (2 * n), 1 - r)) for n, r in zip(ns, rs)]
    rend = [np.float32(min(r + s + 0.5 / n, 1.0)) for r, s, n in zip(rs, rsh, ns)]
    start = [np.int32(rng.integers(0, n)) for n in ns]
    extra = {
        "rs": [np.array([v], np.float32) for v in rs],
        "rsh": [np.array([v], np.float32) for v in rsh],
        "rend": [np.array([v], np.float32) for v in rend],
        "st": [np.array([v], np.int32) for v in start],
        "sh": [np.array([rng.integers(0, n + 1)], np.int32) for n in ns],
    }
    return [np.arange(n, dtype=np.int32) for n in ns], extra


def _rounding_build(m: Any, x: Any, rs: Any, rsh: Any, rend: Any, st: Any, sh: Any) -> Any:
    s = m.fn.slice
    pad = {"axes": [0], "out_of_bounds_policy": "pad", "fill_values": -1}
    return (
        s(x, rel_start=rs, rel_shape=rsh, **pad),
        s(x, rel_start=rs, rel_end=rend, **pad),
        s(x, rel_start=rs, shape=sh, **pad),
        s(x, start=st, rel_shape=rsh, **pad),
        s(x, start=st, shape=sh, **pad),
        s(x, rs, rsh, **pad),
    )


SLICE: list[Case] = [
    # positional anchor/shape, normalized (x, y) by default
    Case("pos_const", _images, lambda m, x: m.fn.slice(x, [0.1, 0.2], [0.5, 0.6]), "HWC"),
    Case("pos_per_sample", _images, lambda m, x, a, s: m.fn.slice(x, a, s), "HWC",
         lambda: {"a": _f32([[0.25, 0.3], [0.0, 0.5]]), "s": _f32([[0.5, 0.45], [1.0, 0.5]])}),
    Case("pos_int", _images, lambda m, x, a, s: m.fn.slice(x, a, s), "HWC",
         lambda: {"a": _i32([[10, 20], [3, 0]]), "s": _i32([[100, 50], [40, 60]])}),
    Case("pos_abs_floats", _images,
         lambda m, x, a, s: m.fn.slice(x, a, s, normalized_anchor=False, normalized_shape=False), "HWC",
         lambda: {"a": _f32([[10.5, 20.5], [3.4, 0.6]]), "s": _f32([[100.5, 50.5], [40.2, 60.7]])}),
    Case("pos_abs_anchor", _images, lambda m, x, a, s: m.fn.slice(x, a, s, normalized_anchor=False), "HWC",
         lambda: {"a": _f32([[10.5, 20.5], [3.4, 0.6]]), "s": _f32([[0.25, 0.5], [0.333, 0.1]])}),
    Case("pos_hw_order", _images, lambda m, x: m.fn.slice(x, [0.1, 0.2], [0.5, 0.6], axis_names="HW"), "HWC"),
    Case("pos_axes_01", _images, lambda m, x: m.fn.slice(x, [0.1, 0.2], [0.5, 0.6], axes=[0, 1]), "HWC"),
    # named arguments
    Case("start_end", _images, lambda m, x: m.fn.slice(x, start=[10, 5], end=[120, 90]), "HWC"),
    Case("start_shape", _images, lambda m, x: m.fn.slice(x, start=[10, 5], shape=[33, 47]), "HWC"),
    Case("rel_start_rel_shape", _images, lambda m, x: m.fn.slice(x, rel_start=[0.15, 0.35], rel_shape=[0.5, 0.45]),
         "HWC"),
    Case("rel_start_rel_end", _images, lambda m, x: m.fn.slice(x, rel_start=[0.15, 0.35], rel_end=[0.65, 0.8]), "HWC"),
    Case("rel_start_shape", _images, lambda m, x: m.fn.slice(x, rel_start=[0.15, 0.35], shape=[40, 30]), "HWC"),
    Case("start_rel_shape", _images, lambda m, x: m.fn.slice(x, start=[7, 9], rel_shape=[0.35, 0.45]), "HWC"),
    Case("start_only", _images, lambda m, x: m.fn.slice(x, start=[17, 9]), "HWC"),
    Case("rel_shape_only", _images, lambda m, x: m.fn.slice(x, rel_shape=[0.5, 0.25]), "HWC"),
    Case("named_per_sample", _images, lambda m, x, st, sh: m.fn.slice(x, start=st, shape=sh), "HWC",
         lambda: {"st": _i32([[1, 2], [30, 40]]), "sh": _i32([[50, 60], [20, 10]])}),
    Case("per_sample_axes", _images, lambda m, x, ax: m.fn.slice(x, start=[11], shape=[37], axes=ax), "HWC",
         lambda: {"ax": _i32([[0], [1]])}),
    Case("channel_axis", _images, lambda m, x: m.fn.slice(x, start=[1], shape=[2], axis_names="C"), "HWC"),
    Case("no_layout_default_hwc", _images, lambda m, x: m.fn.slice(x, rel_start=[0.2, 0.1], rel_shape=[0.3, 0.6])),
    Case("gray_hw", _gray, lambda m, x: m.fn.slice(x, start=[5, 6], end=[90, 70])),
    # out of bounds
    Case("pad_fill_rgb", _images, lambda m, x: m.fn.slice(
        x, start=[-20, -30], shape=[200, 100], out_of_bounds_policy="pad", fill_values=[255, 0, 128]), "HWC"),
    Case("constant_scalar", _images, lambda m, x: m.fn.slice(
        x, rel_start=[0.8, -0.1], rel_shape=[0.5, 0.4], out_of_bounds_policy="constant", fill_values=77), "HWC"),
    Case("edge", _images, lambda m, x: m.fn.slice(
        x, start=[-20, -30], shape=[190, 130], out_of_bounds_policy="edge"), "HWC"),
    Case("reflect", _images, lambda m, x: m.fn.slice(
        x, start=[-20, -30], shape=[190, 130], out_of_bounds_policy="reflect"), "HWC"),
    Case("reflect_101", _images, lambda m, x: m.fn.slice(
        x, start=[-20, -30], shape=[190, 130], out_of_bounds_policy="reflect_101"), "HWC"),
    Case("wrap", _images, lambda m, x: m.fn.slice(
        x, start=[-20, -30], shape=[190, 130], out_of_bounds_policy="wrap"), "HWC"),
    Case("far_reflect", _gray, lambda m, x: m.fn.slice(
        x, start=[-300, 100], shape=[500, 20], out_of_bounds_policy="reflect"), "HW"),
    Case("trim_to_shape", _images, lambda m, x: m.fn.slice(
        x, start=[-20, 60], shape=[190, 130], out_of_bounds_policy="trim_to_shape"), "HWC"),
    Case("pad_channels", _images, lambda m, x: m.fn.slice(
        x, start=[0], shape=[4], axis_names="C", out_of_bounds_policy="pad", fill_values=[1, 2, 3, 4]), "HWC"),
    # output types
    Case("dtype_float", _images, lambda m, x: m.fn.slice(x, start=[3, 4], shape=[50, 40], dtype=m.types.FLOAT), "HWC"),
    Case("dtype_uint8_from_float", _float_images, lambda m, x: m.fn.slice(
        x, start=[-3, -4], shape=[50, 40], dtype=m.types.UINT8, out_of_bounds_policy="pad", fill_values=-1.7), "HWC"),
    Case("dtype_float16", _float_images, lambda m, x: m.fn.slice(
        x, start=[3, 4], shape=[50, 40], dtype=m.types.FLOAT16), "HWC"),
    Case("fill_truncated", _images, lambda m, x: m.fn.slice(
        x, start=[-3, -4], shape=[20, 20], out_of_bounds_policy="pad", fill_values=[2.7, 300.5, -1.2]), "HWC"),
    # volumes (DHWC)
    Case("volume_default_wh", _vol, lambda m, x: m.fn.slice(x, rel_start=[0.25, 0.25], rel_shape=[0.5, 0.5]), "DHWC"),
    Case("volume_dhw", _vol, lambda m, x: m.fn.slice(x, start=[2, 3, 4], shape=[20, 30, 25], axis_names="DHW"),
         "DHWC"),
    Case("volume_no_layout", _vol, lambda m, x: m.fn.slice(x, start=[5, 6], shape=[20, 30])),
    Case("volume_pad_depth", _vol, lambda m, x: m.fn.slice(
        x, start=[-3], shape=[32], axes=[0], out_of_bounds_policy="pad", fill_values=-1000), "DHWC"),
    Case("volume_pos_dhw", _vol, lambda m, x: m.fn.slice(x, [0.1, 0.2, 0.3], [0.8, 0.5, 0.4], axis_names="DHW"),
         "DHWC"),
    # audio-like signals: the time axis
    Case("audio_time", _audio, lambda m, x, a, s: m.fn.slice(x, a, s, axes=[0]), None,
         lambda: {"a": _i32([[100], [2000]]), "s": _i32([[1000], [1001]])}),
    Case("audio_time_pad", _audio, lambda m, x: m.fn.slice(
        x, start=[-100], end=[3500], axes=[0], out_of_bounds_policy="pad"), None),
    Case("audio_2ch", lambda: [signal(2000, 2)], lambda m, x: m.fn.slice(x, rel_start=[0.25], rel_shape=[0.5], axes=[0])),
    # DALI's rounding of relative named arguments, measured on many extents
    Case("rounding", lambda: _rounding_samples()[0], _rounding_build, None, lambda: _rounding_samples()[1]),
    # refused by DALI
    Case("err_out_of_bounds", _images, lambda m, x: m.fn.slice(x, start=[-1, 0], shape=[10, 10]), "HWC", error=True),
    Case("err_end_before_start", _images, lambda m, x: m.fn.slice(x, start=[30, 30], end=[10, 40]), "HWC", error=True),
    Case("err_fill_count", _images, lambda m, x: m.fn.slice(
        x, start=[-1, 0], shape=[10, 10], out_of_bounds_policy="pad", fill_values=[1, 2]), "HWC", error=True),
    Case("err_mixed_types", _images, lambda m, x, a, s: m.fn.slice(x, a, s), "HWC",
         lambda: {"a": _i32([[1, 2], [3, 4]]), "s": _f32([[0.5, 0.5], [0.5, 0.5]])}, error=True),
    Case("err_anchor_length", _images, lambda m, x: m.fn.slice(x, [0.1, 0.1, 0.1], [0.5, 0.5, 0.5]), "HWC",
         error=True),
    Case("err_no_region", _images, lambda m, x: m.fn.slice(x), "HWC", error=True),
    Case("err_start_and_rel_start", _images, lambda m, x: m.fn.slice(
        x, start=[1, 1], rel_start=[0.1, 0.1], shape=[1, 1]), "HWC", error=True),
    Case("err_multi_fill_no_channels", _gray, lambda m, x: m.fn.slice(
        x, start=[-1, -1], shape=[3, 3], out_of_bounds_policy="pad", fill_values=[1, 2]), error=True),
    Case("err_dtype", _images, lambda m, x: m.fn.slice(x, start=[1, 1], shape=[2, 2], dtype=m.types.INT16), "HWC",
         error=True),
]

def _gray_hwc() -> list[np.ndarray]:
    return [photo("camera.png", 8)[..., None]]


@cache
def _paste_sweep() -> tuple[list[np.ndarray], dict[str, list[np.ndarray]]]:
    """Small real patches of many sizes with ratios and positions on a fine grid (truncation ties)."""
    rng = np.random.default_rng(1)
    gray = photo("camera.png", 1)
    samples, extra = [], {"r": [], "px": [], "py": [], "mc": []}
    for _ in range(120):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        y, x = (int(v) for v in rng.integers(0, 400, 2))
        samples.append(np.ascontiguousarray(gray[y : y + h, x : x + w, None]))
        extra["r"].append(np.float32(np.round(rng.uniform(1, 3) * 20) / 20))
        extra["px"].append(np.float32(np.round(rng.uniform(0, 1) * 40) / 40))
        extra["py"].append(np.float32(np.round(rng.uniform(0, 1) * 40) / 40))
        extra["mc"].append(np.float32(np.round(rng.uniform(0, 60) * 4) / 4))
    return samples, extra


PASTE: list[Case] = [
    Case("centre_rgb_fill", _images, lambda m, x: m.fn.paste(x, ratio=2, fill_value=(255, 0, 128)), "HWC"),
    Case("fill_scalar", _images, lambda m, x: m.fn.paste(x, ratio=1.37, fill_value=17, paste_x=0.1, paste_y=0.9),
         "HWC"),
    Case("corners", _images, lambda m, x: m.fn.paste(x, ratio=1.5, paste_x=1, paste_y=0, fill_value=(1, 2, 3)),
         "HWC"),
    Case("min_canvas", _images, lambda m, x: m.fn.paste(x, ratio=1, min_canvas_size=260.5, fill_value=(9, 9, 9)),
         "HWC"),
    Case("gray_one_channel", _gray_hwc, lambda m, x: m.fn.paste(x, ratio=2.5, fill_value=200, n_channels=1), "HWC"),
    Case("fill_wraps", _images, lambda m, x: m.fn.paste(x, ratio=1.2, fill_value=(300, -1, 7.9)), "HWC"),
    Case("per_sample", _images, lambda m, x, r, px, py: m.fn.paste(x, ratio=r, paste_x=px, paste_y=py,
                                                                   fill_value=(0, 50, 100)), "HWC",
         lambda: {"r": [np.float32(1.55), np.float32(2.05)], "px": [np.float32(0.25), np.float32(0.7)],
                  "py": [np.float32(0.75), np.float32(0.3)]}),
    Case("sweep", lambda: _paste_sweep()[0], lambda m, x, r, px, py, mc: m.fn.paste(
        x, ratio=r, paste_x=px, paste_y=py, min_canvas_size=mc, fill_value=7, n_channels=1), "HWC",
         lambda: _paste_sweep()[1]),
    Case("err_ratio_below_1", _images, lambda m, x: m.fn.paste(x, ratio=0.5, fill_value=0), "HWC", error=True),
    Case("err_paste_x", _images, lambda m, x: m.fn.paste(x, ratio=2, paste_x=1.5, fill_value=0), "HWC", error=True),
    Case("err_fill_count", _images, lambda m, x: m.fn.paste(x, ratio=2, fill_value=(1, 2)), "HWC", error=True),
    Case("err_no_fill", _images, lambda m, x: m.fn.paste(x, ratio=2), "HWC", error=True),
    Case("err_2d", _gray, lambda m, x: m.fn.paste(x, ratio=2, fill_value=0), error=True),
]


def _tiles() -> list[np.ndarray]:
    """Four real 64 x 80 RGB tiles (uniform: multi_paste may take its canvas from them)."""
    a, b = photo("chelsea.png", 2), photo("astronaut.png", 4)
    return [np.ascontiguousarray(t) for t in (a[:64, :80], a[60:124, 100:180], b[:64, :80], b[50:114, 40:120])]


def _k(rows: list[list[list[float]]], dtype: Any) -> list[np.ndarray]:
    return [np.asarray(r, dtype=dtype).reshape(-1, 2) for r in rows]


def _mosaic_rel() -> dict[str, list[np.ndarray]]:
    rng = np.random.default_rng(5)
    ia = _k([np.round(rng.uniform(0, 0.5, (3, 2)) * 16).tolist() for _ in range(4)], np.float32)
    sh = _k([np.round(rng.uniform(0.1, 0.5, (3, 2)) * 16).tolist() for _ in range(4)], np.float32)
    oa = _k([np.round(rng.uniform(0, 0.5, (3, 2)) * 16).tolist() for _ in range(4)], np.float32)
    return {"ia": [v / 16 for v in ia], "sh": [v / 16 for v in sh], "oa": [v / 16 for v in oa]}


MULTI_PASTE: list[Case] = [
    Case("ids_uniform", _tiles, lambda m, x: m.fn.multi_paste(x, in_ids=[2, 0]), "HWC"),
    Case("ids_regions", _tiles, lambda m, x, ia, sh, oa: m.fn.multi_paste(
        x, in_ids=[1, 3], in_anchors=ia, shapes=sh, out_anchors=oa, output_size=[90, 120]), "HWC",
         lambda: {"ia": _k([[[0, 0], [10, 20]]] * 4, np.int32), "sh": _k([[[30, 40], [50, 60]]] * 4, np.int32),
                  "oa": _k([[[0, 0], [20, 30]], [[60, 80], [40, 0]], [[5, 5], [6, 6]], [[59, 79], [0, 0]]], np.int32)}),
    Case("ids_per_sample", _tiles, lambda m, x, ids, oa, sh: m.fn.multi_paste(
        x, in_ids=ids, out_anchors=oa, shapes=sh, output_size=[50, 50]), "HWC",
         lambda: {"ids": [np.array([3], np.int32), np.array([0, 2], np.int32), np.array([1], np.int32),
                          np.array([2, 1, 0], np.int32)],
                  "oa": _k([[[0, 0]], [[30, 20], [0, 0]], [[10, 10]], [[29, 19], [1, 1], [2, 2]]], np.int32),
                  "sh": _k([[[20, 30]], [[20, 30], [10, 10]], [[20, 30]], [[20, 30], [7, 8], [3, 3]]], np.int32)}),
    Case("ids_relative", _tiles, lambda m, x, ia, sh, oa: m.fn.multi_paste(
        x, in_ids=[0, 1, 2], in_anchors_rel=ia, shapes_rel=sh, out_anchors_rel=oa), "HWC", _mosaic_rel),
    Case("multi_input", _tiles, lambda m, x, y, z, oa, sh: m.fn.multi_paste(
        x, y, z, out_anchors=oa, shapes=sh), "HWC",
         lambda: {"y": _tiles()[::-1], "z": _tiles()[1:] + _tiles()[:1],
                  "oa": _k([[[0, 0], [32, 40], [16, 20]]] * 4, np.int32),
                  "sh": _k([[[32, 40], [32, 40], [32, 40]]] * 4, np.int32)}),
    Case("dtype_float", _tiles, lambda m, x, oa, sh: m.fn.multi_paste(
        x, in_ids=[1, 2], dtype=m.types.FLOAT, out_anchors=oa, shapes=sh), "HWC",
         lambda: {"oa": _k([[[0, 0], [10, 10]]] * 4, np.int32), "sh": _k([[[54, 70], [54, 70]]] * 4, np.int32)}),
    Case("dtype_uint8_from_float", lambda: [t.astype(np.float32) * 1.3 - 20.5 for t in _tiles()],
         lambda m, x, oa, sh: m.fn.multi_paste(x, in_ids=[3, 0], dtype=m.types.UINT8, out_anchors=oa, shapes=sh),
         "HWC", lambda: {"oa": _k([[[0, 0], [20, 20]]] * 4, np.int32), "sh": _k([[[44, 60], [44, 60]]] * 4, np.int32)}),
    Case("err_outside_canvas", _tiles, lambda m, x, oa: m.fn.multi_paste(x, in_ids=[0], out_anchors=oa), "HWC",
         lambda: {"oa": _k([[[10, 10]]] * 4, np.int32)}, error=True),
    Case("err_outside_input", _tiles, lambda m, x, ia, sh: m.fn.multi_paste(
        x, in_ids=[0], in_anchors=ia, shapes=sh, output_size=[100, 100]), "HWC",
         lambda: {"ia": _k([[[10, 10]]] * 4, np.int32), "sh": _k([[[60, 10]]] * 4, np.int32)}, error=True),
    Case("err_not_uniform", _images, lambda m, x: m.fn.multi_paste(x, in_ids=[0, 1]), "HWC", error=True),
]

def _vol_u8() -> list[np.ndarray]:
    v = volume().astype(np.float32)
    return [np.round((v - v.min()) / (v.max() - v.min()) * 255).astype(np.uint8)]


def _vol_f32() -> list[np.ndarray]:
    return [volume().astype(np.float32) / 100]


_SHEAR = [1.0, 0.2, 0.1, -3.0, 0.05, 0.9, 0.0, 2.5, -0.1, 0.0, 1.1, 1.5]  # 3x4, (x, y, z)

VOLUME: list[Case] = [
    Case("flip_depthwise", _vol, lambda m, x: m.fn.flip(x, horizontal=0, depthwise=1), "DHWC"),
    Case("flip_all", _vol, lambda m, x: m.fn.flip(x, horizontal=1, vertical=1, depthwise=1), "DHWC"),
    Case("crop_centre", _vol, lambda m, x: m.fn.crop(x, crop=(10, 20, 15)), "DHWC"),
    Case("crop_dhw_pos", _vol, lambda m, x: m.fn.crop(x, crop_d=10, crop_h=20, crop_w=15, crop_pos_z=0.3,
                                                      crop_pos_x=0.1, crop_pos_y=0.8), "DHWC"),
    Case("crop_pad", _vol, lambda m, x: m.fn.crop(x, crop=(31, 50, 40), out_of_bounds_policy="pad",
                                                  fill_values=-7), "DHWC"),
    Case("resize_up_u8", _vol_u8, lambda m, x: m.fn.resize(x, size=(30, 50, 40)), "DHWC", atol=1),
    Case("resize_down_u8", _vol_u8, lambda m, x: m.fn.resize(x, size=(12, 20, 16)), "DHWC", atol=1),
    Case("resize_x_f32", _vol_f32, lambda m, x: m.fn.resize(x, resize_x=66), "DHWC", atol=1e-2),
    Case("resize_xy_f32", _vol_f32, lambda m, x: m.fn.resize(x, resize_x=20, resize_y=50), "DHWC", atol=1e-2),
    Case("resize_shorter_nn", _vol_u8, lambda m, x: m.fn.resize(x, resize_shorter=50, interp_type=m.types.INTERP_NN),
         "DHWC"),
    Case("resize_shorter_linear", _vol_u8, lambda m, x: m.fn.resize(x, resize_shorter=40), "DHWC", atol=1),
    Case("rotate_z", _vol_u8, lambda m, x: m.fn.rotate(x, axis=(0, 0, 1), angle=30), "DHWC", atol=1),
    Case("rotate_x_fill", _vol_u8, lambda m, x: m.fn.rotate(x, axis=(1, 0, 0), angle=30, fill_value=0), "DHWC",
         atol=1),
    Case("rotate_diag_keep", _vol_f32, lambda m, x: m.fn.rotate(x, axis=(1, 1, 1), angle=20, keep_size=True),
         "DHWC", atol=1e-2),
    Case("rotate_nn", _vol, lambda m, x: m.fn.rotate(x, axis=(1, 2, 3), angle=77, fill_value=0,
                                                     interp_type=m.types.INTERP_NN), "DHWC"),
    Case("warp_shear", _vol_u8, lambda m, x: m.fn.warp_affine(x, matrix=_SHEAR, fill_value=0), "DHWC", atol=1),
    Case("warp_size_clamp", _vol_f32, lambda m, x: m.fn.warp_affine(x, matrix=_SHEAR, size=(20, 30, 40)), "DHWC",
         atol=1e-2),
    Case("warp_forward_map", _vol_u8, lambda m, x: m.fn.warp_affine(x, matrix=_SHEAR, inverse_map=False,
                                                                    fill_value=255), "DHWC", atol=1),
]

def _encoded(names: tuple[str, ...]) -> Callable[[], list[np.ndarray]]:
    return lambda: [np.fromfile(DATA / n, dtype=np.uint8) for n in names]


_HEADERS = ("jpeg-quirks/flower2.jpg", "jpeg-quirks/hopper_gray.jpg", "jpeg-quirks/hopper_orientation_6.jpg",
            "jpeg-quirks/pil_sample_cmyk.jpg", "jpeg-quirks/truncated_jpeg.jpg", "photos/camera.png",
            "photos/chelsea.png", "photos/rocket.jpg")

PEEK_IMAGE_SHAPE: list[Case] = [
    Case("default", _encoded(_HEADERS), lambda m, x: m.fn.peek_image_shape(x)),
    Case("no_orientation", _encoded(_HEADERS), lambda m, x: m.fn.peek_image_shape(x, adjust_orientation=False)),
    Case("gray_int32", _encoded(_HEADERS), lambda m, x: m.fn.peek_image_shape(
        x, image_type=m.types.GRAY, dtype=m.types.INT32)),
    Case("any_data", _encoded(_HEADERS), lambda m, x: m.fn.peek_image_shape(x, image_type=m.types.ANY_DATA)),
    Case("float", _encoded(_HEADERS), lambda m, x: m.fn.peek_image_shape(x, dtype=m.types.FLOAT)),
    Case("experimental_alias", _encoded(_HEADERS), lambda m, x: m.fn.experimental.peek_image_shape(x)),
    Case("err_broken_png", _encoded(("pillow-corpus/broken.png",)),
         lambda m, x: m.fn.peek_image_shape(x), error=True),
]

RESIZE_CROP_MIRROR: list[Case] = [
    Case("shorter_centre", _images, lambda m, x: m.fn.resize_crop_mirror(x, resize_shorter=80, crop=(64, 72)), "HWC",
         atol=1),
    Case("size_pos_mirror", _images, lambda m, x: m.fn.resize_crop_mirror(
        x, size=(120, 160), crop_h=90, crop_w=100, crop_pos_x=0.2, crop_pos_y=0.9, mirror=1), "HWC", atol=1),
    Case("upscale_both_flips", _images, lambda m, x: m.fn.resize_crop_mirror(
        x, resize_x=300, crop=(150, 200), mirror=3), "HWC", atol=1),
    Case("per_sample", _images, lambda m, x, mi, px: m.fn.resize_crop_mirror(
        x, resize_shorter=64, crop=(48, 48), mirror=mi, crop_pos_x=px), "HWC",
         lambda: {"mi": [np.int32(2), np.int32(0)], "px": [np.float32(0.0), np.float32(1.0)]}, atol=1),
    Case("float_nn", _images, lambda m, x: m.fn.resize_crop_mirror(
        x, size=(80, 120), crop=(50, 60), interp_type=m.types.INTERP_NN, dtype=m.types.FLOAT), "HWC"),
    Case("volume", _vol_u8, lambda m, x: m.fn.resize_crop_mirror(
        x, size=(50, 82, 66), crop=(40, 64, 48), crop_pos_z=0.25, mirror=5), "DHWC", atol=1),
    Case("crop_past_the_edge", _images, lambda m, x: m.fn.resize_crop_mirror(x, resize_shorter=40, crop=(64, 64)),
         "HWC", atol=1),
]

_HOMOGRAPHY = [0.9, 0.15, 5.5, -0.1, 1.05, 3.25, 0.0008, -0.0005, 1.0]


def _u16_images() -> list[np.ndarray]:
    return [(im.astype(np.uint16) * 257) for im in _images()]


WARP_PERSPECTIVE: list[Case] = [
    Case("linear_constant", _images, lambda m, x: m.fn.experimental.warp_perspective(x, matrix=_HOMOGRAPHY), "HWC",
         atol=1),
    Case("fill_rgb", _images, lambda m, x: m.fn.experimental.warp_perspective(
        x, matrix=_HOMOGRAPHY, fill_value=[255, 0, 128], size=(90, 140)), "HWC", atol=1),
    Case("replicate", _images, lambda m, x: m.fn.experimental.warp_perspective(
        x, matrix=_HOMOGRAPHY, border_mode="replicate"), "HWC", atol=1),
    Case("reflect", _images, lambda m, x: m.fn.experimental.warp_perspective(
        x, matrix=[1.2, 0.3, -30, 0.1, 1.3, -25, 0.001, 0.002, 1], border_mode="reflect"), "HWC", atol=1),
    Case("reflect_101", _images, lambda m, x: m.fn.experimental.warp_perspective(
        x, matrix=[1.2, 0.3, -30, 0.1, 1.3, -25, 0.001, 0.002, 1], border_mode="reflect_101"), "HWC", atol=1),
    Case("wrap", _images, lambda m, x: m.fn.experimental.warp_perspective(
        x, matrix=[1.2, 0.3, -30, 0.1, 1.3, -25, 0.001, 0.002, 1], border_mode="wrap"), "HWC", atol=1),
    Case("nearest", _images, lambda m, x: m.fn.experimental.warp_perspective(
        x, matrix=_HOMOGRAPHY, interp_type=m.types.INTERP_NN), "HWC"),
    Case("forward_map", _images, lambda m, x: m.fn.experimental.warp_perspective(
        x, matrix=_HOMOGRAPHY, inverse_map=False), "HWC", atol=1),
    Case("center_origin", _images, lambda m, x: m.fn.experimental.warp_perspective(
        x, matrix=_HOMOGRAPHY, pixel_origin="center"), "HWC", atol=1),
    Case("matrix_input", _images, lambda m, x, mt: m.fn.experimental.warp_perspective(x, mt), "HWC",
         lambda: {"mt": [np.asarray(_HOMOGRAPHY, np.float32).reshape(3, 3),
                         np.asarray([1, 0.2, -10, 0, 1, 4, 0, 0.001, 1], np.float32).reshape(3, 3)]}, atol=1),
    Case("gray_hw", _gray, lambda m, x: m.fn.experimental.warp_perspective(x, matrix=_HOMOGRAPHY), "HW", atol=1),
    Case("float", _float_images, lambda m, x: m.fn.experimental.warp_perspective(x, matrix=_HOMOGRAPHY), "HWC",
         atol=1e-2),
    Case("uint16", _u16_images, lambda m, x: m.fn.experimental.warp_perspective(x, matrix=_HOMOGRAPHY), "HWC",
         atol=1),
]

#: Every operator's cases, by the name of its reference file.
CASES: dict[str, list[Case]] = {"slice": SLICE, "paste": PASTE, "multi_paste": MULTI_PASTE, "volume": VOLUME,
                              "peek_image_shape": PEEK_IMAGE_SHAPE,
                              "resize_crop_mirror": RESIZE_CROP_MIRROR,
                              "warp_perspective": WARP_PERSPECTIVE}


# --- the streamflow side (used by the tests; the recorder never calls these) ---------------------

REFERENCE = DATA / "dali" / "geometry"


@cache
def reference(op: str) -> dict[str, np.ndarray]:
    """DALI's recorded outputs of ``op``'s cases (see ``record_geometry.py``)."""
    with np.load(REFERENCE / f"{op}.npz") as data:
        return {k: data[k] for k in data.files}


def run_streamflow(case: Case) -> list[list[np.ndarray]]:
    """streamflow's outputs of ``case`` (per output, per sample); raises what the pipeline raises."""
    from types import SimpleNamespace

    import streamflow as sf
    from streamflow import fn, types

    samples = case.samples()
    extra = case.extra()
    m = SimpleNamespace(fn=fn, types=types)

    @sf.pipeline_def(batch_size=len(samples), num_threads=2, seed=1234)
    def pipe() -> Any:
        x = fn.external_source([list(samples)], layout=case.layout)
        nodes = {k: fn.external_source([list(v)]) for k, v in extra.items()}
        out = case.build(m, x, **nodes)
        return out if isinstance(out, tuple) else (out,)

    with pipe() as p:
        outputs = p.run()
    return [[np.asarray(o.at(i)) for i in range(len(samples))] for o in outputs]


def check_case(op: str, case: Case) -> None:
    """Run ``case`` on streamflow and compare with DALI's recorded outputs (``case.atol``)."""
    import pytest

    ref = reference(op)
    if bool(ref[f"{case.name}/error"]):
        assert case.error
        with pytest.raises(Exception) as info:
            run_streamflow(case)
        assert op.split(".")[-1] in str(info.value), f"{case.name}: the error should name the operator: {info.value}"
        return
    assert_matches(op, case, run_streamflow(case), ref)


def assert_matches(op: str, case: Case, got: list[list[np.ndarray]], ref: dict[str, np.ndarray]) -> None:
    """streamflow's outputs ``got`` of ``case`` against DALI's ``ref``: shapes and dtypes equal, values
    within ``case.atol`` (NaNs equal where exact)."""
    for k, output in enumerate(got):
        for i, sample in enumerate(output):
            want = ref[f"{case.name}/{k}/{i}"]
            what = f"{op} case {case.name!r}, output {k}, sample {i}"
            assert sample.shape == want.shape, f"{what}: shape {sample.shape}, DALI {want.shape}"
            assert sample.dtype == want.dtype, f"{what}: dtype {sample.dtype}, DALI {want.dtype}"
            if case.atol == 0:
                assert np.array_equal(sample, want, equal_nan=sample.dtype.kind == "f"), f"{what}: values differ"
            else:
                diff = np.abs(sample.astype(np.float64) - want.astype(np.float64))
                assert diff.max(initial=0) <= case.atol, f"{what}: max |diff| {diff.max()} > {case.atol}"
