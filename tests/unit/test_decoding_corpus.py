"""The image decoders on a corpus of real test images, against Pillow and DALI 2.4.

Data: ``tests/data/pillow-corpus`` (images from Pillow's own test suite, picked
for the formats and quirks nvImageCodec's CPU codecs get wrong) and
``tests/data/jpeg-quirks``; DALI 2.4's CPU decode of the same files, recorded
by ``tests/dali_reference/record_decoding.py`` into ``tests/data/dali/decoding``.

Each file is checked against Pillow (the reference for pixel values; tifffile
where Pillow reduces 16-bit colour or un-premultiplies alpha), at 8 bits and
at its native depth, for every output type; and against DALI's recorded
output, equal unless the difference is one documented in ``docs/decoding.md``
(``DALI_DIFFERS``): there streamflow follows Pillow.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from streamflow.codecs import ImageDecoder
from streamflow.codecs.convert import orient, rgb_to_ycbcr
from streamflow.errors import DecodeError
from streamflow.types import ImageType

Image = pytest.importorskip("PIL.Image")
ImageOps = pytest.importorskip("PIL.ImageOps")
tifffile = pytest.importorskip("tifffile")

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = DATA / "pillow-corpus"
QUIRKS = DATA / "jpeg-quirks"
DALI = DATA / "dali" / "decoding"


@dataclass(frozen=True)
class Case:
    """What a corpus file must give.

    decoder: who decodes it (``pipe.stats().decoded_by``), or ``""`` when no
        decoder can (a ``DecodeError`` naming the file).
    tolerance: largest |difference| from the Pillow reference, RGB uint8.
    ref: the reference decoder: ``pillow``, or ``tifffile`` (stored samples)
        where Pillow reduces 16-bit colour to 8 bits or un-premultiplies alpha.
    xmp: the file's orientation is only in XMP, which Pillow applies and
        streamflow (like DALI) does not: the reference is not transposed.
    """

    decoder: str
    tolerance: int = 0
    ref: str = "pillow"
    xmp: bool = False


NV, PIL, TIFF = "nvimgcodec", "pillow", "tifffile"

CASES: dict[str, Case] = {
    # JPEG: libjpeg-turbo in both; CMYK/YCCK converted by nvImageCodec, 1 level off Pillow's formula
    **{n: Case(NV) for n in [
        "flower2.jpg", "hopper.jpg", "hopper_16bit_qtables.jpg", "hopper_gray.jpg",
        "hopper_orientation_3.jpg", "hopper_orientation_6.jpg", "pil_sample_rgb.jpg",
        "app13-multiple.jpg", "hopper_orientation_2.jpg", "hopper_orientation_4.jpg",
        "hopper_orientation_5.jpg", "hopper_orientation_7.jpg", "hopper_orientation_8.jpg",
        "orientation_rectangle.jpg", "icc-after-SOF.jpg"]},
    "pil_sample_cmyk.jpg": Case(NV, 1),  # Adobe YCCK
    "junk_jpeg_header.jpg": Case(PIL),  # nvImageCodec rejects the junk before DQT
    "photoshop-200dpi-broken.jpg": Case(PIL),  # nvImageCodec rejects the header
    "truncated_jpeg.jpg": Case(""),
    # PNG: palettes, tRNS, 1/4/16-bit, interlaced, EXIF in ImageMagick's text chunk
    **{n: Case(NV) for n in [
        "hopper.png", "p_trns_single.png", "pil123p.png", "pil123rgba.png", "1_trns.png",
        "l_trns.png", "i_trns.png", "rgb_trns.png", "tiny.png", "p_16.png",
        "exif_imagemagick_orientation.png", "hopper_bw_500.png", "icc_profile.png"]},
    "uncompressed_la.png": Case(PIL),  # gray+alpha: nvImageCodec returns nothing
    "xmp_tags_orientation_exiftool.png": Case(NV, xmp=True),
    "broken.png": Case(""),
    # TIFF: 16-bit (big- and little-endian, 12 bits in 16), multi-page, Lab, CMYK, YCbCr JPEG,
    # planar, bilevel with all 8 orientations, 4-bit, LZMA, WebP, float, signed, palette+alpha
    **{n: Case(NV) for n in [
        "hopper.tif", "hopper_lzw.tif", "16bit.cropped.tif", "16bit.MM.deflate.tif", "12in16bit.tif",
        "uint16_1_4660.tif", "multipage.tiff", "tiff_tiled_ycbcr_jpeg_2x2_sampling.tif",
        "tiff_strip_planar_lzw.tiff"] + [f"g4_orientation_{o}.tif" for o in range(1, 9)]},
    "tiff_16bit_RGB.tiff": Case(NV, ref=TIFF),
    "tiff_16bit_RGBa.tiff": Case(NV, ref=TIFF),  # associated alpha: samples as stored
    "pil136.tiff": Case(NV, ref=TIFF),  # associated alpha: samples as stored
    "tiff_strip_planar_16bit_RGB.tiff": Case(TIFF, ref=TIFF),  # nvImageCodec: wrong pixels
    "16bit.s.tif": Case(TIFF, ref=TIFF),  # signed samples
    "10ct_32bit_128.tiff": Case(TIFF, ref=TIFF),  # float samples
    "hopper_lzma.tif": Case(TIFF),
    "hopper_webp.tif": Case(TIFF, ref=TIFF),  # Pillow's libtiff lacks WebP
    "hopper.Lab.tif": Case(PIL),
    "lab-red.tif": Case(PIL),
    "tiff_strip_cmyk_jpeg.tif": Case(PIL),
    "tiff_gray_2_4_bpp-hopper4I.tif": Case(PIL),
    "rdf.tif": Case(PIL),  # palette + alpha
    "multipage_single_frame_loop.tiff": Case(PIL),
    "libtiff_segfault.tif": Case(""),
    # BMP (bmpsuite): what nvImageCodec reads right goes to it, the rest to Pillow
    **{n: Case(NV) for n in [
        "hopper.bmp", "bmpsuite-g-pal1.bmp", "bmpsuite-g-pal4.bmp", "bmpsuite-g-pal8.bmp",
        "bmpsuite-g-pal8rle.bmp"]},
    **{n: Case(PIL) for n in [
        "bmpsuite-g-pal4rle.bmp", "bmpsuite-g-rgb16-565.bmp", "bmpsuite-g-rgb32.bmp",
        "bmpsuite-q-rgba32.bmp", "mmap_error.bmp"]},
    "bmpsuite-b-shortfile.bmp": Case(""),
    # PNM: 8/16-bit, binary and plain, PBM
    **{n: Case(NV) for n in [
        "hopper.ppm", "hopper_8bit.pgm", "hopper_16bit.pgm", "hopper_1bit.pbm", "16_bit_binary.pgm"]},
    "hopper_1bit_plain.pbm": Case(PIL),
    "negative_size.ppm": Case(""),
    # JPEG 2000: Pillow's OpenJPEG (see docs/decoding.md: nvImageCodec's is unsafe)
    **{n: Case(PIL) for n in [
        "16bit.cropped.jp2", "16bit.cropped.j2k", "9bit.j2k", "test-card-lossy-tiled.jp2",
        "rgb_trns_ycbc.jp2", "issue_6194.j2k"]},
    "zero_height.j2k": Case(""),
    "balloon_eciRGBv2_aware.jp2": Case(""),
    # WebP: lossy, alpha, EXIF orientation (applied by streamflow), animation (first frame)
    **{n: Case(NV) for n in ["hopper.webp", "flower.webp", "transparent.webp", "anim_frame1.webp"]
       + [f"hopper_orientation_{o}.webp" for o in range(2, 9)]},
}


def path_of(name: str) -> Path:
    return QUIRKS / name if (QUIRKS / name).exists() else CORPUS / name


def test_the_table_covers_the_corpus_which_stays_small() -> None:
    files = {p.name for p in list(CORPUS.iterdir()) + list(QUIRKS.iterdir())
             if p.suffix not in (".txt",)}
    assert files == set(CASES)
    assert sum(p.stat().st_size for p in CORPUS.iterdir()) < 3_000_000
    assert (CORPUS / "LICENSE-Pillow.txt").exists()


VALID = sorted(n for n, c in CASES.items() if c.decoder)
BROKEN = sorted(n for n, c in CASES.items() if not c.decoder)


# ----------------------------------------------------------------------------- references


def _tifffile_native(path: Path) -> np.ndarray:
    """The first page's samples as stored (HWC), planar or not."""
    with tifffile.TiffFile(path) as tf:
        page = tf.pages[0]
        arr = page.asarray()
        spp = int(page.samplesperpixel)
        if spp > 1 and int(page.planarconfig) == 2 and arr.shape[0] == spp:
            arr = np.moveaxis(arr, 0, -1)
    return arr if arr.ndim == 3 else arr[:, :, None]


