"""The DALI reference cases of the "breadth" operators: tensor creation and utilities, image
effects, decoders of encoded arrays. Inputs, pipelines, tolerances.

Shared by ``record_breadth.py`` (which runs each case on DALI 2.4's CPU operators
and saves the outputs under ``tests/data/dali/breadth/``) and the tests (which
run the same case on streamflow and compare, ``check``). The ``Case`` type, the
photos and the streamflow runner are those of ``geometry_cases.py``.
"""

from __future__ import annotations

import dataclasses
import io
from functools import cache
from typing import Any

import numpy as np

try:  # imported by the tests, as part of the package dali_reference
    from .geometry_cases import DATA, Case, assert_matches, photo, run_streamflow, signal, volume
except ImportError:  # imported by record_breadth.py, beside it
    from geometry_cases import DATA, Case, assert_matches, photo, run_streamflow, signal, volume  # type: ignore[no-redef]

__all__ = ["CASES", "REFERENCE", "check", "reference"]

U8 = np.uint8


def _hw_i16() -> list[np.ndarray]:
    v = volume()[:, :, :, 0]
    return [np.ascontiguousarray(v[12]), np.ascontiguousarray(v[3, :20, :17])]


def _images() -> list[np.ndarray]:
    return [photo("chelsea.png", 3), photo("coffee.png", 4)]


def _f32(values: list[Any]) -> list[np.ndarray]:
    return [np.asarray(v, dtype=np.float32) for v in values]


def _i32(values: list[Any]) -> list[np.ndarray]:
    return [np.asarray(v, dtype=np.int32) for v in values]


def _floats() -> list[np.ndarray]:
    return [np.array([1.5, -2.5, 300.7, -1e9, 0.49999997, 2.5, np.nan, 65535.5], np.float32),
            np.array([-0.5, 0.5, 127.5, -128.5, np.inf, -np.inf], np.float32)]


CONSTANT: list[Case] = [
    Case("fdata", _images, lambda m, x: m.fn.constant(fdata=[1.5, 2.5, -0.25])),
    Case("idata_shape_layout", _images, lambda m, x: m.fn.constant(idata=[1, 2, 3, 4, 5, 6], shape=[2, 3],
                                                                   layout="HW")),
    Case("scalar_broadcast", _images, lambda m, x: m.fn.constant(fdata=3.0, shape=[2, 3])),
    Case("scalar_1d", _images, lambda m, x: m.fn.constant(fdata=3.0)),
    Case("fdata_to_uint8", _images, lambda m, x: m.fn.constant(fdata=[1.7, -2.5, 2.5, 300.0, 0.5],
                                                               dtype=m.types.UINT8)),
    Case("idata_saturate", _images, lambda m, x: m.fn.constant(idata=[2 ** 40, -2 ** 40, 7])),
    Case("idata_int64", _images, lambda m, x: m.fn.constant(idata=[2 ** 40, -3], dtype=m.types.INT64)),
    Case("idata_to_float16", _images, lambda m, x: m.fn.constant(idata=[1, 2, 70000], dtype=m.types.FLOAT16)),
    Case("fdata_to_bool", _images, lambda m, x: m.fn.constant(fdata=[0.0, 0.5, -1.0], dtype=m.types.BOOL)),
    Case("idata_to_uint16", _images, lambda m, x: m.fn.constant(idata=[-1, 70000, 5], dtype=m.types.UINT16)),
    Case("count_mismatch", _images, lambda m, x: m.fn.constant(idata=[1, 2, 3], shape=[2, 2]), error=True),
    Case("both", _images, lambda m, x: m.fn.constant(idata=[1], fdata=[1.0]), error=True),
    Case("layout_mismatch", _images, lambda m, x: m.fn.constant(idata=[1, 2], layout="HW"), error=True),
]

FULL: list[Case] = [
    Case("const_row", _images, lambda m, x: m.fn.full(np.array([1.0, 2.0, 3.0], np.float32), shape=[2, 3])),
    Case("no_shape", _images, lambda m, x: m.fn.full(np.int16(4))),
    Case("leading_ones", _images, lambda m, x: m.fn.full(np.array([[5, 6]], np.uint16), shape=[3, 1, 2])),
    Case("layout", _images, lambda m, x: m.fn.full(np.float32(7), shape=[2, 2], layout="HW")),
    Case("per_sample_fill", _images, lambda m, x, f: m.fn.full(f, shape=[2, 3]),
         extra=lambda: {"f": [np.array([[1], [2]], np.uint8), np.array([[3, 4, 5]], np.uint8)]}),
    Case("per_sample_shape", _images, lambda m, x, s: m.fn.full(np.float32(-1.5), shape=s),
         extra=lambda: {"s": _i32([[2, 1], [3, 4]])}),
    Case("bad_broadcast", _images, lambda m, x: m.fn.full(np.array([1, 2, 3], np.int16), shape=[2, 2]), error=True),
]

