"""Seeds and mutations for fuzzing the image decoder wrapper and the parsers.

Seeds are real images: the small files of ``tests/data/jpeg-quirks`` as they
are, and crops of ``tests/data/photos`` re-encoded by Pillow in every format
the decoder reads (JPEG baseline / progressive / 4:4:4, PNG 8-bit RGB, gray,
gray+alpha, palette, 16-bit, BMP, TIFF, WebP, PNM, JPEG 2000 when Pillow can
write it). Mutations are pure functions of their parameters, so hypothesis
(which draws the parameters and shrinks them) and the campaign (which draws
them from ``random.Random``) share them.

Property checked on every input (``check_decode``): ``ImageDecoder.decode_batch``
returns, for each input, either an HWC uint8 array whose (H, W) equal what
``peek_shape`` reads from the header, or a ``DecodeError`` whose ``source`` is
the input's name and whose message contains it. Any other exception, a wrong
type or a wrong shape is a failure (a crash kills the process: the campaign
runs in a child process to catch it).
"""

from __future__ import annotations

import io
import random
import struct
import zlib
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data"
QUIRKS = DATA / "jpeg-quirks"
PHOTOS = DATA / "photos"

# Mutation = (kind, parameters); applied by ``apply``.
Mutation = tuple[str, tuple[int, ...]]


# ------------------------------------------------------------------ seeds


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bytes(arr: np.ndarray, bit_depth: int = 8, color_type: int | None = None) -> bytes:
    """A PNG written by hand (Pillow cannot write 16-bit RGB): HWC or HW, uint8/uint16."""
    if arr.ndim == 2:
        arr = arr[:, :, None]
    h, w, c = arr.shape
    if color_type is None:
        color_type = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    dtype = ">u2" if bit_depth == 16 else "u1"
    rows = b"".join(b"\x00" + arr[y].astype(dtype).tobytes() for y in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", zlib.compress(rows))
        + _png_chunk(b"IEND", b"")
    )


def png_bomb(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims ``width x height`` pixels (a decompression bomb)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 4096)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")


def jpeg_with_size(jpeg: bytes, height: int, width: int) -> bytes:
    """``jpeg`` with the size in its first SOF segment replaced (a lying header)."""
    raw = bytearray(jpeg)
    i = 2
    while i + 4 <= len(raw):
        marker = raw[i + 1]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            raw[i + 5 : i + 9] = struct.pack(">HH", height, width)
            return bytes(raw)
        i += 2 + struct.unpack(">H", raw[i + 2 : i + 4])[0]
    raise ValueError("no SOF segment")


@lru_cache(maxsize=1)
def seeds() -> tuple[tuple[str, bytes], ...]:
    """(name, encoded bytes) of every seed image; built once per process."""
    from PIL import Image

    out: list[tuple[str, bytes]] = []
    for name in ("hopper.jpg", "hopper_gray.jpg", "hopper_orientation_3.jpg", "hopper_orientation_6.jpg",
                 "hopper_16bit_qtables.jpg", "pil_sample_cmyk.jpg", "truncated_jpeg.jpg"):
        out.append((name, (QUIRKS / name).read_bytes()))
    photos = sorted(PHOTOS.iterdir())
    rng = random.Random(1234)
    for k, photo in enumerate(photos):
        im = Image.open(photo)
        im.load()
        im = im.convert("RGB")
        w, h = im.size
        cw, ch = min(w, 96), min(h, 96)
        x, y = rng.randrange(w - cw + 1), rng.randrange(h - ch + 1)
        small = im.crop((x, y, x + cw, y + ch)).resize((24 + 8 * (k % 4), 20 + 6 * (k % 3)))
        stem = photo.stem
        encoders: list[tuple[str, Callable[[io.BytesIO], None]]] = [
            ("jpg", lambda b: small.save(b, "JPEG", quality=85)),
            ("prog.jpg", lambda b: small.save(b, "JPEG", quality=75, progressive=True)),
            ("444.jpg", lambda b: small.save(b, "JPEG", quality=90, subsampling=0)),
            ("png", lambda b: small.save(b, "PNG")),
            ("gray.png", lambda b: small.convert("L").save(b, "PNG")),
            ("la.png", lambda b: small.convert("LA").save(b, "PNG")),
            ("pal.png", lambda b: small.convert("P").save(b, "PNG")),
            ("bmp", lambda b: small.save(b, "BMP")),
            ("tif", lambda b: small.save(b, "TIFF")),
            ("webp", lambda b: small.save(b, "WEBP", quality=80)),
            ("ppm", lambda b: small.save(b, "PPM")),
        ]
        for suffix, save in encoders[k % 3 :: 2] if k > 3 else encoders:
            b = io.BytesIO()
            try:
                save(b)
            except (OSError, KeyError, ValueError):  # a codec missing from this Pillow build
                continue
            out.append((f"{stem}.{suffix}", b.getvalue()))
        arr16 = (np.asarray(small, dtype=np.uint16) * 257)[: 16 + k, : 16 + k]
        if k < 2:
            out.append((f"{stem}.16bit.png", png_bytes(arr16, 16)))
    return tuple(out)