def _quiet_convert(im: Image.Image, mode: str) -> Image.Image:
    """``im.convert(mode)`` without Pillow's advice to convert palettes with transparency first."""
    if im.mode == "P" and "transparency" in im.info:
        im = im.convert("RGBA")
    return im.convert(mode)


def reference(name: str) -> np.ndarray:
    """The file as the reference decoder gives it (oriented), at its native depth, HWC.

    Palette and 1-bit images come as 8-bit RGB / gray (Pillow's convert), 16-bit
    samples as uint16, float and signed samples as stored.
    """
    case, path = CASES[name], path_of(name)
    if case.ref == TIFF:
        return _tifffile_native(path)
    with Image.open(path) as im:
        if not case.xmp:
            im = ImageOps.exif_transpose(im)
        if im.mode in ("I;16", "I;16B", "I;16L", "I"):  # PNM and PNG 16-bit come as "I" / "I;16"
            return np.asarray(im).astype(np.uint16)[:, :, None]
        if im.mode in ("1", "L", "RGB") and "transparency" in im.info:  # a tRNS colour: alpha
            arr = np.asarray(im.convert("RGBA" if im.mode == "RGB" else "LA"))
        elif im.mode in ("L", "LA", "RGB", "RGBA", "CMYK", "LAB"):
            arr = np.asarray(im)
        elif im.mode == "1":
            arr = np.asarray(im.convert("L"))
        else:
            with_alpha = "transparency" in im.info or im.mode == "PA"
            arr = np.asarray(_quiet_convert(im, "RGBA" if with_alpha else "RGB"))
    return arr if arr.ndim == 3 else arr[:, :, None]