FULL_LIKE: list[Case] = [
    Case("round_saturate", _hw_i16, lambda m, x: m.fn.full_like(x, np.array([9.7], np.float32)), "HW"),
    Case("broadcast_column", _hw_i16, lambda m, x, f: m.fn.full_like(x, f), "HW",
         extra=lambda: {"f": [np.arange(41, dtype=np.float32).reshape(41, 1) * 1000.5,
                              (np.arange(17, dtype=np.float32) - 8.5).reshape(1, 17)]}),
    Case("bad_broadcast", _hw_i16, lambda m, x: m.fn.full_like(x, np.array([1.0, 2.0, 3.0], np.float32)), "HW",
         error=True),
]

ZEROS_ONES: list[Case] = [
    Case("zeros", _images, lambda m, x: m.fn.zeros(shape=[2, 3])),
    Case("zeros_scalar", _images, lambda m, x: m.fn.zeros()),
    Case("zeros_int_shape", _images, lambda m, x: m.fn.zeros(shape=3, dtype=m.types.FLOAT16)),
    Case("ones_float", _images, lambda m, x: m.fn.ones(shape=[2], dtype=m.types.FLOAT)),
    Case("ones_per_sample_shape", _images, lambda m, x, s: m.fn.ones(shape=s, dtype=m.types.UINT8),
         extra=lambda: {"s": _i32([[2, 1], [3, 2]])}),
    Case("zeros_like", _images, lambda m, x: m.fn.zeros_like(x), "HWC"),
    Case("zeros_like_f16", _hw_i16, lambda m, x: m.fn.zeros_like(x, dtype=m.types.FLOAT16), "HW"),
    Case("ones_like", _hw_i16, lambda m, x: m.fn.ones_like(x), "HW"),
    Case("ones_like_bool", _images, lambda m, x: m.fn.ones_like(x, dtype=m.types.BOOL), "HWC"),
    Case("zeros_layout_mismatch", _images, lambda m, x: m.fn.zeros(shape=[2, 2], layout="HWC"), error=True),
]

COPY: list[Case] = [
    Case("images", _images, lambda m, x: m.fn.copy(x), "HWC"),
    Case("int16", _hw_i16, lambda m, x: m.fn.copy(x), "HW"),
]

CAST_LIKE: list[Case] = [
    Case("to_float", _hw_i16, lambda m, x: m.fn.cast_like(x, np.float32(1)), "HW"),
    Case("to_uint8", _floats, lambda m, x: m.fn.cast_like(x, np.uint8(1))),
    Case("to_int16", _floats, lambda m, x: m.fn.cast_like(x, np.int16(1))),
    Case("from_node", _images, lambda m, x, y: m.fn.cast_like(x, y), "HWC",
         extra=lambda: {"y": [np.zeros(2, np.float16), np.zeros(1, np.float16)]}),
]

