"""CPU fallback decoders: Pillow and tifffile, for what nvImageCodec cannot
read, or reads wrongly (``headers.Header.route``).

Both are optional (``pip install 'streamflow[decoders]'``) and imported on
first use. Each returns a ``convert.Native`` in stored orientation (Pillow's
TIFF loader orients on its own: that is undone by not orienting again, see
``decode``), or raises ``FallbackFailed`` with its reason.
"""

from __future__ import annotations

import io
import threading
from typing import Any

import numpy as np

from .convert import Native
from .headers import Header

__all__ = ["EXTRA", "NONE_INSTALLED", "FallbackFailed", "available", "decode", "image_size"]

#: The optional extra that installs the fallback decoders.
EXTRA = "decoders"
NONE_INSTALLED = (
    f"no CPU fallback decoder is installed (pip install 'streamflow[{EXTRA}]' adds Pillow, "
    "tifffile and imagecodecs)"
)

_PILLOW_FORMAT = {
    "jpeg": "JPEG", "png": "PNG", "bmp": "BMP", "tiff": "TIFF",
    "webp": "WEBP", "jpeg2k": "JPEG2000", "pnm": "PPM",
}

_MODULES: dict[str, Any] = {}
_LOCK = threading.Lock()


class FallbackFailed(Exception):
    """No fallback decoder could decode the image; the message says why, per decoder."""


def _module(name: str) -> Any:
    """``PIL.Image`` / ``tifffile`` imported once; ``None`` when not installed."""
    if name not in _MODULES:
        with _LOCK:
            if name not in _MODULES:
                try:
                    if name == "pillow":
                        from PIL import Image

                        _MODULES[name] = Image
                    else:
                        import tifffile

                        _MODULES[name] = tifffile
                except ImportError:
                    _MODULES[name] = None
    return _MODULES[name]


def available(fmt: str) -> list[str]:
    """The installed fallback decoders for ``fmt``, in the order they are tried."""
    names = ["pillow"] if fmt in _PILLOW_FORMAT else []
    if fmt == "tiff":
        names.append("tifffile")
    return [n for n in names if _module(n) is not None]


def _order(header: Header) -> list[str]:
    names = available(header.fmt)
    if header.tifffile_first:
        names.sort(key=lambda n: n != "tifffile")
    return names


def image_size(data: Any, header: Header) -> tuple[int, int] | None:
    """(height, width) as stored, from the header parse of the first fallback decoder
    that can read it (the one ``decode`` would use); ``None`` if none can."""
    raw = _bytes(data)
    for name in _order(header):
        try:
            if name == "tifffile":
                with _module(name).TiffFile(io.BytesIO(raw)) as tf:
                    page = tf.pages[0]
                    return int(page.imagelength), int(page.imagewidth)
            with _module(name).open(io.BytesIO(raw), formats=[_PILLOW_FORMAT[header.fmt]]) as im:
                w, h = im.size
        except Exception:
            continue
        if header.fmt == "tiff" and header.swaps_axes:  # Pillow reports TIFF sizes oriented
            return w, h
        return h, w
    return None


def decode(data: Any, header: Header, max_pixels: int | None) -> tuple[Native, bool]:
    """Decode with the first fallback decoder that succeeds.

    Returns the image and whether it is already oriented (Pillow orients TIFF).

    Raises:
        FallbackFailed: every installed decoder failed (or none is installed).
    """
    names = _order(header)
    if not names:
        raise FallbackFailed(NONE_INSTALLED)
    reasons = []
    raw = _bytes(data)
    for name in names:
        try:
            if name == "pillow":
                return _pillow(raw, header, max_pixels), header.fmt == "tiff"
            return _tifffile(raw, header, max_pixels), False
        except FallbackFailed as exc:
            reasons.append(f"{name}: {exc}")
        except Exception as exc:  # a library's own error on bad data
            reasons.append(f"{name}: {type(exc).__name__}: {exc}")
    raise FallbackFailed("; ".join(reasons))


def _bytes(data: Any) -> bytes:
    if isinstance(data, np.ndarray):
        return data.tobytes()
    return bytes(data)


