"""ImageDecoder (CPU backend of nvImageCodec) against Pillow, on real files.

Data: tests/data/jpeg-quirks (Pillow's test suite) and tests/data/photos
(scikit-image). Small derived images (oriented, re-encoded) are made in memory.
"""

from __future__ import annotations

import io
import random
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from streamflow.codecs import ImageDecoder, detect_format, jpeg_exif_orientation, rgb_to_ycbcr
from streamflow.errors import DecodeError
from streamflow.types import Device, ImageType

Image = pytest.importorskip("PIL.Image")
ImageOps = pytest.importorskip("PIL.ImageOps")

DATA = Path(__file__).resolve().parent.parent / "data"
QUIRKS = DATA / "jpeg-quirks"
PHOTOS = DATA / "photos"

# Valid quirk files and the largest |difference| allowed against Pillow's
# exif_transpose(...).convert("RGB"). Both use libjpeg(-turbo) with the same
# IDCT and upsampling, so ordinary YCbCr JPEGs match exactly. CMYK: both
# decode the same CMYK samples, but Pillow converts CMYK->RGB with its own
# integer formula while nvImageCodec rounds differently: measured max 1
# (on ~29% of the pixels), mean 0.29.
VALID_QUIRKS = {
    "flower2.jpg": 0,
    "hopper.jpg": 0,
    "hopper_16bit_qtables.jpg": 0,
    "hopper_gray.jpg": 0,
    "hopper_orientation_3.jpg": 0,
    "hopper_orientation_6.jpg": 0,
    "pil_sample_rgb.jpg": 0,
    "pil_sample_cmyk.jpg": 1,
    # nvImageCodec's parser rejects the 5 junk bytes before the DQT marker;
    # the Pillow fallback (libjpeg skips them) decodes it.
    "junk_jpeg_header.jpg": 0,
}