REINTERPRET: list[Case] = [
    Case("dtype_u8", _hw_i16, lambda m, x: m.fn.reinterpret(x, dtype=m.types.UINT8), "HW"),
    Case("dtype_i32", _images, lambda m, x: m.fn.reinterpret(x, dtype=m.types.INT8), "HWC"),
    Case("shape_flat", _images, lambda m, x: m.fn.reinterpret(x, shape=[-1]), "HWC"),
    Case("shape_layout", _images, lambda m, x: m.fn.reinterpret(x, shape=[-1, 3], layout="XC"), "HWC"),
    Case("rel_shape", _images, lambda m, x: m.fn.reinterpret(x, rel_shape=[0.5, -1]), "HWC"),
    Case("src_dims", _images, lambda m, x: m.fn.reinterpret(x, src_dims=[2, -1, 1, 0], layout="CXWH"), "HWC"),
    Case("src_dims_rel", _images, lambda m, x: m.fn.reinterpret(x, src_dims=[1, 0, 2], rel_shape=[1, 1, -1]), "HWC"),
    Case("dtype_shape", _hw_i16, lambda m, x: m.fn.reinterpret(x, dtype=m.types.UINT8, shape=[-1, 2]), "HW"),
    Case("per_sample_shape", _hw_i16, lambda m, x, s: m.fn.reinterpret(x, shape=s, layout="X"), "HW",
         extra=lambda: {"s": _i32([[41 * 33], [20 * 17]])}),
    Case("per_sample_shape_keeps_layout", _hw_i16, lambda m, x, s: m.fn.reinterpret(x, shape=s), "HW",
         extra=lambda: {"s": _i32([[41 * 33], [20 * 17]])}, error=True),
    Case("shape_input", _hw_i16, lambda m, x, s: m.fn.reinterpret(x, s, dtype=m.types.UINT8), "HW",
         extra=lambda: {"s": _i32([[41, 66], [10, 68]])}),
    Case("bad_bytes", _hw_i16, lambda m, x: m.fn.reinterpret(x, shape=[3, 2]), "HW", error=True),
    Case("bad_innermost", _hw_i16, lambda m, x: m.fn.reinterpret(x, dtype=m.types.FLOAT64), "HW", error=True),
]

GET_PROPERTY: list[Case] = [
    Case("layout", _images, lambda m, x: m.fn.get_property(x, key="layout"), "HWC"),
    Case("layout_none", _hw_i16, lambda m, x: m.fn.get_property(x, key="layout")),
    Case("source_info_external", _images, lambda m, x: m.fn.get_property(x, key="source_info"), "HWC"),
    Case("bad_key", _images, lambda m, x: m.fn.get_property(x, key="foo"), "HWC", error=True),
    # the layouts other operators give their outputs
    Case("layouts_of_outputs", _images, lambda m, x: tuple(m.fn.get_property(y, key="layout") for y in (
        m.fn.zeros_like(x), m.fn.full_like(x, np.float32(1)), m.fn.copy(x), m.fn.cast_like(x, np.float32(0)),
        m.fn.reinterpret(x, dtype=m.types.INT8), m.fn.reinterpret(x, shape=[-1]),
        m.fn.reinterpret(x, rel_shape=[1, 1, 1]), m.fn.reinterpret(x, shape=[-1, 3], layout="XC"),
        m.fn.constant(idata=[1, 2], layout="X"), m.fn.zeros(shape=[1, 2], layout="HW"))), "HWC"),
]

def _npy(array: np.ndarray) -> np.ndarray:
    buf = io.BytesIO()
    np.save(buf, array)
    return np.frombuffer(buf.getvalue(), np.uint8)


def _npy_of(*arrays: np.ndarray) -> Any:
    return lambda: [_npy(a) for a in arrays]


_V = volume()[:, :, :, 0]

DECODERS_NUMPY: list[Case] = [
    Case("int16_volume", _npy_of(_V, _V[3:9, 5:, ::2]), lambda m, x: m.fn.decoders.numpy(x)),
    Case("photo", _npy_of(photo("chelsea.png", 3), photo("coffee.png", 4)), lambda m, x: m.fn.decoders.numpy(x)),
    Case("bool", _npy_of(_V[5] > 300, _V[9] > 100), lambda m, x: m.fn.decoders.numpy(x)),
    Case("float16", _npy_of(_V[4].astype(np.float16) / 7, _V[6, :3].astype(np.float16)),
         lambda m, x: m.fn.decoders.numpy(x)),
    Case("scalar_and_empty", _npy_of(np.zeros((0, 3), np.float32), np.ones((2, 3), np.float32)),
         lambda m, x: m.fn.decoders.numpy(x)),
    Case("scalars", _npy_of(np.float64(3.25), np.float64(-1)), lambda m, x: m.fn.decoders.numpy(x)),
    Case("dtype_uint8", _npy_of(_V[7].astype(np.float32) / 3 - 20, _V[8].astype(np.float32) * 0.5 + 0.25),
         lambda m, x: m.fn.decoders.numpy(x, dtype=m.types.UINT8)),
    Case("dtype_float", _npy_of(_V[7], _V[8]), lambda m, x: m.fn.decoders.numpy(x, dtype=m.types.FLOAT)),
    Case("garbage", lambda: [np.frombuffer(b"hello world, not npy", np.uint8)] * 2,
         lambda m, x: m.fn.decoders.numpy(x), error=True),
    Case("complex", _npy_of(np.ones(3, np.complex64), np.ones(3, np.complex64)),
         lambda m, x: m.fn.decoders.numpy(x), error=True),
]