def reference_rgb8(name: str) -> np.ndarray:
    """The reference as 8-bit RGB with DALI's depth conversion (round(x * 255 / max))."""
    case, path = CASES[name], path_of(name)
    arr = reference(name)
    if case.ref == PIL and arr.dtype == np.uint8:
        with Image.open(path) as im:  # alpha dropped, CMYK and Lab converted by Pillow
            if not case.xmp:
                im = ImageOps.exif_transpose(im)
            return np.asarray(_quiet_convert(im, "RGB"))
    if arr.shape[2] in (2, 4):
        arr = arr[..., :-1]
    if arr.dtype.kind == "f":
        arr = np.floor(np.clip(arr, 0, 1) * 255 + 0.5)
    elif arr.dtype != np.uint8:
        top = np.iinfo(arr.dtype).max
        arr = np.floor(np.clip(arr.astype(np.float64), 0, None) * 255 / top + 0.5)
    arr = arr.astype(np.uint8)
    return np.repeat(arr, 3, axis=2) if arr.shape[2] == 1 else arr


# ----------------------------------------------------------------------------- decoding


_DECODERS: dict[tuple, ImageDecoder] = {}


def decoder(output_type: str = "rgb", dtype: str = "uint8", orient_: bool = True) -> ImageDecoder:
    key = (output_type, dtype, orient_)
    if key not in _DECODERS:
        _DECODERS[key] = ImageDecoder(output_type=output_type, dtype=dtype, adjust_orientation=orient_)
    return _DECODERS[key]


def decode(name: str, output_type: str = "rgb", dtype: str = "uint8", orient_: bool = True):
    names: list[str] = []
    (out,) = decoder(output_type, dtype, orient_).decode_batch(
        [path_of(name).read_bytes()], [name], decoded_by=names)
    return out, names[0]


@pytest.mark.parametrize("name", VALID)
def test_rgb_equals_pillow(name: str) -> None:
    out, by = decode(name)
    case = CASES[name]
    assert isinstance(out, np.ndarray), out
    assert by == case.decoder
    want = reference_rgb8(name)
    assert out.dtype == np.uint8 and out.shape == want.shape, (out.shape, want.shape)
    diff = int(np.abs(out.astype(int) - want.astype(int)).max())
    assert diff <= case.tolerance, diff
    assert decoder().peek_shape(path_of(name).read_bytes(), name) == out.shape