# ------------------------------------------------------------------ mutations


def apply(data: bytes, mutations: list[Mutation], donors: tuple[tuple[str, bytes], ...]) -> bytes:
    """Apply ``mutations`` in order; every parameter is taken modulo what fits."""
    buf = bytearray(data)
    for kind, p in mutations:
        n = len(buf)
        if kind == "flip":  # flip one bit
            if n:
                buf[p[0] % n] ^= 1 << (p[1] % 8)
        elif kind == "byte":  # set one byte (0x00, 0xff and markers are interesting)
            if n:
                buf[p[0] % n] = p[1] % 256
        elif kind == "truncate":  # keep a prefix
            buf = buf[: p[0] % (n + 1)]
        elif kind == "cut":  # delete a run
            if n:
                a = p[0] % n
                del buf[a : a + 1 + p[1] % 64]
        elif kind == "dup":  # duplicate a run (repeated markers, chunks)
            if n:
                a = p[0] % n
                buf[a:a] = buf[a : a + 1 + p[1] % 256]
        elif kind == "splice":  # head of this file + tail of a donor (spliced headers)
            donor = donors[p[0] % len(donors)][1]
            buf = buf[: p[1] % (n + 1)] + bytearray(donor[p[2] % (len(donor) + 1) :])
        elif kind == "int":  # overwrite a 16/32-bit field with an extreme value
            if n >= 4:
                a = p[0] % (n - 3)
                value = (0, 1, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x10000, 0x8000)[p[1] % 8]
                fmt = (">H", "<H", ">I", "<I")[p[2] % 4]
                packed = struct.pack(fmt, value & (0xFFFF if "H" in fmt else 0xFFFFFFFF))
                buf[a : a + len(packed)] = packed
        else:
            raise ValueError(f"unknown mutation {kind!r}")
    return bytes(buf)


KINDS = ("flip", "byte", "truncate", "cut", "dup", "splice", "int")


def random_mutations(rng: random.Random, max_count: int = 6) -> list[Mutation]:
    """A random list of mutations (the campaign's generator)."""
    count = rng.choice((1, 1, 1, 2, 3, max_count))
    return [(rng.choice(KINDS), tuple(rng.randrange(1 << 32) for _ in range(3))) for _ in range(count)]


def mutation_strategy(max_count: int = 6) -> Any:
    """The hypothesis strategy of the same mutations."""
    from hypothesis import strategies as st

    one = st.tuples(st.sampled_from(KINDS), st.tuples(*(st.integers(0, (1 << 32) - 1) for _ in range(3))))
    return st.lists(one, min_size=1, max_size=max_count)


# ------------------------------------------------------------------ the property


def check_decode(decoder: Any, inputs: list[bytes], names: list[str]) -> list[str]:
    """Decode ``inputs`` as one batch; return the property violations (empty: all good)."""
    from streamflow.errors import DecodeError

    problems: list[str] = []
    try:
        results = decoder.decode_batch(inputs, names)
    except Exception as exc:
        return [f"decode_batch raised {type(exc).__name__}: {exc}"]
    if len(results) != len(inputs):
        return [f"{len(results)} results for {len(inputs)} inputs"]
    for raw, name, result in zip(inputs, names, results):
        if isinstance(result, DecodeError):
            if result.source != name or name not in str(result) or not result.reason:
                problems.append(f"{name}: DecodeError does not name the source: {result!r}")
            continue
        if not isinstance(result, np.ndarray):
            problems.append(f"{name}: result is {type(result).__name__}, not an array or DecodeError")
            continue
        if result.dtype != np.uint8 or result.ndim != 3 or result.shape[2] != decoder._out_channels():
            problems.append(f"{name}: bad array {result.dtype} {result.shape}")
            continue
        try:
            expected = decoder.peek_shape(raw, name)
        except DecodeError as exc:
            problems.append(f"{name}: decoded to {result.shape} but peek_shape fails: {exc}")
            continue
        if tuple(result.shape) != tuple(expected):
            problems.append(f"{name}: decoded shape {result.shape} != header shape {expected}")
    return problems