def _float_images() -> list[np.ndarray]:
    return [(im.astype(np.float32) * 1.37 - 40.25) for im in _images()]


WATER: list[Case] = [
    Case("default", _images, lambda m, x: m.fn.water(x), "HWC", atol=0),
    Case("linear", _images, lambda m, x: m.fn.water(x, interp_type=m.types.INTERP_LINEAR), "HWC", atol=1),
    Case("waves_fill", _images, lambda m, x: m.fn.water(x, ampl_x=4.5, ampl_y=17.0, freq_x=0.11, freq_y=0.02,
                                                         phase_x=1.0, phase_y=-0.5, fill_value=77.9), "HWC"),
    Case("mask", _images, lambda m, x, k: m.fn.water(x, mask=k), "HWC", extra=lambda: {"k": _i32([[0], [1]])}),
    Case("float", _float_images, lambda m, x: m.fn.water(x, interp_type=m.types.INTERP_LINEAR, fill_value=-3.5),
         "HWC", atol=2e-3),
]

SPHERE: list[Case] = [
    Case("default", _images, lambda m, x: m.fn.sphere(x), "HWC"),
    Case("linear_fill", _images, lambda m, x: m.fn.sphere(x, interp_type=m.types.INTERP_LINEAR, fill_value=200),
         "HWC", atol=1),
    Case("mask", _images, lambda m, x, k: m.fn.sphere(x, mask=k), "HWC", extra=lambda: {"k": _i32([[1], [0]])}),
    Case("float", _float_images, lambda m, x: m.fn.sphere(x), "HWC"),
    Case("gray_1_channel", lambda: [photo("camera.png", 4)[:, :, None]], lambda m, x: m.fn.sphere(x), "HWC"),
]

def _signals() -> list[np.ndarray]:
    return [signal(1000), signal(777)]


POWER_SPECTRUM: list[Case] = [
    Case("default", _signals, lambda m, x: m.fn.power_spectrum(x), atol=1e-3),
    Case("nfft_short", _signals, lambda m, x: m.fn.power_spectrum(x, nfft=256), atol=1e-3),
    Case("nfft_long", _signals, lambda m, x: m.fn.power_spectrum(x, nfft=2048), atol=1e-3),
    Case("magnitude", _signals, lambda m, x: m.fn.power_spectrum(x, power=1), atol=1e-4),
    Case("axis0", lambda: [signal(600, 3), signal(333, 3)], lambda m, x: m.fn.power_spectrum(x, axis=0), atol=1e-3),
    Case("int16", lambda: [volume()[3, 5, :, 0]] * 2, lambda m, x: m.fn.power_spectrum(x), error=True),
]

def bayer(rgb: np.ndarray, blue: tuple[int, int]) -> np.ndarray:
    """The Bayer mosaic of an RGB image, blue at ``blue`` in the tile from the second row and column."""
    h, w, _ = rgb.shape
    yy, xx = np.mgrid[0:h, 0:w]
    by, bx = (1 + blue[0]) % 2, (1 + blue[1]) % 2
    out = rgb[..., 1].copy()
    is_blue = (yy % 2 == by) & (xx % 2 == bx)
    is_red = (yy % 2 != by) & (xx % 2 != bx)
    out[is_blue], out[is_red] = rgb[..., 2][is_blue], rgb[..., 0][is_red]
    return out


def _bayer_images(blue: tuple[int, int] = (0, 0), dtype: Any = np.uint8) -> Any:
    def make() -> list[np.ndarray]:
        imgs = [photo("chelsea.png", 3)[:, :150], photo("coffee.png", 4)[:100, :150]]
        scale = 257 if dtype == np.uint16 else 1
        return [bayer(im, blue).astype(dtype) * dtype(scale) for im in imgs]
    return make


_ALGOS = ("bilinear_ocv", "edgeaware_ocv", "vng_ocv", "gray_ocv")
_BLUES = ((0, 0), (0, 1), (1, 0), (1, 1))