@pytest.mark.parametrize("name", VALID)
def test_any_data_keeps_the_stored_samples(name: str) -> None:
    """ANY_DATA at the native depth equals the reference's samples exactly."""
    want = reference(name)
    dtype = {np.dtype(np.uint8): "uint8", np.dtype(np.uint16): "uint16"}.get(want.dtype, "float32")
    out, _ = decode(name, "any_data", dtype)
    assert isinstance(out, np.ndarray), out
    if dtype == "float32":  # signed and float samples: float32 is DALI's normalized view
        top = 1.0 if want.dtype.kind == "f" else float(np.iinfo(want.dtype).max)
        want = want.astype(np.float32) / np.float32(top)
    assert out.shape == want.shape, (out.shape, want.shape)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-6 if dtype == "float32" else 0)


@pytest.mark.parametrize("name", VALID)
def test_other_output_types_follow_from_rgb(name: str) -> None:
    """BGR is RGB reversed, YCbCr DALI's formula of the RGB samples, GRAY the luma.

    GRAY of a JPEG is libjpeg's Y plane (DALI's), which differs from the luma
    of the decoded RGB by rounding (and, where YCbCr -> RGB clipped, more).
    """
    rgb, _ = decode(name)
    bgr, _ = decode(name, "bgr")
    assert np.array_equal(bgr, rgb[..., ::-1])
    gray, _ = decode(name, "gray")
    assert gray.shape == rgb.shape[:2] + (1,)
    if CASES[name].decoder in (PIL, TIFF) or not name.endswith(".jpg"):
        with Image.fromarray(rgb) as im:
            luma = np.asarray(im.convert("L"))[..., None]
        high = reference(name).dtype != np.uint8  # luma of the 16-bit samples, rounded once
        assert int(np.abs(gray.astype(int) - luma).max()) <= (1 if high else 0)
    ycc, _ = decode(name, "ycbcr")
    if reference(name).dtype == np.uint8:
        assert np.array_equal(ycc, rgb_to_ycbcr(rgb))


# ----------------------------------------------------------------------------- DALI 2.4


#: Where streamflow differs from DALI 2.4 (it follows Pillow), by file, and why
#: (orientation differences: with adjust_orientation on).
ORIENTED_DIFFERS = {
    **{f"hopper_orientation_{o}.webp": "DALI ignores WebP's EXIF orientation" for o in range(2, 9)},
    "exif_imagemagick_orientation.png": "DALI ignores the orientation in ImageMagick's EXIF text chunk",
}
DALI_DIFFERS = {
    "hopper.Lab.tif": "DALI converts CIELab without white-point adaptation (OpenCV fallback)",
    "lab-red.tif": "DALI converts CIELab without white-point adaptation (OpenCV fallback)",
    "mmap_error.bmp": "DALI ignores the BMP pixel-data offset",
    "rdf.tif": "DALI decodes palette+alpha TIFF wrongly",
    "tiff_strip_planar_16bit_RGB.tiff": "DALI (nvImageCodec) decodes planar 16-bit TIFF wrongly",
    "bmpsuite-g-rgb16-565.bmp": "DALI shifts 5/6-bit colours, Pillow replicates bits (max 7 levels)",
    "tiff_strip_cmyk_jpeg.tif": "CMYK: Pillow's conversion, DALI's rounds differently (max 1 level)",
}
#: Differences for one output type only: (config, file) -> why.
DALI_DIFFERS_IN = {
    **{("GRAY-uint8", n): "DALI's PNG gray is libpng's gamma-aware rgb_to_gray (gAMA chunk)"
       for n in ["hopper.png", "tiny.png", "xmp_tags_orientation_exiftool.png"]},
    ("GRAY-uint8", "pil_sample_cmyk.jpg"): "CMYK JPEG to gray: DALI converts via RGB (max 2 levels)",
    **{(c, "9bit.j2k"): "DALI ignores the 9-bit precision (511 is white, not 511/65535)"
       for c in ("GRAY-uint8", "ANY_DATA-uint8", "ANY_DATA-uint16")},
    **{(c, n): "ANY_DATA keeps the PNG/TIFF transparency as an alpha channel; DALI drops it"
       for c in ("ANY_DATA-uint8", "ANY_DATA-uint16")
       for n in ["1_trns.png", "l_trns.png", "p_trns_single.png", "pil123p.png", "rgb_trns.png", "tiny.png"]},
    **{(c, n): "ANY_DATA of CIELab/CMYK is the stored samples (Pillow's LAB/CMYK); DALI's is RGB/other"
       for c in ("ANY_DATA-uint8", "ANY_DATA-uint16")
       for n in ["hopper.Lab.tif", "lab-red.tif", "tiff_strip_cmyk_jpeg.tif"]},
    **{("RGB-uint8-unoriented", f"g4_orientation_{o}.tif"):
       "adjust_orientation=False on TIFF: DALI (nvImageCodec) still flips, and garbles transposes"
       for o in range(2, 9)},
}