def _check_size(h: int, w: int, max_pixels: int | None) -> None:
    if h <= 0 or w <= 0:
        raise FallbackFailed(f"image size {h}x{w}")
    if max_pixels is not None and h * w > max_pixels:
        raise FallbackFailed(
            f"image of {h}x{w} = {h * w} pixels exceeds max_pixels={max_pixels} (refused before decoding)"
        )


# ----------------------------------------------------------------------------
# Pillow
# ----------------------------------------------------------------------------

_SIXTEEN = ("I;16", "I;16L", "I;16B", "I;16N")


def _pillow(raw: bytes, header: Header, max_pixels: int | None) -> Native:
    Image = _module("pillow")
    with Image.open(io.BytesIO(raw), formats=[_PILLOW_FORMAT[header.fmt]]) as im:
        w, h = im.size
        _check_size(h, w, max_pixels)
        im.load()  # raises on truncated or corrupt data
        return _from_pillow(im, header)


def _from_pillow(im: Any, header: Header) -> Native:
    mode = im.mode
    if header.alpha and mode in ("1", "L", "RGB") and "transparency" in im.info:
        # a PNG tRNS colour, kept as an alpha channel (ANY_DATA)
        return Native.from_channels(np.asarray(im.convert("RGBA" if mode == "RGB" else "LA")), "pillow")
    if mode == "1":
        return Native.from_channels(np.asarray(im.convert("L")), "pillow")
    if mode in ("L", "LA", "RGB", "RGBA"):
        return Native.from_channels(np.asarray(im), "pillow")
    if mode in ("P", "PA"):
        with_alpha = mode == "PA" or "transparency" in im.info
        return Native.from_channels(np.asarray(im.convert("RGBA" if with_alpha else "RGB")), "pillow")
    if mode in ("CMYK", "LAB"):
        rgb = np.asarray(im.convert("RGB"))
        return Native(np.asarray(im), mode.lower(), "pillow", rgb=rgb)
    if mode in _SIXTEEN:
        return Native.from_channels(np.asarray(im).astype(np.uint16), "pillow")
    if mode == "I":
        arr = np.asarray(im)
        if header.fmt in ("pnm", "png"):  # Pillow scales PNM maxval > 255 to 0..65535
            arr = arr.astype(np.uint16)
        elif header.tiff_signed:
            arr = arr.astype(np.int16)
        return Native.from_channels(arr, "pillow")
    if mode == "F":
        return Native.from_channels(np.asarray(im), "pillow")
    if mode in ("La", "RGBa"):
        return Native.from_channels(np.asarray(im.convert(mode.upper())), "pillow")
    return Native.from_channels(np.asarray(im.convert("RGB")), "pillow")


# ----------------------------------------------------------------------------
# tifffile (first page)
# ----------------------------------------------------------------------------


def _tifffile(raw: bytes, header: Header, max_pixels: int | None) -> Native:
    tifffile = _module("tifffile")
    with tifffile.TiffFile(io.BytesIO(raw)) as tf:
        page = tf.pages[0]
        _check_size(int(page.imagelength), int(page.imagewidth), max_pixels)
        photometric = int(page.photometric)
        if photometric not in (0, 1, 2):  # MINISWHITE, MINISBLACK, RGB
            raise FallbackFailed(f"photometric interpretation {page.photometric!r} is left to Pillow")
        arr = page.asarray()
        spp = int(page.samplesperpixel)
        if spp > 1 and int(page.planarconfig) == 2 and arr.shape[0] == spp:
            arr = np.moveaxis(arr, 0, -1)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        if arr.ndim != 3 or arr.shape[2] > 4:
            raise FallbackFailed(f"unsupported sample layout {arr.shape}")
        bits = int(page.bitspersample)
        if arr.dtype == np.bool_:
            arr, bits = arr.astype(np.uint8) * np.uint8(255), 8
        significant = bits if arr.dtype.kind in "ui" and bits < arr.dtype.itemsize * 8 else None
        if photometric == 0 and arr.dtype == np.uint8:
            # MINISWHITE (0 is white): inverted up to 8 bits, as Pillow does;
            # wider and float samples are left as stored, as Pillow leaves them
            top = (1 << significant) - 1 if significant else 255
            arr = (top - arr).astype(arr.dtype)
        return Native.from_channels(np.ascontiguousarray(arr), "tifffile", significant)