DEBAYER: list[Case] = [
    *(Case(f"{a}_{b[0]}{b[1]}", _bayer_images(b), lambda m, x, a=a, b=b: m.fn.debayer(
        x, blue_position=list(b), algorithm=a), "HW") for a in _ALGOS for b in _BLUES),
    Case("uint16", _bayer_images((1, 1), np.uint16), lambda m, x: m.fn.debayer(x, blue_position=[1, 1]), "HW"),
    Case("uint16_edgeaware", _bayer_images((0, 1), np.uint16),
         lambda m, x: m.fn.debayer(x, blue_position=[0, 1], algorithm="edgeaware_ocv"), "HW"),
    Case("hwc_per_sample", lambda: [im[..., None] for im in _bayer_images((1, 0))()],
         lambda m, x, b: m.fn.debayer(x, blue_position=b), "HWC", extra=lambda: {"b": _i32([[1, 0], [0, 1]])}),
    Case("sequence", lambda: [np.stack(_bayer_images((0, 0))()), np.stack(_bayer_images((0, 0))()[::-1])],
         lambda m, x: m.fn.debayer(x, blue_position=[0, 0]), "FHW"),
    Case("odd_size", lambda: [photo("chelsea.png", 3)[:, :, 0]], lambda m, x: m.fn.debayer(x, blue_position=[0, 0]),
         "HW", error=True),
    Case("vng_uint16", _bayer_images((1, 1), np.uint16),
         lambda m, x: m.fn.debayer(x, blue_position=[1, 1], algorithm="vng_ocv"), "HW", error=True),
]

CLAHE: list[Case] = [
    Case("gray", lambda: [photo("camera.png", 2)[..., None], np.ascontiguousarray(photo("camera.png", 3)[:101, :77, None])],
         lambda m, x: m.fn.clahe(x, tiles_x=8, tiles_y=8, clip_limit=2.0), "HWC"),
    Case("gray_odd_grid", lambda: [np.ascontiguousarray(photo("camera.png", 3)[:101, :77, None])],
         lambda m, x: m.fn.clahe(x, tiles_x=5, tiles_y=3, clip_limit=3.0), "HWC"),
    Case("rgb_luma", _images, lambda m, x: m.fn.clahe(x, tiles_x=8, tiles_y=8, clip_limit=2.0), "HWC"),
    Case("rgb_channels", _images, lambda m, x: m.fn.clahe(x, tiles_x=4, tiles_y=6, clip_limit=1.5, luma_only=False),
         "HWC"),
    Case("uint16", lambda: [photo("camera.png", 4)[..., None].astype(np.uint16)],
         lambda m, x: m.fn.clahe(x, tiles_x=4, tiles_y=4, clip_limit=2.0), "HWC", error=True),
    Case("four_channels", lambda: [np.zeros((40, 50, 4), np.uint8)],
         lambda m, x: m.fn.clahe(x, tiles_x=4, tiles_y=4, clip_limit=2.0), "HWC", error=True),
]

def _hw_u8() -> list[np.ndarray]:
    return [photo("camera.png", 3), np.ascontiguousarray(photo("camera.png", 5)[:71, :90])]