#: Largest difference on the recorded sample, per configuration (by rounding).
DALI_TOLERANCE = {"YCbCr-uint8": 1, "GRAY-uint8": 1, "RGB-float32": 1e-6}
CONFIGS = {
    "RGB-uint8": ("rgb", "uint8", True), "BGR-uint8": ("bgr", "uint8", True),
    "GRAY-uint8": ("gray", "uint8", True), "YCbCr-uint8": ("ycbcr", "uint8", True),
    "ANY_DATA-uint8": ("any_data", "uint8", True), "RGB-uint16": ("rgb", "uint16", True),
    "ANY_DATA-uint16": ("any_data", "uint16", True), "RGB-float32": ("rgb", "float32", True),
    "RGB-uint8-unoriented": ("rgb", "uint8", False),
}


def _dali() -> tuple[dict, dict[str, np.ndarray]]:
    meta = json.loads((DALI / "decoded.json").read_text())
    with np.load(DALI / "decoded.npz") as z:
        samples = {k: z[k] for k in z.files}
    return meta, samples


META, SAMPLES = _dali()


def _subsample(a: np.ndarray, grid: int = 16) -> np.ndarray:
    h, w = a.shape[:2]
    ys = np.linspace(0, h - 1, min(h, grid)).round().astype(int)
    xs = np.linspace(0, w - 1, min(w, grid)).round().astype(int)
    return a[ys][:, xs]


DALI_CASES = [(c, key) for c in CONFIGS for key in sorted(META["configs"][c])]


def test_dali_reference_is_dali_2_4() -> None:
    assert META["dali_version"].startswith("2.4")
    assert {Path(k).name for k in META["configs"]["RGB-uint8"]} == set(CASES)


@pytest.mark.parametrize("config, key", DALI_CASES, ids=[f"{c}-{Path(k).name}" for c, k in DALI_CASES])
def test_against_dali(config: str, key: str) -> None:
    """Equal to DALI 2.4 (bit for bit, or within rounding), or a documented difference."""
    name = Path(key).name
    rec = META["configs"][config][key]
    out, _ = decode(name, *CONFIGS[config])
    why = DALI_DIFFERS.get(name) or DALI_DIFFERS_IN.get((config, name))
    if CONFIGS[config][2]:
        why = why or ORIENTED_DIFFERS.get(name)
    if "sha256" not in rec:
        # DALI fails (or crashes) on it; streamflow decodes it exactly when Pillow can
        assert isinstance(out, DecodeError) == (not CASES[name].decoder)
        return
    if not CASES[name].decoder:
        pytest.fail(f"DALI decodes {name}, streamflow does not: {out}")
    assert isinstance(out, np.ndarray), out
    same_shape = list(out.shape) == rec["shape"] and str(out.dtype) == rec["dtype"]
    if why is None:
        assert same_shape, (out.shape, out.dtype, rec["shape"], rec["dtype"])
    if same_shape and hashlib.sha256(np.ascontiguousarray(out).tobytes()).hexdigest() == rec["sha256"]:
        assert why is None, f"documented as different ({why}) but equal: update the table"
        return
    if not same_shape:
        assert why is not None
        return
    diff = np.abs(_subsample(out).astype(np.float64) - SAMPLES[f"{config}/{key}"].astype(np.float64))
    if why is None:
        assert diff.max() <= DALI_TOLERANCE.get(config, 0), diff.max()


# ----------------------------------------------------------------------------- broken files


