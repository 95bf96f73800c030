"""Tests of the C image kernels (streamflow.ops.kernels) against numpy references."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reference as ref

from streamflow.ops import kernels as K
from streamflow.types import InterpType

pytestmark = pytest.mark.skipif(not K.native_available(), reason="C extension not built")

PHOTOS = Path(__file__).resolve().parents[1] / "data" / "photos"

INTERPS = {
    ref.NN: InterpType.INTERP_NN,
    ref.LINEAR: InterpType.INTERP_LINEAR,
    ref.CUBIC: InterpType.INTERP_CUBIC,
    ref.LANCZOS3: InterpType.INTERP_LANCZOS3,
    ref.GAUSSIAN: InterpType.INTERP_GAUSSIAN,
}


def _img(rng: np.random.Generator, h: int, w: int, c: int | None, dtype=np.uint8) -> np.ndarray:
    shape = (h, w) if c is None else (h, w, c)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.random(shape, dtype=np.float32)


def _photo(name: str) -> np.ndarray:
    from PIL import Image

    with Image.open(PHOTOS / name) as im:
        return np.asarray(im.convert("RGB"))


def _check_u8(got: np.ndarray, want: np.ndarray) -> None:
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1, (
        f"max diff {diff.max()} at {np.unravel_index(diff.argmax(), diff.shape)}"
    )


# --------------------------------------------------------------------------- resample


CASES = [
    # (in_h, in_w, out_h, out_w, channels)
    (37, 53, 17, 29, 3),  # downscale, odd sizes
    (20, 15, 47, 33, 3),  # upscale
    (31, 40, 64, 13, 1),  # mixed: up on y, down on x
    (9, 70, 9, 70, 4),  # identity geometry
    (50, 21, 13, 42, None),  # 2-D (HW)
    (16, 16, 5, 7, 2),  # two channels (generic path)
    (12, 18, 30, 4, 5),  # five channels (generic path)
]


@pytest.mark.parametrize("kind", list(INTERPS))
@pytest.mark.parametrize("case", CASES)
def test_resample_matches_reference_u8(kind: str, case: tuple) -> None:
    rng = np.random.default_rng(hash((kind, case)) & 0xFFFF)
    ih, iw, oh, ow, c = case
    src = _img(rng, ih, iw, c)
    want = ref.resample_ref(src, (oh, ow), interp=kind)
    for order in ("vh", "hv"):
        got = K.resample(src, (oh, ow), interp=INTERPS[kind], order=order)
        assert got.shape == want.shape and got.dtype == np.uint8
        _check_u8(got, want)


@pytest.mark.parametrize("kind", list(INTERPS))
@pytest.mark.parametrize("antialias", [True, False])
def test_resample_matches_reference_f32(kind: str, antialias: bool) -> None:
    rng = np.random.default_rng(7)
    for ih, iw, oh, ow, c in CASES[:5]:
        src = _img(rng, ih, iw, c, np.float32)
        want = ref.resample_ref(
            src, (oh, ow), interp=kind, antialias=antialias, out_dtype=np.float32
        )
        for order in ("vh", "hv"):
            got = K.resample(
                src, (oh, ow), interp=INTERPS[kind], antialias=antialias,
                out_dtype=np.float32, order=order,
            )  # fmt: skip
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)


def test_resample_u8_to_f32_unrounded() -> None:
    rng = np.random.default_rng(3)
    src = _img(rng, 41, 58, 3)
    want = ref.resample_ref(src, (23, 31), out_dtype=np.float32)
    got = K.resample(src, (23, 31), out_dtype=np.float32)
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=2e-6)
    assert np.any(got != np.round(got))


@pytest.mark.parametrize("kind", list(INTERPS))
def test_resample_roi_and_flip(kind: str) -> None:
    rng = np.random.default_rng(11)
    src = _img(rng, 40, 50, 3)
    rois = [
        (5.5, 3.25, 30.0, 41.75),  # inner fractional roi
        (30.0, 3.0, 5.0, 45.0),  # flipped vertically
        (2.0, 48.0, 38.0, 1.5),  # flipped horizontally
        (-4.0, -6.0, 44.0, 57.0),  # extends past the image: clamped edges
    ]
    for roi in rois:
        for size in ((17, 23), (61, 70)):
            want = ref.resample_ref(src, size, interp=kind, roi=roi)
            got = K.resample(src, size, interp=INTERPS[kind], roi=roi)
            _check_u8(got, want)


def test_flipped_roi_is_mirror() -> None:
    rng = np.random.default_rng(5)
    src = _img(rng, 30, 44, 3)
    a = K.resample(src, (30, 44), roi=(0, 44, 30, 0), antialias=False, out_dtype=np.float32)
    np.testing.assert_allclose(a, src[:, ::-1].astype(np.float32), atol=1e-4)
    b = K.resample(src, (15, 22), roi=(30, 0, 0, 44))
    c = K.resample(src[::-1].copy(), (15, 22))
    _check_u8(b, c)


@pytest.mark.parametrize("case", [(37, 53, 71, 22), (100, 80, 33, 47), (12, 12, 12, 12)])
def test_linear_no_antialias_is_bilinear(case: tuple) -> None:
    rng = np.random.default_rng(1)
    ih, iw, oh, ow = case
    src = _img(rng, ih, iw, 3)
    want = ref.bilinear_ref(src, (oh, ow), coord_dtype=np.float32)
    got_f = K.resample(src, (oh, ow), antialias=False, out_dtype=np.float32)
    np.testing.assert_allclose(got_f, want, atol=1e-4, rtol=0)
    # the same formula with float64 coordinates: only float32 coordinate rounding apart
    np.testing.assert_allclose(got_f, ref.bilinear_ref(src, (oh, ow)), atol=2e-3, rtol=0)
    got_u8 = K.resample(src, (oh, ow), antialias=False)
    want_u8 = np.rint(np.clip(want, 0, 255))  # halves to even, like DALI's resize
    # Equal except where the value sits within float32 rounding of a .5 boundary.
    frac = np.abs(want - np.floor(want) - 0.5)
    mismatch = (got_u8 != want_u8) & (frac > 1e-4)
    assert not mismatch.any()
    assert (got_u8 != want_u8).mean() < 1e-3


def test_upscale_antialias_flag_irrelevant() -> None:
    rng = np.random.default_rng(2)
    src = _img(rng, 20, 25, 3)
    for kind in INTERPS.values():
        a = K.resample(src, (41, 60), interp=kind, antialias=True)
        b = K.resample(src, (41, 60), interp=kind, antialias=False)
        np.testing.assert_array_equal(a, b)


def test_resample_u8_rounds_half_to_even() -> None:
    # 2x downscale of two columns averages them: x.5 values round to even (DALI 2.4)
    src = np.array([[[0], [1], [2], [3], [4], [5], [6], [7]]], np.uint8).reshape(1, 8, 1)
    src = np.repeat(src, 2, axis=0)
    got = K.resample(src, (2, 4), antialias=False)
    np.testing.assert_array_equal(got[0, :, 0], [0, 2, 4, 6])  # 0.5, 2.5, 4.5, 6.5


def test_nn_rows_accumulate_like_dali() -> None:
    # (86 + 0.5) * 300 / 173 == 150 exactly, but DALI's float32 row stepping gives 149.99..
    src = np.arange(300, dtype=np.float32).reshape(300, 1)
    got = K.resample(src, (173, 1), interp="nn", out_dtype=np.float32)
    assert got[86, 0] == 149.0
    cols = K.resample(src.T.copy(), (1, 173), interp="nn", out_dtype=np.float32)
    assert cols[0, 86] == 150.0  # columns use the closed form


def test_nn_picks_floor_center() -> None:
    src = np.arange(10, dtype=np.uint8).reshape(1, 10)
    got = K.resample(src, (1, 4), interp="nn")
    # floor((d + 0.5) * 10 / 4) = 1, 3, 6, 8
    np.testing.assert_array_equal(got[0], [1, 3, 6, 8])
    got = K.resample(src, (1, 25), interp="nn")
    np.testing.assert_array_equal(got[0], np.floor((np.arange(25) + 0.5) * 10 / 25))


@pytest.mark.parametrize("kind", list(INTERPS))
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_window_equals_slice(kind: str, dtype) -> None:
    rng = np.random.default_rng(9)
    for ih, iw, oh, ow, c in [(500, 640, 256, 256, 3), (33, 47, 70, 90, 1), (60, 45, 31, 80, 4)]:
        src = _img(rng, ih, iw, c)
        full = K.resample(src, (oh, ow), interp=INTERPS[kind], out_dtype=dtype)
        for win in [(16, 16, 224, 224), (0, 0, 1, 1), (5, 9, 20, 3), (oh - 7, ow - 11, 7, 11)]:
            y0, x0, h, w = win
            if y0 + h > oh or x0 + w > ow:
                continue
            got = K.resample(src, (oh, ow), window=win, interp=INTERPS[kind], out_dtype=dtype)
            np.testing.assert_array_equal(got, full[y0 : y0 + h, x0 : x0 + w])


def test_strided_input_and_output() -> None:
    rng = np.random.default_rng(4)
    big = _img(rng, 60, 80, 3)
    view = big[5:50, 7:70]  # row-strided view: used without a copy
    want = K.resample(np.ascontiguousarray(view), (20, 31))
    np.testing.assert_array_equal(K.resample(view, (20, 31)), want)
    np.testing.assert_array_equal(
        K.resample(big[::2, ::3], (9, 9)), K.resample(np.ascontiguousarray(big[::2, ::3]), (9, 9))
    )
    out_big = np.zeros((30, 40, 3), np.uint8)
    K.resample(view, (20, 31), out=out_big[3:23, 4:35])
    np.testing.assert_array_equal(out_big[3:23, 4:35], want)
    assert out_big[:3].sum() == 0 and out_big[:, :4].sum() == 0


@pytest.mark.parametrize(
    "name",
    [
        "astronaut.png",
        "chelsea.png",
        "coffee.png",
        "motorcycle_left.png",
        "rocket.jpg",
        "retina.jpg",
    ],
)
def test_linear_antialias_vs_pillow(name: str) -> None:
    from PIL import Image

    img = _photo(name)
    h, w = img.shape[:2]
    for oh, ow in [(256, 256), (int(h * 0.45), int(w * 0.45)), (h // 3, w // 4)]:
        want = np.asarray(Image.fromarray(img).resize((ow, oh), Image.BILINEAR))
        got = K.resample(img, (oh, ow))
        diff = np.abs(got.astype(int) - want.astype(int))
        assert diff.mean() < 0.5, (name, (oh, ow), diff.mean())
        # Inside, the only difference is Pillow's uint8 rounding between its two
        # passes (measured max 1). On the outermost rows/columns Pillow drops the
        # taps that fall outside the image and renormalises, while DALI (and we)
        # clamp them to the edge pixel: up to ~13 levels apart at sharp edges.
        assert diff[1:-1, 1:-1].max() <= 2, (name, (oh, ow), diff[1:-1, 1:-1].max())
        assert diff.max() <= 16, (name, (oh, ow), diff.max())


def test_threads_release_gil() -> None:
    rng = np.random.default_rng(0)
    src = _img(rng, 300, 400, 3)
    want = K.resample(src, (128, 128))
    results: list[bool] = []

    def work() -> None:
        for _ in range(5):
            results.append(np.array_equal(K.resample(src, (128, 128)), want))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 20


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"src": np.zeros((4, 4, 3, 1), np.uint8)}, "HWC"),
        ({"src": np.zeros(5, np.uint8)}, "HWC"),
        ({"src": np.zeros((4, 4, 3), np.int16)}, "dtype"),
        ({"src": np.zeros((0, 4, 3), np.uint8)}, "empty"),
        ({"out_size": (0, 5)}, "positive"),
        ({"window": (0, 0, 9, 9)}, "outside"),
        ({"window": (-1, 0, 2, 2)}, "outside"),
        ({"window": (0, 0, 0, 2)}, "positive size"),
        ({"roi": (1, 1, 1, 3)}, "extent"),
        ({"out_dtype": np.int32}, "out_dtype"),
        ({"interp": "bogus"}, "interpolation"),
        ({"out": np.zeros((8, 8, 3), np.float32)}, "dtype"),
        ({"out": np.zeros((7, 8, 3), np.uint8)}, "shape"),
    ],
)
def test_resample_errors(kwargs: dict, match: str) -> None:
    args = {"src": np.zeros((10, 10, 3), np.uint8), "out_size": (8, 8)}
    args.update(kwargs)
    src = args.pop("src")
    out_size = args.pop("out_size")
    with pytest.raises(ValueError, match=match):
        K.resample(src, out_size, **args)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"src": np.zeros((4, 4, 3, 1), np.uint8)}, "HWC"),
        ({"src": np.zeros((4, 4, 3), np.int32)}, "dtype"),
        ({"mean": [1, 2]}, "mean"),
        ({"std": [1, 0, 1]}, "non-zero"),
        ({"layout": "NHWC"}, "layout"),
        ({"window": (0, 0, 0, 3)}, "positive size"),
        ({"out_dtype": np.int16}, "out_dtype"),
        ({"fill_values": [1, 2]}, "fill_values"),
        ({"out": np.zeros((3, 10, 9), np.float32)}, "shape"),
        ({"out": np.zeros((10, 10, 3), np.float32).transpose(2, 0, 1)}, "contiguous"),
    ],
)
def test_cmn_errors(kwargs: dict, match: str) -> None:
    args = {"src": np.zeros((10, 10, 3), np.uint8)}
    args.update(kwargs)
    src = args.pop("src")
    with pytest.raises(ValueError, match=match):
        K.crop_mirror_normalize(src, **args)


# --------------------------------------------------------------------------- CMN

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_cmn_matches_numpy(mirror: bool, layout: str, dtype) -> None:
    rng = np.random.default_rng(12)
    src = _img(rng, 37, 45, 3, dtype)
    if dtype == np.float32:
        src = src * 255
    for win in [(0, 0, 37, 45), (5, 7, 20, 31), (3, 0, 1, 45)]:
        want = ref.cmn_ref(
            src, win, mirror=mirror, mean=MEAN, std=STD, scale=1.5, shift=0.25, layout=layout
        )
        got = K.crop_mirror_normalize(
            src, window=win, mirror=mirror, mean=MEAN, std=STD, scale=1.5, shift=0.25, layout=layout
        )
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_cmn_defaults_whole_image_chw() -> None:
    rng = np.random.default_rng(13)
    src = _img(rng, 11, 13, 3)
    got = K.crop_mirror_normalize(src)
    np.testing.assert_array_equal(got, src.transpose(2, 0, 1).astype(np.float32))


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_cmn_pad_output_and_fill_outside(layout: str) -> None:
    rng = np.random.default_rng(14)
    src = _img(rng, 20, 30, 3)
    win = (-3, 25, 10, 12)  # leaves the image at the top and the right
    for mirror in (False, True):
        for fill in ([7.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]):
            want = ref.cmn_ref(
                src,
                win,
                mirror=mirror,
                mean=MEAN,
                std=STD,
                layout=layout,
                pad_channels=1,
                fill=fill,
            )
            got = K.crop_mirror_normalize(
                src,
                window=win,
                mirror=mirror,
                mean=MEAN,
                std=STD,
                layout=layout,
                pad_output=True,
                fill_values=fill,
            )
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got = K.crop_mirror_normalize(src, pad_output=True)
    assert got.shape == (4, 20, 30) and not got[3].any()


def test_cmn_window_fully_outside_is_fill() -> None:
    src = np.full((5, 5, 3), 200, np.uint8)
    got = K.crop_mirror_normalize(src, window=(10, 10, 2, 3), fill_values=[9.0])
    assert (got == 9.0).all()


def test_cmn_out_dtypes_and_out_param() -> None:
    rng = np.random.default_rng(15)
    src = _img(rng, 16, 18, 3)
    want = ref.cmn_ref(src, (0, 0, 16, 18), mirror=True, mean=MEAN, std=STD)
    f16 = K.crop_mirror_normalize(src, mirror=True, mean=MEAN, std=STD, out_dtype=np.float16)
    np.testing.assert_array_equal(f16, want.astype(np.float16))
    u8 = K.crop_mirror_normalize(
        src, mirror=True, mean=[10, 20, 30], std=[0.5, 1, 2], out_dtype=np.uint8
    )
    w8 = ref.cmn_ref(src, (0, 0, 16, 18), mirror=True, mean=[10, 20, 30], std=[0.5, 1, 2])
    np.testing.assert_array_equal(u8, np.floor(np.clip(w8, 0, 255) + 0.5).astype(np.uint8))
    batch = np.zeros((2, 3, 16, 18), np.float32)
    res = K.crop_mirror_normalize(src, mirror=True, mean=MEAN, std=STD, out=batch[1])
    assert res is batch[1] or np.shares_memory(res, batch)
    np.testing.assert_allclose(batch[1], want, rtol=1e-5, atol=1e-5)
    assert not batch[0].any()


def test_cmn_other_channel_counts() -> None:
    rng = np.random.default_rng(16)
    for c in (None, 2, 4, 5):
        src = _img(rng, 9, 11, c)
        n = 1 if c is None else c
        mean = list(range(n))
        std = [1.0 + i for i in range(n)]
        want = ref.cmn_ref(src, (1, -2, 6, 12), mirror=True, mean=mean, std=std)
        got = K.crop_mirror_normalize(src, window=(1, -2, 6, 12), mirror=True, mean=mean, std=std)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_fused_resize_crop_cmn_pipeline() -> None:
    """Resize 256 + centre crop 224 via window, then CMN: equals crop of the full resize."""
    img = _photo("chelsea.png")
    win = K.resampled_size_window((256, 256), (224, 224))
    assert win == (16, 16, 224, 224)
    crop = K.resample(img, (256, 256), window=win)
    full = K.resample(img, (256, 256))
    np.testing.assert_array_equal(crop, full[16:240, 16:240])
    got = K.crop_mirror_normalize(crop, mirror=True, mean=MEAN, std=STD)
    want = ref.cmn_ref(full, win, mirror=True, mean=MEAN, std=STD)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- resample + normalize


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


@pytest.mark.parametrize("interp", ["nn", "linear", "cubic", "lanczos3", "gaussian"])
@pytest.mark.parametrize("resize_dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_resample_normalize_bit_identical_to_the_pair(interp: str, resize_dtype, layout: str, channels: int) -> None:
    """One pass gives exactly resample() then crop_mirror_normalize(), bit for bit."""
    rng = np.random.default_rng(channels)
    sources = [
        _img(rng, 53, 71, channels),
        # float input past [0, 255], with NaN and inf: exercises the uint8 clipping
        (rng.standard_normal((29, 22, channels)) * 200).astype(np.float32),
    ]
    sources[1][3, 4] = np.nan
    sources[1][5, 6] = np.inf
    mean, std = [10.0, 120.5, 3.0, 250.0][:channels], [58.4, 1.0, 0.3, 7.0][:channels]
    for src in sources:
        for size, window in (((224, 224), None), ((17, 90), None), ((40, 60), (5, 7, 30, 41))):
            for mirror in (False, True):
                want = K.crop_mirror_normalize(
                    K.resample(src, size, window=window, interp=interp, out_dtype=resize_dtype),
                    mirror=mirror, mean=mean, std=std, scale=1.5, shift=-0.25, layout=layout,
                )  # fmt: skip
                got = K.resample_normalize(
                    src, size, window=window, interp=interp, resize_dtype=resize_dtype,
                    mirror=mirror, mean=mean, std=std, scale=1.5, shift=-0.25, layout=layout,
                )  # fmt: skip
                assert got.shape == want.shape and got.dtype == np.float32
                assert np.array_equal(_bits(got), _bits(want)), (src.dtype, size, window, mirror)


def test_resample_normalize_writes_into_out_and_matches_roi() -> None:
    img = _photo("chelsea.png")
    batch = np.full((2, 3, 24, 30), -1.0, np.float32)
    got = K.resample_normalize(img, (24, 30), roi=(40.5, 300.0, 10.0, 20.0), mean=MEAN, std=STD, out=batch[1])
    assert got is batch[1] or np.shares_memory(got, batch)
    want = K.crop_mirror_normalize(K.resample(img, (24, 30), roi=(40.5, 300.0, 10.0, 20.0)), mean=MEAN, std=STD)
    assert np.array_equal(batch[1], want)
    assert (batch[0] == -1.0).all()  # the other row is untouched


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"resize_dtype": np.int16}, "resize_dtype"),
        ({"layout": "NCHW"}, "layout"),
        ({"mean": [1, 2]}, "mean"),
        ({"std": [1, 0, 1]}, "non-zero"),
        ({"window": (0, 0, 9, 9)}, "outside"),
        ({"out": np.zeros((3, 8, 8), np.float64)}, "float32"),
        ({"out": np.zeros((8, 8, 3), np.float32)}, "shape"),
        ({"out": np.zeros((3, 8, 16), np.float32)[:, :, ::2]}, "C-contiguous"),
    ],
)
def test_resample_normalize_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        K.resample_normalize(np.zeros((10, 10, 3), np.uint8), (8, 8), **kwargs)
