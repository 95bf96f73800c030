"""What an encoded image's header says, read in pure Python (no codec library).

``inspect(data)`` returns a ``Header``: the format, the EXIF orientation the
file carries (JPEG APP1, PNG ``eXIf`` or ImageMagick's "Raw profile type
exif", WebP ``EXIF`` chunk, TIFF tag 274), whether nvImageCodec applies that
orientation itself, and whether nvImageCodec may decode the file at all.

The routing rules below are facts measured on nvImageCodec 0.9's CPU codecs
against Pillow over Pillow's own test images (``docs/decoding.md`` has the
table): where nvImageCodec returns wrong pixels *without* failing, the file
goes to a CPU fallback decoder instead (``codecs.fallback``). Files it
refuses (returns ``None``, or a header it cannot parse) need no rule: the
decoder falls back on failure.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

__all__ = ["Header", "detect_format", "exif_orientation", "inspect", "jpeg_exif_orientation"]


class Header(NamedTuple):  # a tuple: built per image, ~4x cheaper than a frozen dataclass
    """Facts about one encoded image, from its header.

    Attributes:
        fmt: ``jpeg png bmp tiff webp jpeg2k pnm gif``.
        orientation: the EXIF orientation (1..8) the file carries; 1 if none.
        nv_orients: nvImageCodec applies ``orientation`` itself when asked
            (JPEG, PNG ``eXIf``, TIFF); otherwise the decoder does.
        route: ``"nv"``: nvImageCodec may decode it; ``"fallback"``: it must
            not (it would return wrong pixels), a CPU fallback decoder must;
            ``"prefer_fallback"``: a fallback decoder when one is installed,
            else nvImageCodec.
        why: the reason for a fallback route, for messages and docs.
        alpha: the file has a transparency (PNG ``tRNS``) that nvImageCodec's
            decode drops; matters for ``ANY_DATA`` only.
        channels: JPEG: components in the frame header (4: CMYK/YCCK); else 0.
        tiff_signed: TIFF: 16-bit signed samples (SampleFormat 2, BitsPerSample 16).
        tifffile_first: TIFF: try tifffile before Pillow (it keeps 16-bit RGB,
            signed and float samples, and reads more compressions).
    """

    fmt: str
    orientation: int = 1
    nv_orients: bool = True
    route: str = "nv"
    why: str = ""
    alpha: bool = False
    channels: int = 0
    tiff_signed: bool = False
    tifffile_first: bool = False

    @property
    def swaps_axes(self) -> bool:
        """The orientation transposes the image (5..8): oriented H, W are stored W, H."""
        return self.orientation >= 5


def detect_format(head: bytes) -> str | None:
    """The image format named by the first bytes, or ``None`` if unknown.

    Returns one of ``jpeg png bmp tiff webp jpeg2k pnm gif`` (``gif`` is
    recognised only to say that it is unsupported).
    """
    if head[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if head[:2] == b"BM":
        return "bmp"
    if head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):  # classic and BigTIFF
        return "tiff"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:12] == b"\x00\x00\x00\x0cjP  \r\n\x87\n" or head[:4] == b"\xff\x4f\xff\x51":
        return "jpeg2k"
    if len(head) >= 2 and head[0:1] == b"P" and head[1:2] in b"123456":
        return "pnm"
    if head[:4] == b"GIF8":
        return "gif"
    return None


# ----------------------------------------------------------------------------
# EXIF (a TIFF structure): the orientation tag of IFD0
# ----------------------------------------------------------------------------


def exif_orientation(tiff: bytes) -> int:
    """The orientation (tag 0x0112 of IFD0) of an EXIF/TIFF block; 1 if none or malformed.

    Accepts the block with or without the ``Exif\\0\\0`` prefix.
    """
    if tiff[:6] == b"Exif\x00\x00":
        tiff = tiff[6:]
    try:
        end = {b"II": "<", b"MM": ">"}[tiff[:2]]
        (ifd,) = struct.unpack_from(end + "I", tiff, 4)
        (count,) = struct.unpack_from(end + "H", tiff, ifd)
        for k in range(count):
            off = ifd + 2 + 12 * k
            tag, typ, _cnt = struct.unpack_from(end + "HHI", tiff, off)
            if tag == 0x0112:
                if typ == 3:  # SHORT
                    (val,) = struct.unpack_from(end + "H", tiff, off + 8)
                elif typ == 4:  # LONG
                    (val,) = struct.unpack_from(end + "I", tiff, off + 8)
                else:
                    return 1
                return val if 1 <= val <= 8 else 1
    except (KeyError, struct.error, OverflowError):
        return 1
    return 1


# ----------------------------------------------------------------------------
# JPEG
# ----------------------------------------------------------------------------


def _jpeg_info(data: bytes | memoryview) -> tuple[int, int]:
    """(EXIF orientation, frame components) from the markers before the first SOS."""
    mv = memoryview(data)
    n = len(mv)
    i = 2
    orientation = 0
    while i + 4 <= n:
        if mv[i] != 0xFF:
            break
        marker = mv[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        if marker == 0xDA:
            break
        seg_len = (mv[i + 2] << 8) | mv[i + 3]
        if seg_len < 2:
            break
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            components = mv[i + 9] if i + 9 < n else 0
            return orientation or 1, components  # EXIF after the frame header is not read
        if marker == 0xE1 and not orientation and bytes(mv[i + 4 : i + 10]) == b"Exif\x00\x00":
            orientation = exif_orientation(bytes(mv[i + 10 : i + 2 + seg_len]))
        i += 2 + seg_len
    return orientation or 1, 0


def jpeg_exif_orientation(data: bytes | memoryview) -> int:
    """The EXIF orientation (1..8) stored in a JPEG's APP1 segment; 1 if none.

    Walks the markers up to the first SOF/SOS, reads the first ``Exif`` APP1
    and its IFD0 tag 0x0112. Malformed EXIF counts as "no orientation".
    """
    return _jpeg_info(data)[0]


# ----------------------------------------------------------------------------
# PNG
# ----------------------------------------------------------------------------

_RAW_EXIF = b"Raw profile type exif"


def _png_header(mv: memoryview) -> Header:
    color_type = mv[25] if len(mv) > 25 else 0
    bit_depth = mv[24] if len(mv) > 25 else 0
    alpha = False
    orientation = 0
    raw_profile = 0
    i = 8
    n = len(mv)
    while i + 8 <= n:
        length = int.from_bytes(mv[i : i + 4], "big")
        kind = bytes(mv[i + 4 : i + 8])
        body = mv[i + 8 : i + 8 + length]
        if kind == b"IEND" or length > n:
            break
        if kind == b"tRNS":
            alpha = bit_depth <= 8
        elif kind == b"eXIf" and not orientation:
            orientation = exif_orientation(bytes(body))
        elif kind in (b"zTXt", b"tEXt", b"iTXt") and not raw_profile:
            raw_profile = _png_raw_exif_orientation(kind, bytes(body))
        i += 12 + length
    if color_type == 4:  # gray + alpha: nvImageCodec 0.9 returns None for it
        return Header("png", orientation or raw_profile or 1, not orientation, "fallback",
                      "gray+alpha PNG (nvImageCodec fails on it)", alpha)
    if orientation:
        return Header("png", orientation, True, alpha=alpha)
    # ImageMagick writes EXIF as hex text; nvImageCodec does not read it, Pillow does.
    return Header("png", raw_profile or 1, raw_profile <= 1, alpha=alpha)


def _png_raw_exif_orientation(kind: bytes, body: bytes) -> int:
    """The orientation in ImageMagick's "Raw profile type exif" text chunk; 0 if none."""
    if not body.startswith(_RAW_EXIF + b"\x00"):
        return 0
    rest = body[len(_RAW_EXIF) + 1 :]
    try:
        if kind == b"zTXt":
            text = zlib.decompress(rest[1:])
        elif kind == b"iTXt":  # compression flag, method, language\0, keyword\0
            flag = rest[0]
            rest = rest[2:]
            rest = rest[rest.index(b"\x00") + 1 :]
            rest = rest[rest.index(b"\x00") + 1 :]
            text = zlib.decompress(rest) if flag else rest
        else:
            text = rest
        lines = text.decode("latin-1").split("\n")
        blob = bytes.fromhex("".join(lines[3:]))  # "", "exif", "   <length>", hex...
    except (ValueError, IndexError, zlib.error):
        return 0
    return exif_orientation(blob)