@pytest.fixture(scope="module")
def dec() -> ImageDecoder:
    return ImageDecoder()


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _pillow_rgb(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(ImageOps.exif_transpose(im).convert("RGB"))


def _photo(w: int = 161, h: int = 97) -> Image.Image:
    """A non-square, odd-sized crop of a real photo."""
    with Image.open(PHOTOS / "chelsea.png") as im:
        return im.convert("RGB").crop((37, 21, 37 + w, 21 + h))


def _jpeg(img: Image.Image, orientation: int | None = None, **kw) -> bytes:
    bio = io.BytesIO()
    if orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = orientation
        kw["exif"] = exif
    img.save(bio, "JPEG", quality=kw.pop("quality", 90), **kw)
    return bio.getvalue()


def _encode(img: Image.Image, fmt: str, **kw) -> bytes:
    bio = io.BytesIO()
    img.save(bio, fmt, **kw)
    return bio.getvalue()


# ------------------------------------------------------------------ quirks


@pytest.mark.parametrize("name", sorted(VALID_QUIRKS))
def test_quirk_files_decode_like_pillow(dec: ImageDecoder, name: str) -> None:
    data = _read(QUIRKS / name)
    (out,) = dec.decode_batch([data], [name])
    assert isinstance(out, np.ndarray), out
    ref = _pillow_rgb(data)
    assert out.dtype == np.uint8 and out.shape == ref.shape
    diff = np.abs(out.astype(np.int16) - ref.astype(np.int16))
    assert diff.max() <= VALID_QUIRKS[name], (name, diff.max())
    assert dec.peek_shape(data, name) == out.shape


@pytest.mark.parametrize(
    "name, words",
    [
        # nvImageCodec returns None; Pillow raises "image file is truncated" too.
        ("truncated_jpeg.jpg", "truncated"),
    ],
)
def test_broken_quirk_files_give_decode_error(dec: ImageDecoder, name: str, words: str) -> None:
    src = str(QUIRKS / name)
    (out,) = dec.decode_batch([_read(QUIRKS / name)], [src])
    assert isinstance(out, DecodeError)
    assert out.source == src and name in str(out)
    assert words in out.reason and "pillow" in out.reason


def test_without_fallback_decoders_a_bad_header_names_the_extra(monkeypatch) -> None:
    from streamflow.codecs import fallback

    monkeypatch.setattr(fallback, "_MODULES", {"pillow": None, "tifffile": None})
    src = str(QUIRKS / "junk_jpeg_header.jpg")
    (out,) = ImageDecoder().decode_batch([_read(QUIRKS / "junk_jpeg_header.jpg")], [src])
    assert isinstance(out, DecodeError) and out.source == src
    assert "header" in out.reason and "streamflow[decoders]" in out.reason


def test_bad_inputs_never_raise_and_keep_order(dec: ImageDecoder) -> None:
    good = _read(QUIRKS / "hopper.jpg")
    rng = np.random.default_rng(0)
    data = [
        b"",
        rng.integers(0, 256, 1000, dtype=np.uint8).tobytes(),
        good,
        b"\xff\xd8\xff\xe0" + rng.integers(0, 256, 500, dtype=np.uint8).tobytes(),
        good[: len(good) // 2],
        b"GIF89a" + b"\0" * 20,
        good,
    ]
    srcs = [f"s{i}" for i in range(len(data))]
    out = dec.decode_batch(data, srcs)
    assert len(out) == len(data)
    for i, r in enumerate(out):
        if data[i] is good:
            assert isinstance(r, np.ndarray) and r.shape == (128, 128, 3)
        else:
            assert isinstance(r, DecodeError) and r.source == srcs[i], (i, r)
    assert "empty" in out[0].reason
    assert "not a recognised image format" in out[1].reason and "first bytes" in out[1].reason
    assert "JPEG" in out[3].reason
    assert "truncated" in out[4].reason
    assert "GIF" in out[5].reason


def test_random_bytes_with_image_magic(dec: ImageDecoder) -> None:
    rng = random.Random(1)
    magics = [b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"BM", b"II*\x00", b"P6\n"]
    data = [
        m + bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
        for m in magics
        for _ in range(4)
    ]
    out = dec.decode_batch(data, [f"r{i}" for i in range(len(data))])
    assert all(isinstance(r, DecodeError) for r in out), out


def test_peek_shape_bad_header_raises(dec: ImageDecoder) -> None:
    with pytest.raises(DecodeError) as ei:
        dec.peek_shape(_read(DATA / "pillow-corpus" / "broken.png"), "broken.png")
    assert ei.value.source == "broken.png"
    with pytest.raises(DecodeError):
        dec.peek_shape(b"", "empty")


# ------------------------------------------------------------- orientation


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_matches_pillow(dec: ImageDecoder, orientation: int) -> None:
    data = _jpeg(_photo(), orientation)
    assert jpeg_exif_orientation(data) == orientation
    out = dec.decode(data, "o")
    ref = _pillow_rgb(data)
    assert out.shape == ref.shape and np.array_equal(out, ref)
    assert dec.peek_shape(data) == out.shape
    raw = ImageDecoder(adjust_orientation=False).decode(data, "o")
    assert raw.shape == (97, 161, 3)


def test_exif_orientation_parser_edge_cases() -> None:
    assert jpeg_exif_orientation(_jpeg(_photo())) == 1
    assert jpeg_exif_orientation(b"\xff\xd8") == 1
    assert jpeg_exif_orientation(b"\xff\xd8\xff\xe1\x00\x08Exif\x00\x00") == 1
    assert jpeg_exif_orientation(_read(QUIRKS / "hopper_orientation_6.jpg")) == 6
    assert jpeg_exif_orientation(_read(QUIRKS / "hopper_orientation_3.jpg")) == 3


# ----------------------------------------------------------------- formats


@pytest.mark.parametrize(
    "fmt, kw",
    [("PNG", {}), ("BMP", {}), ("TIFF", {}), ("WEBP", {"lossless": True}), ("PPM", {})],
)
def test_lossless_formats_decode_exactly(dec: ImageDecoder, fmt: str, kw: dict) -> None:
    img = _photo()
    data = _encode(img, fmt, **kw)
    out = dec.decode(data, fmt)
    assert np.array_equal(out, np.asarray(img))
    assert dec.peek_shape(data) == (97, 161, 3)


def test_real_png_photo(dec: ImageDecoder) -> None:
    data = _read(PHOTOS / "camera.png")  # 8-bit gray PNG
    out = dec.decode(data, "camera.png")
    with Image.open(PHOTOS / "camera.png") as im:
        ref = np.asarray(im.convert("RGB"))
    assert np.array_equal(out, ref)


def test_detect_format() -> None:
    assert detect_format(_read(QUIRKS / "hopper.jpg")[:16]) == "jpeg"
    assert detect_format(_read(PHOTOS / "coffee.png")[:16]) == "png"
    assert detect_format(b"hello") is None


# ------------------------------------------------------------ output types


def test_bgr_is_reversed_rgb(dec: ImageDecoder) -> None:
    for data in (_read(QUIRKS / "flower2.jpg"), _encode(_photo(), "PNG")):
        rgb = dec.decode(data)
        bgr = ImageDecoder(output_type=ImageType.BGR).decode(data)
        assert np.array_equal(bgr, rgb[..., ::-1])


def test_gray_decodes_luma_directly() -> None:
    gray_dec = ImageDecoder(output_type="gray")
    data = _read(QUIRKS / "flower2.jpg")
    out = gray_dec.decode(data)
    assert out.shape == (225, 300, 1) and out.dtype == np.uint8
    # Like DALI, gray comes from the decoder itself: for JPEG it is the Y
    # plane, which is what libjpeg gives Pillow in draft("L") mode (exact);
    # converting the decoded RGB (Pillow's convert("L")) differs by rounding
    # and, where YCbCr->RGB saturated, by more (flower2: max 2 on 1 pixel;
    # hopper: max 14 on 0.7% of pixels), so only the mean is compared there.
    with Image.open(io.BytesIO(data)) as im:
        im.draft("L", im.size)
        assert np.array_equal(out[..., 0], np.asarray(im.convert("L")))
    with Image.open(io.BytesIO(data)) as im:
        conv = np.asarray(im.convert("L")).astype(np.int16)
    assert np.abs(out[..., 0].astype(np.int16) - conv).mean() < 0.01
    # gray JPEG, oriented JPEG
    assert gray_dec.decode(_read(QUIRKS / "hopper_gray.jpg")).shape == (128, 128, 1)
    o6 = _jpeg(_photo(), 6)
    assert gray_dec.decode(o6).shape == (161, 97, 1) == gray_dec.peek_shape(o6)


def test_ycbcr_matches_dali_bt601() -> None:
    px = np.array(
        [[[255, 255, 255], [0, 0, 0], [255, 0, 0], [0, 255, 0], [0, 0, 255], [128, 128, 128]]],
        dtype=np.uint8,
    )
    ycc = rgb_to_ycbcr(px)
    expected = [  # DALI 2.4's decoders.image(output_type=YCbCr) of these pixels (a PNG)
        [235, 128, 128],
        [16, 128, 128],
        [81, 90, 240],
        [145, 54, 34],
        [41, 240, 110],
        [126, 128, 128],
    ]
    assert ycc[0].tolist() == expected
    data = _read(QUIRKS / "hopper.jpg")
    rgb = ImageDecoder().decode(data)
    out = ImageDecoder(output_type=ImageType.YCbCr).decode(data)
    assert np.array_equal(out, rgb_to_ycbcr(rgb))


# ----------------------------------------------------------------- regions


@pytest.mark.parametrize("orientation", [1, 3, 6, 8])
@pytest.mark.parametrize("subsampling", ["4:2:0", "4:4:4"])
def test_regions_equal_cropped_full_decode(
    dec: ImageDecoder, orientation: int, subsampling: str
) -> None:
    data = _jpeg(_photo(), orientation, subsampling=subsampling)
    full = dec.decode(data)
    h, w = full.shape[:2]
    rng = random.Random(orientation)
    regions = []
    for _ in range(12):
        y0, x0 = rng.randrange(h), rng.randrange(w)
        regions.append((y0, x0, rng.randrange(y0 + 1, h + 1), rng.randrange(x0 + 1, w + 1)))
    regions += [(0, 0, h, w), (h - 1, w - 1, h, w), None]
    out = dec.decode_batch([data] * len(regions), ["r"] * len(regions), regions=regions)
    for reg, r in zip(regions, out):
        want = full if reg is None else full[reg[0] : reg[2], reg[1] : reg[3]]
        assert isinstance(r, np.ndarray) and np.array_equal(r, want), reg


def test_region_on_png_and_gray(dec: ImageDecoder) -> None:
    data = _encode(_photo(), "PNG")
    full = dec.decode(data)
    assert np.array_equal(dec.decode(data, region=(5, 7, 60, 100)), full[5:60, 7:100])
    g = ImageDecoder(output_type="gray")
    jpg = _read(QUIRKS / "flower2.jpg")
    assert np.array_equal(g.decode(jpg, region=(10, 20, 30, 50)), g.decode(jpg)[10:30, 20:50])


def test_region_errors(dec: ImageDecoder) -> None:
    data = _jpeg(_photo(), 6)  # oriented 161x97
    (out,) = dec.decode_batch([data], ["f.jpg"], regions=[(0, 0, 162, 10)])
    assert isinstance(out, DecodeError) and "outside" in out.reason and out.source == "f.jpg"
    (ok,) = dec.decode_batch([data], ["f.jpg"], regions=[(0, 0, 161, 97)])
    assert ok.shape == (161, 97, 3)
    for bad in [(5, 0, 5, 10), (0, 0, 10), (-1, 0, 5, 5)]:
        with pytest.raises(ValueError):
            dec.decode_batch([data], ["f"], regions=[bad])


# ---------------------------------------------------------------- limits


def _claim_size(jpeg: bytes, h: int, w: int) -> bytes:
    """Rewrite the SOF0 height/width of a baseline JPEG."""
    i = jpeg.index(b"\xff\xc0")
    return jpeg[: i + 5] + struct.pack(">HH", h, w) + jpeg[i + 9 :]


def test_max_pixels_refuses_before_decoding() -> None:
    data = _read(QUIRKS / "hopper.jpg")
    small = ImageDecoder(max_pixels=128 * 128 - 1)
    (out,) = small.decode_batch([data], ["hopper.jpg"])
    assert isinstance(out, DecodeError) and "max_pixels" in out.reason
    assert ImageDecoder(max_pixels=128 * 128).decode(data).shape == (128, 128, 3)
    bomb = _claim_size(data, 65000, 65000)  # 4.2 Gpx claimed in a 6 KiB file
    (out,) = ImageDecoder().decode_batch([bomb], ["bomb.jpg"])
    assert isinstance(out, DecodeError) and "65000x65000" in out.reason
    with pytest.raises(DecodeError):
        ImageDecoder().peek_shape(bomb, "bomb.jpg")


def test_constructor_validation() -> None:
    with pytest.raises(ValueError):
        ImageDecoder(Device.GPU)
    with pytest.raises(ValueError):
        ImageDecoder(max_pixels=0)
    with pytest.raises(ValueError):
        ImageDecoder(output_type="nope")
    with pytest.raises(ValueError):
        ImageDecoder().decode_batch([b""], [])


# ------------------------------------------------------------------ inputs


def test_numpy_bytearray_memoryview_inputs(dec: ImageDecoder) -> None:
    data = _read(QUIRKS / "hopper.jpg")
    want = dec.decode(data)
    for item in (np.frombuffer(data, np.uint8), bytearray(data), memoryview(data)):
        assert np.array_equal(dec.decode(item), want)


# ----------------------------------------------------------------- threads


def test_threads_give_same_results_as_one_thread(dec: ImageDecoder) -> None:
    files = [QUIRKS / n for n in sorted(VALID_QUIRKS)] + [QUIRKS / "truncated_jpeg.jpg"]
    data = [_read(f) for f in files] + [_jpeg(_photo(), o) for o in range(1, 9)]
    srcs = [str(i) for i in range(len(data))]
    ref = dec.decode_batch(data, srcs)

    def work(_: int) -> list:
        return [dec.decode_batch(data, srcs) for _ in range(5)]

    with ThreadPoolExecutor(4) as ex:
        runs = [r for rs in ex.map(work, range(8)) for r in rs]
    for run in runs:
        for a, b in zip(ref, run):
            if isinstance(a, DecodeError):
                assert isinstance(b, DecodeError) and a.reason == b.reason
            else:
                assert np.array_equal(a, b)


def test_import_is_light() -> None:
    code = (
        "import sys, streamflow.codecs; "
        "assert 'nvidia.nvimgcodec' not in sys.modules, 'imported eagerly'"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


def test_decoding_does_not_leak_and_arrays_outlive_their_images() -> None:
    """nvImageCodec 0.9 leaks a reference per __array_interface__ read; we give it back."""
    import gc
    import tracemalloc

    from streamflow.codecs.nvimgcodec import ImageDecoder

    data = (QUIRKS / "hopper.jpg").read_bytes()
    decoder = ImageDecoder()
    first = decoder.decode(data)
    for _ in range(200):  # warm-up: pools, caches
        decoder.decode(data)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [decoder.decode(data) for _ in range(5)]
    for _ in range(3000):
        decoder.decode(data)
    gc.collect()
    growth = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    # 3000 leaked ints would be ~94 KiB; allow the few arrays we keep plus slack.
    assert growth < 32 * 1024, f"{growth} bytes retained over 3000 decodes"
    for arr in kept:  # their Images are gone; the arrays must still hold the pixels
        assert np.array_equal(arr, first)