@pytest.mark.parametrize("name", BROKEN)
def test_broken_files_are_decode_errors_naming_the_file(name: str) -> None:
    src = str(path_of(name))
    for output_type in ("rgb", "any_data"):
        (out,) = decoder(output_type).decode_batch([path_of(name).read_bytes()], [src])
        assert isinstance(out, DecodeError), out
        assert out.source == src and name in str(out)


def test_dali_crashes_where_streamflow_reports_an_error() -> None:
    """DALI 2.4's process dies on these (recorded); streamflow decodes or reports them."""
    crashed = {Path(k).name for c in META["configs"].values() for k, r in c.items() if "crash" in r}
    assert {"hopper_gray.jpg", "balloon_eciRGBv2_aware.jp2"} <= crashed
    for name in crashed:
        for output_type, dtype, orient_ in CONFIGS.values():
            out, _ = decode(name, output_type, dtype, orient_)
            assert isinstance(out, np.ndarray) == bool(CASES[name].decoder)


# ----------------------------------------------------------------------------- orientation


def _photo() -> Image.Image:
    with Image.open(CORPUS / "hopper.png") as im:
        return im.convert("RGB").crop((5, 9, 5 + 61, 9 + 37))


def _encode(fmt: str, orientation: int) -> bytes:
    b = io.BytesIO()
    exif = Image.Exif()
    exif[0x0112] = orientation
    if fmt == "TIFF":
        _photo().save(b, fmt, tiffinfo={0x0112: orientation})
    elif fmt == "WEBP":
        _photo().save(b, fmt, exif=exif.tobytes(), lossless=True)
    else:
        _photo().save(b, fmt, exif=exif, **({"quality": 95} if fmt == "JPEG" else {}))
    return b.getvalue()


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "TIFF"])
@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_every_format(fmt: str, orientation: int) -> None:
    """Oriented as Pillow's exif_transpose; with adjust_orientation=False, as stored."""
    data = _encode(fmt, orientation)
    stored = np.asarray(Image.open(io.BytesIO(_encode(fmt, 1))).convert("RGB"))
    out = decoder().decode(data, fmt)
    with Image.open(io.BytesIO(data)) as im:
        want = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
    assert out.shape == want.shape
    assert int(np.abs(out.astype(int) - want).max()) <= (2 if fmt == "JPEG" else 0)
    assert decoder().peek_shape(data) == out.shape
    raw = decoder("rgb", "uint8", False).decode(data, fmt)
    assert raw.shape == stored.shape
    assert int(np.abs(raw.astype(int) - stored).max()) <= (2 if fmt == "JPEG" else 0)
    # a window of the oriented image is the window of the full decode
    h, w = out.shape[:2]
    region = (h // 5, w // 7, h - h // 4, w - 1)
    win = decoder().decode(data, fmt, region=region)
    assert np.array_equal(win, out[region[0]:region[2], region[1]:region[3]])


def test_orientation_is_the_same_through_every_decoder() -> None:
    """The Pillow fallback orients like nvImageCodec (a file routed to Pillow: LA PNG)."""
    la = _photo().convert("LA")
    for orientation in range(1, 9):
        exif = Image.Exif()
        exif[0x0112] = orientation
        b = io.BytesIO()
        la.save(b, "PNG", exif=exif)
        names: list[str] = []
        (out,) = decoder().decode_batch([b.getvalue()], ["la.png"], decoded_by=names)
        assert names == [PIL]
        want = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(b.getvalue()))).convert("RGB"))
        assert np.array_equal(out, want)
        assert np.array_equal(orient(np.asarray(la.convert("RGB")), orientation), want)
        h, w = want.shape[:2]
        region = (1, 2, h - 3, w - 1)  # windows of fallback decodes are crops of the oriented image
        assert np.array_equal(decoder().decode(b.getvalue(), region=region), want[1 : h - 3, 2 : w - 1])
        assert decoder().peek_shape(b.getvalue()) == want.shape
        (bad,) = decoder().decode_batch([b.getvalue()], ["la.png"], regions=[(0, 0, h + 1, w)])
        assert isinstance(bad, DecodeError) and "outside" in bad.reason


# ----------------------------------------------------------------------------- dtype


