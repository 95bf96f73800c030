"""Header inspection (``codecs.headers``): formats, EXIF orientation in every
container, and the routing rules, on files written by Pillow and on hostile bytes.

The routing rules themselves are checked on real files in
``test_decoding_corpus.py``; here: the parsers' edge cases.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamflow.codecs import ImageDecoder, detect_format, inspect
from streamflow.codecs.headers import exif_orientation, tiff_tags

Image = pytest.importorskip("PIL.Image")
ImageOps = pytest.importorskip("PIL.ImageOps")
PngImagePlugin = pytest.importorskip("PIL.PngImagePlugin")

CORPUS = Path(__file__).resolve().parents[1] / "data" / "pillow-corpus"


def _photo() -> Image.Image:
    with Image.open(CORPUS / "hopper.png") as im:
        return im.convert("RGB").crop((3, 7, 3 + 45, 7 + 29))


def _exif_tiff(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()[6:] if exif.tobytes().startswith(b"Exif") else exif.tobytes()


def test_exif_orientation_parser() -> None:
    for o in range(1, 9):
        raw = _exif_tiff(o)
        assert exif_orientation(raw) == o
        assert exif_orientation(b"Exif\x00\x00" + raw) == o
    assert exif_orientation(b"") == 1 and exif_orientation(b"MM\x00*\xff\xff\xff\xff") == 1
    assert exif_orientation(_exif_tiff(3)[:12]) == 1  # cut inside the IFD: no orientation


@pytest.mark.parametrize("chunk", ["tEXt", "zTXt", "iTXt"])
@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_imagemagick_exif_text_chunk_orients_like_pillow(chunk: str, orientation: int) -> None:
    """ImageMagick keeps EXIF as hex text ("Raw profile type exif"); Pillow reads it, so do we."""
    blob = b"Exif\x00\x00" + _exif_tiff(orientation)
    text = f"\nexif\n{len(blob):8d}\n" + blob.hex()
    info = PngImagePlugin.PngInfo()
    if chunk == "iTXt":
        info.add_itxt("Raw profile type exif", text, zip=True)
    else:
        info.add_text("Raw profile type exif", text, zip=chunk == "zTXt")
    b = io.BytesIO()
    _photo().save(b, "PNG", pnginfo=info)
    data = b.getvalue()
    header = inspect(data)
    assert header is not None and header.orientation == orientation and not header.nv_orients
    with Image.open(io.BytesIO(data)) as im:
        want = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
    out = ImageDecoder().decode(data)
    assert np.array_equal(out, want)
    assert ImageDecoder().peek_shape(data) == out.shape


def test_pnm_maxval_routes() -> None:
    def pgm(maxval: int, comment: bytes = b"") -> bytes:
        body = np.arange(6, dtype=">u2" if maxval > 255 else np.uint8).tobytes()
        return b"P5\n" + comment + b"3 2\n" + comment + str(maxval).encode() + b"\n" + body

    assert inspect(pgm(255)).route == "nv"
    assert inspect(pgm(65535, b"# a comment\n")).route == "nv"
    for maxval in (1, 100, 1023, 4095):
        header = inspect(pgm(maxval, b"#x 9\n"))
        assert header.route == "fallback" and str(maxval) in header.why
        data = pgm(maxval)
        with Image.open(io.BytesIO(data)) as im:  # Pillow scales maxval to 255 / 65535
            want = np.asarray(im).astype(np.uint16 if maxval > 255 else np.uint8)
        dtype = "uint16" if maxval > 255 else "uint8"
        out = ImageDecoder(output_type="any_data", dtype=dtype).decode(data)
        assert np.array_equal(out[..., 0], want)
    assert inspect(b"P1\n2 2\n0 1 1 0\n").route == "fallback"


def test_bmp_route_follows_the_header() -> None:
    b = io.BytesIO()
    _photo().save(b, "BMP")
    plain = b.getvalue()
    assert inspect(plain).route == "nv"
    moved = bytearray(plain)
    struct.pack_into("<I", moved, 10, struct.unpack_from("<I", plain, 10)[0] + 4)  # data offset
    assert inspect(bytes(moved)).route == "fallback"
    assert inspect(b"BM").route == "nv"  # too short to tell: nvImageCodec refuses it


def test_tiff_tags_classic_and_big() -> None:
    b = io.BytesIO()
    _photo().save(b, "TIFF", tiffinfo={274: 6})
    tags = tiff_tags(b.getvalue())
    assert tags[256] == 45 and tags[257] == 29 and tags[274] == 6 and tags[262] == 2 and tags[258] == 8
    # a minimal BigTIFF: header, one IFD with width, height, orientation
    entries = [(256, 3, 1, 7), (257, 3, 1, 5), (274, 3, 1, 8)]
    ifd = struct.pack("<Q", len(entries)) + b"".join(
        struct.pack("<HHQQ", tag, typ, cnt, val) for tag, typ, cnt, val in entries) + struct.pack("<Q", 0)
    big = b"II+\x00" + struct.pack("<HHQ", 8, 0, 16) + ifd
    assert detect_format(big[:16]) == "tiff"
    assert tiff_tags(big) == {256: 7, 257: 5, 274: 8}
    header = inspect(big)
    assert header.orientation == 8 and header.swaps_axes


HOSTILE = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
MAGIC = [b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"BM", b"II*\x00", b"MM\x00*", b"II+\x00",
         b"RIFF\x00\x00\x00\x00WEBP", b"P5", b"P1", b"\x00\x00\x00\x0cjP  \r\n\x87\n"]


@HOSTILE
@given(magic=st.sampled_from(MAGIC), body=st.binary(max_size=300))
def test_inspect_never_raises_on_hostile_bytes(magic: bytes, body: bytes) -> None:
    header = inspect(magic + body)
    assert header is not None and 1 <= header.orientation <= 8
    assert header.route in ("nv", "fallback", "prefer_fallback")


def test_peek_shape_stored_channels() -> None:
    """``stored_channels``: the header's channel count whatever the output type."""
    for name, stored in [("pil123rgba.png", 4), ("hopper.png", 3), ("hopper_8bit.pgm", 1), ("uncompressed_la.png", 2)]:
        data = (CORPUS / name).read_bytes()
        h, w, c = ImageDecoder(output_type="gray").peek_shape(data, name, stored_channels=True)
        assert c == stored and (h, w, 1) == ImageDecoder(output_type="gray").peek_shape(data, name)