TENSOR_RESIZE: list[Case] = [
    Case("signal_scale", lambda: [signal(1000), signal(333)], lambda m, x: m.fn.tensor_resize(x, scales=[0.37]),
         atol=1e-3),
    Case("signal_up_cubic", lambda: [signal(100), signal(57)],
         lambda m, x: m.fn.tensor_resize(x, scales=[2.5], interp_type=m.types.INTERP_CUBIC), atol=1e-3),
    Case("hw_sizes", _hw_u8, lambda m, x: m.fn.tensor_resize(x, sizes=[50, 60]), "HW", atol=1),
    Case("hw_size_keep_aspect", _hw_u8, lambda m, x: m.fn.tensor_resize(x, sizes=[40, 0]), "HW", atol=1),
    Case("hwc_axes", _images, lambda m, x: m.fn.tensor_resize(x, sizes=[31, 77], axes=[0, 1]), "HWC", atol=1),
    Case("hwc_axis_names", _images, lambda m, x: m.fn.tensor_resize(x, scales=[0.6], axis_names="W"), "HWC", atol=1),
    Case("hw_not_larger", _hw_u8, lambda m, x: m.fn.tensor_resize(x, sizes=[60, 60], mode="not_larger"), "HW",
         atol=1),
    Case("hw_not_smaller_max", _hw_u8, lambda m, x: m.fn.tensor_resize(x, sizes=[60, 60], mode="not_smaller",
                                                                       max_size=[100, 80]), "HW", atol=1),
    Case("volume_float", lambda: [volume().astype(np.float32)], lambda m, x: m.fn.tensor_resize(
        x, sizes=[20, 30, 25], axes=[0, 1, 2]), "DHWC", atol=5e-3),
    Case("volume_int16", lambda: [volume()], lambda m, x: m.fn.tensor_resize(x, scales=[0.5, 0.75, 1.3],
                                                                             axes=[0, 1, 2]), "DHWC", atol=1),
    Case("ceil_align0", _hw_u8, lambda m, x: m.fn.tensor_resize(x, scales=[0.33, 0.71], size_rounding="ceil",
                                                                alignment=[0.0, 0.0]), "HW", atol=1),
    Case("truncate_align1", _hw_u8, lambda m, x: m.fn.tensor_resize(x, scales=[0.33, 0.71], size_rounding="truncate",
                                                                    alignment=1.0), "HW", atol=1),
    Case("no_subpixel", _hw_u8, lambda m, x: m.fn.tensor_resize(x, scales=[0.33, 0.71], subpixel_scale=False),
         "HW", atol=1),
    Case("roi", _hw_u8, lambda m, x: m.fn.tensor_resize(x, sizes=[40, 40], roi_start=[10, 80], roi_end=[60, 20]),
         "HW", atol=1),
    Case("roi_relative", _hw_u8, lambda m, x: m.fn.tensor_resize(x, sizes=[33, 44], roi_start=[0.1, 0.2],
                                                                 roi_end=[0.9, 0.6], roi_relative=True), "HW", atol=1),
    Case("nn", _hw_u8, lambda m, x: m.fn.tensor_resize(x, sizes=[121, 41], interp_type=m.types.INTERP_NN), "HW"),
    Case("lanczos_float_out", _hw_u8, lambda m, x: m.fn.tensor_resize(x, sizes=[50, 70], dtype=m.types.FLOAT,
                                                                      interp_type=m.types.INTERP_LANCZOS3), "HW",
         atol=5e-3),
    Case("per_sample_sizes", _hw_u8, lambda m, x, s: m.fn.tensor_resize(x, sizes=s), "HW",
         extra=lambda: {"s": _f32([[30, 20], [90, 45]])}, atol=1),
]

#: Every operator's cases, by the name of its reference file.
CASES: dict[str, list[Case]] = {
    "constant": CONSTANT, "full": FULL, "full_like": FULL_LIKE, "zeros_ones": ZEROS_ONES, "copy": COPY,
    "cast_like": CAST_LIKE, "reinterpret": REINTERPRET, "get_property": GET_PROPERTY,
    "decoders_numpy": DECODERS_NUMPY, "water": WATER, "sphere": SPHERE, "power_spectrum": POWER_SPECTRUM,
    "debayer": DEBAYER, "clahe": CLAHE, "tensor_resize": TENSOR_RESIZE,
}


# --- the streamflow side (used by the tests; the recorder never calls these) ---------------------

REFERENCE = DATA / "dali" / "breadth"


@cache
def reference(op: str) -> dict[str, np.ndarray]:
    """DALI's recorded outputs of ``op``'s cases (see ``record_breadth.py``)."""
    with np.load(REFERENCE / f"{op}.npz") as data:
        return {k: data[k] for k in data.files}


def _with_source(case: Case) -> Case:
    """``case`` with its input as one more (last) output: a streamflow pipeline needs a source even
    when its outputs (``fn.zeros``, ``fn.constant``) do not read one."""

    def build(m: Any, x: Any, **extra: Any) -> Any:
        out = case.build(m, x, **extra)
        return (*(out if isinstance(out, tuple) else (out,)), x)

    return dataclasses.replace(case, build=build)


def check(op: str, case: Case, error_names: tuple[str, ...] = ()) -> None:
    """Run ``case`` on streamflow and compare with DALI's outputs: shapes and dtypes equal, values
    within ``case.atol``; a case DALI refused must fail naming the operator (or one of ``error_names``)."""
    import pytest

    ref = reference(op)
    case = _with_source(case)
    if bool(ref[f"{case.name}/error"]):
        assert case.error
        with pytest.raises(Exception) as info:
            run_streamflow(case)
        names = error_names or (op,)
        assert any(n in str(info.value) for n in names), f"{case.name}: the error should name the operator: {info.value}"
        return
    assert_matches(op, case, run_streamflow(case)[:-1], ref)