# ----------------------------------------------------------------------------
# WebP
# ----------------------------------------------------------------------------


def _webp_header(mv: memoryview) -> Header:
    i = 12
    n = len(mv)
    orientation = 1
    nv_orients = True
    while i + 8 <= n:
        kind = bytes(mv[i : i + 4])
        length = int.from_bytes(mv[i + 4 : i + 8], "little")
        if kind == b"EXIF":
            payload = bytes(mv[i + 8 : i + 8 + length])
            orientation = exif_orientation(payload)
            # nvImageCodec reads the chunk as the WebP spec has it (a bare TIFF
            # structure) but ignores it behind the "Exif\0\0" prefix some
            # writers add (Pillow reads both): then the decoder orients.
            nv_orients = not payload.startswith(b"Exif\x00\x00")
            break
        i += 8 + length + (length & 1)
    return Header("webp", orientation, nv_orients or orientation == 1)


# ----------------------------------------------------------------------------
# TIFF: the first IFD's tags
# ----------------------------------------------------------------------------

# none, CCITT RLE/G3/G4, LZW, old and new JPEG, Adobe deflate, PackBits, deflate
_NV_TIFF_COMPRESSIONS = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 32773, 32946})
_TIFF_TAGS = (256, 257, 258, 259, 262, 274, 277, 284, 338, 339)
_TYPE_SIZE = {1: 1, 2: 1, 3: 2, 4: 4, 6: 1, 7: 1, 8: 2, 9: 4, 16: 8, 17: 8, 18: 8}
_TYPE_FMT = {1: "B", 3: "H", 4: "I", 6: "b", 8: "h", 9: "i", 16: "Q", 17: "q", 18: "Q"}