@pytest.mark.parametrize("dtype, top", [
    ("uint8", 255), ("uint16", 65535), ("uint32", 4294967295), ("int8", 127), ("int16", 32767),
    ("int32", 2147483647), ("float32", 1.0),
])
def test_dtype_scales_to_the_full_range(dtype: str, top: float) -> None:
    """DALI's ConvertSatNorm: round(x * top / max) in float32; float: x / max."""
    for name, src_top in [("hopper.png", 255), ("16bit.cropped.tif", 65535)]:
        native = decode(name, "any_data", "uint16" if src_top == 65535 else "uint8")[0]
        out, _ = decode(name, "any_data", dtype)
        assert out.dtype == np.dtype(dtype)
        scaled = native.astype(np.float32) * np.float32(top / src_top)
        if dtype == "float32":
            np.testing.assert_allclose(out, native / np.float32(src_top), rtol=1e-6)
        else:
            want = np.clip(np.floor(scaled.astype(np.float64) + 0.5), 0, top)
            assert np.array_equal(out.astype(np.float64), want)


def test_dtype_and_output_type_arguments_are_checked() -> None:
    from streamflow import fn
    from streamflow.errors import PipelineDefinitionError

    src = fn.external_source([[]])
    with pytest.raises(PipelineDefinitionError, match="dtype"):
        fn.decoders.image(src, dtype="float64")
    with pytest.raises(PipelineDefinitionError, match="dtype"):
        fn.decoders.image_crop(src, crop=(2, 2), dtype="bool")
    with pytest.raises(ValueError, match="dtype"):
        ImageDecoder(dtype="int64")
    assert ImageDecoder(output_type=ImageType.ANY_DATA).output_type is ImageType.ANY_DATA


# ----------------------------------------------------------------------------- pipeline


def test_pipeline_counts_images_per_decoder(tmp_path: Path) -> None:
    """pipe.stats().decoded_by says which decoder produced each image; broken ones are skipped."""
    import shutil

    import streamflow as sf
    from streamflow import fn

    root = tmp_path / "root" / "c"
    root.mkdir(parents=True)
    picked = ["hopper.png", "hopper_orientation_6.webp", "uncompressed_la.png", "hopper.Lab.tif",
              "tiff_strip_planar_16bit_RGB.tiff", "9bit.j2k", "hopper.jpg", "broken.png"]
    for name in picked:
        shutil.copy(path_of(name), root / name)

    @sf.pipeline_def(batch_size=len(picked), num_threads=2, seed=0, on_error="skip")
    def pipe():
        data, _ = fn.readers.file(file_root=str(root.parent), file_filters=["*"])
        return fn.decoders.image(data, output_type=sf.types.RGB, dtype=sf.types.FLOAT)

    with pipe() as p:
        (batch,) = list(p.iter())
        stats = p.stats()
    images = [batch[0].at(i) for i in range(len(batch[0]))]
    assert all(im.dtype == np.float32 and im.shape[2] == 3 for im in images)
    counts = stats.decoded_by
    assert counts.get(NV, 0) >= 3 and counts.get(PIL, 0) >= 3 and counts.get(TIFF, 0) >= 1, counts
    assert sum(counts.values()) >= len(picked)
    op = next(o for o in stats.operators if o.name.startswith("decoders.image"))
    assert sum(n for k, n in op.counts.items() if k.startswith("decoded_by:")) == sum(counts.values())
    assert any("broken.png" in (s.source or "") for s in stats.skipped)


def test_plain_cmyk_jpeg_as_pillow_writes_it() -> None:
    """Adobe transform 0 (plain CMYK; the corpus file is YCCK): RGB as Pillow, ANY_DATA Pillow's CMYK."""
    with Image.open(CORPUS / "hopper.png") as im:
        cmyk = im.convert("CMYK")
    b = io.BytesIO()
    cmyk.save(b, "JPEG", quality=95)
    data = b.getvalue()
    with Image.open(io.BytesIO(data)) as im:
        want_rgb, want_cmyk = np.asarray(im.convert("RGB")), np.asarray(im)
    assert int(np.abs(decoder().decode(data).astype(int) - want_rgb).max()) <= 1
    names: list[str] = []
    (out,) = decoder("any_data").decode_batch([data], ["cmyk.jpg"], decoded_by=names)
    assert names == [PIL] and np.array_equal(out, want_cmyk)