def tiff_tags(data: bytes | memoryview) -> dict[int, int]:
    """The first value of the routing tags of a TIFF's first IFD (classic and BigTIFF).

    Tags: 256 width, 257 height, 258 BitsPerSample, 259 Compression, 262
    Photometric, 274 Orientation, 277 SamplesPerPixel, 284 PlanarConfig, 338
    ExtraSamples, 339 SampleFormat. Missing or malformed tags are left out.
    """
    mv = memoryview(data)
    out: dict[int, int] = {}
    try:
        end = {b"II": "<", b"MM": ">"}[bytes(mv[:2])]
        big = struct.unpack_from(end + "H", mv, 2)[0] == 43
        if big:
            (ifd,) = struct.unpack_from(end + "Q", mv, 8)
            (count,) = struct.unpack_from(end + "Q", mv, ifd)
            entry, first, inline = 20, ifd + 8, 8
        else:
            (ifd,) = struct.unpack_from(end + "I", mv, 4)
            (count,) = struct.unpack_from(end + "H", mv, ifd)
            entry, first, inline = 12, ifd + 2, 4
        for k in range(min(count, 4096)):
            off = first + entry * k
            tag, typ = struct.unpack_from(end + "HH", mv, off)
            if tag not in _TIFF_TAGS or typ not in _TYPE_FMT:
                continue
            cnt = struct.unpack_from(end + ("Q" if big else "I"), mv, off + 4)[0]
            where = off + (12 if big else 8)
            if cnt * _TYPE_SIZE[typ] > inline:
                where = struct.unpack_from(end + ("Q" if big else "I"), mv, where)[0]
            out[tag] = struct.unpack_from(end + _TYPE_FMT[typ], mv, where)[0]
    except (KeyError, struct.error, OverflowError):
        pass
    return out


def _tiff_header(mv: memoryview) -> Header:
    tags = tiff_tags(mv)
    orientation = tags.get(274, 1)
    orientation = orientation if 1 <= orientation <= 8 else 1
    photometric = tags.get(262, -1)
    bits = tags.get(258, 1)
    spp = tags.get(277, 1)
    sample_format = tags.get(339, 1)
    signed = sample_format == 2 and bits == 16

    def fallback(why: str, tifffile_first: bool = False) -> Header:
        return Header("tiff", orientation, True, "fallback", why, tiff_signed=signed,
                      tifffile_first=tifffile_first)

    if photometric in (8, 9, 10):  # CIELab, ICCLab, ITULab
        return fallback("CIELab TIFF (nvImageCodec returns uncorrected values)")
    if photometric == 5:
        return fallback("CMYK TIFF (Pillow's CMYK conversion is the reference)")
    if sample_format in (2, 3):
        return fallback("signed or floating-point TIFF samples (nvImageCodec fails on them)", True)
    compression = tags.get(259, 1)
    if compression not in _NV_TIFF_COMPRESSIONS:
        return fallback(f"TIFF compression {compression} (nvImageCodec's libtiff lacks it)", True)
    if bits not in (1, 8, 16):
        return fallback(f"{bits}-bit TIFF samples (nvImageCodec fails on them)")
    if bits == 16 and tags.get(284, 1) == 2 and spp > 1:
        return fallback("16-bit planar TIFF (nvImageCodec returns wrong pixels)", True)
    if photometric == 3 and spp > 1:
        return fallback("palette TIFF with an alpha channel (nvImageCodec drops it)")
    return Header("tiff", orientation, True)


# ----------------------------------------------------------------------------
# BMP and PNM
# ----------------------------------------------------------------------------


def _bmp_header(mv: memoryview) -> Header:
    try:
        offset, header_size = struct.unpack_from("<II", mv, 10)
        if header_size == 12:
            bpp = struct.unpack_from("<H", mv, 24)[0]
            compression, colors, entry = 0, 0, 3
        else:
            bpp, compression = struct.unpack_from("<HI", mv, 28)
            colors = struct.unpack_from("<I", mv, 46)[0]
            entry = 4
    except struct.error:
        return Header("bmp")  # too short to say: nvImageCodec will refuse it
    palette = (colors or (1 << bpp)) * entry if bpp <= 8 else 0
    plain = (
        header_size in (12, 40, 108, 124)
        and bpp in (1, 4, 8, 24)
        and (compression == 0 or (compression == 1 and bpp == 8))
        and offset == 14 + header_size + palette
    )
    if plain:
        return Header("bmp")
    # nvImageCodec 0.9 ignores the pixel-data offset, expands 16-bit colours
    # differently and fails on 32-bit and RLE4 files: Pillow decodes them.
    return Header("bmp", route="fallback",
                  why=f"{bpp}-bit BMP, compression {compression}, data at byte {offset}")


def _pnm_header(mv: memoryview) -> Header:
    magic = bytes(mv[:2])
    if magic == b"P1":
        return Header("pnm", route="fallback", why="plain (ASCII) PBM (nvImageCodec fails on it)")
    if magic == b"P4":
        return Header("pnm")
    tokens: list[bytes] = []
    i, n = 2, min(len(mv), 4096)
    while len(tokens) < 3 and i < n:
        c = mv[i]
        if c == 0x23:  # '#' comment to end of line
            while i < n and mv[i] not in (0x0A, 0x0D):
                i += 1
        elif c in b" \t\r\n":
            i += 1
        else:
            j = i
            while j < n and mv[j] not in b" \t\r\n#":
                j += 1
            tokens.append(bytes(mv[i:j]))
            i = j
    try:
        maxval = int(tokens[2])
    except (IndexError, ValueError):
        return Header("pnm")
    if maxval not in (255, 65535):
        # nvImageCodec 0.9 neither scales such samples nor reads them right.
        return Header("pnm", route="fallback", why=f"PNM with maxval {maxval}")
    return Header("pnm")


# ----------------------------------------------------------------------------


def inspect(data: bytes | bytearray | memoryview) -> Header | None:
    """The ``Header`` of an encoded image; ``None`` when the format is not recognised."""
    mv = memoryview(data)
    fmt = detect_format(bytes(mv[:16]))
    if fmt is None:
        return None
    if fmt == "jpeg":
        orientation, components = _jpeg_info(mv)
        return Header("jpeg", orientation, True, channels=components)
    if fmt == "png":
        return _png_header(mv)
    if fmt == "webp":
        return _webp_header(mv)
    if fmt == "tiff":
        return _tiff_header(mv)
    if fmt == "bmp":
        return _bmp_header(mv)
    if fmt == "pnm":
        return _pnm_header(mv)
    if fmt == "jpeg2k":
        # nvImageCodec's CPU JPEG 2000 decoder is OpenCV's bundled OpenJPEG, which
        # corrupts the heap on a malformed file (Pillow's balloon_eciRGBv2_aware.jp2
        # after another JPEG 2000 decode, seen under valgrind): prefer Pillow's
        # maintained OpenJPEG when it is installed.
        return Header("jpeg2k", route="prefer_fallback",
                      why="JPEG 2000 (nvImageCodec's CPU decoder is unsafe on malformed files)")
    return Header(fmt)
