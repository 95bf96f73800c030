"""Broken and hostile inputs, and faults, through whole pipelines (issue 8).

Every bad file goes through ``readers.file(file_root=...)`` -> ``decoders.image``
-> ``resize``, once with ``on_error="raise"`` (a ``PipelineError`` naming the
file and the cause) and once with ``on_error="skip"`` (counted, batches full,
the next epoch works). Files that are odd but valid (PNG named .jpg, CMYK,
16-bit, gray+alpha) must decode like Pillow. Faults (user callbacks that
raise, abandoned iterators, cancelled consumers, Ctrl-C) must leave no thread
or file descriptor behind (``no_leaks``). The policy is in docs/robustness.md.
"""

from __future__ import annotations

import _thread
import asyncio
import gc
import io
import os
import shutil
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import DATA, GOOD_JPEGS, PHOTOS, QUIRKS

import streamflow as sf
from streamflow import fn
from streamflow.errors import DecodeError, PipelineError, ReadError
from streamflow.io.pools import read_whole_file

Image = pytest.importorskip("PIL.Image")

pytestmark = pytest.mark.timeout(60)

BATCH = 4  # 3 good files + the case under test: one batch per epoch


# ---------------------------------------------------------------- the bad files


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    import struct

    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(width: int, height: int, rows: Callable[[], Any], bit_depth: int = 8, color_type: int = 2) -> bytes:
    """A PNG written by hand; ``rows()`` yields the raw filtered rows (streamed into zlib)."""
    import struct

    z = zlib.compressobj(9)
    idat = b"".join(z.compress(r) for r in rows()) + z.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")


def zero_png(side: int) -> bytes:
    """A valid ``side x side`` black RGB PNG: tiny on disk, ``3 * side**2`` bytes decoded."""
    row = b"\x00" * (1 + 3 * side)
    return _png(side, side, lambda: (row for _ in range(side)))


def _photo(size: tuple[int, int] = (40, 32)) -> Any:
    with Image.open(PHOTOS / "astronaut.png") as im:
        return im.convert("RGB").resize(size)


def _save(im: Any, fmt: str, **kw: Any) -> bytes:
    b = io.BytesIO()
    im.info.pop("icc_profile", None)
    im.save(b, fmt, **kw)
    return b.getvalue()


def _rgb16_png() -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(16)
    arr = rng.integers(0, 65536, (24, 20, 3), dtype=np.uint16)
    data = _png(20, 24, lambda: (b"\x00" + arr[y].astype(">u2").tobytes() for y in range(24)), bit_depth=16)
    return data, _to_uint8(arr)


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    """16-bit samples as DALI 2.4 gives them in uint8: round(x * 255 / 65535)."""
    return np.rint(arr.astype(np.float64) / 257.0).astype(np.uint8)


HOPPER = (QUIRKS / "hopper.jpg").read_bytes()

# name -> (file bytes, words expected in the error) for files that must fail.
BAD: dict[str, tuple[bytes, str]] = {
    "truncated.jpg": (HOPPER[: len(HOPPER) // 2], "truncated"),
    "zero_bytes.jpg": (b"", "empty input (0 bytes)"),
    "garbage.jpg": (np.random.default_rng(1).integers(0, 256, 3000, dtype=np.uint8).tobytes(),
                    "not a recognised image format"),
    "animation.gif": (b"", "GIF is not supported"),  # filled in below (GIF bytes)
    "bomb.png": (b"", "exceeds max_pixels"),  # filled in below
    "broken_header.png": ((DATA / "pillow-corpus" / "broken.png").read_bytes(), "PNG header"),
    "real_truncated.jpg": ((QUIRKS / "truncated_jpeg.jpg").read_bytes(), "truncated"),
}


def _fill_bad() -> None:
    BAD["animation.gif"] = (_save(_photo(), "GIF"), BAD["animation.gif"][1])
    import struct

    # A PNG header claiming 100000 x 100000 RGB pixels (30 GB decoded) in ~100 bytes.
    ihdr = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0)
    bomb = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", zlib.compress(b"\0" * 64))
    BAD["bomb.png"] = (bomb + _png_chunk(b"IEND", b""), BAD["bomb.png"][1])


_fill_bad()


def _pillow_rgb(data: bytes) -> np.ndarray:
    from PIL import ImageOps

    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(ImageOps.exif_transpose(im).convert("RGB"))


def _odd_valid() -> dict[str, tuple[bytes, np.ndarray, int]]:
    """name -> (bytes, expected RGB, max |difference|) for odd but valid files."""
    photo = _photo()
    png = _save(photo, "PNG")
    rgb16, rgb16_expected = _rgb16_png()
    la = _save(photo.convert("LA"), "PNG")
    gray16 = np.random.default_rng(2).integers(0, 65536, (18, 22), dtype=np.uint16)
    gray16_png = _png(22, 18, lambda: (b"\x00" + gray16[y].astype(">u2").tobytes() for y in range(18)),
                      bit_depth=16, color_type=0)
    cmyk = (QUIRKS / "pil_sample_cmyk.jpg").read_bytes()
    junk = (QUIRKS / "junk_jpeg_header.jpg").read_bytes()
    return {
        # nvImageCodec rejects its header; the Pillow fallback reads it (libjpeg skips the junk)
        "junk_header.jpg": (junk, _pillow_rgb(junk), 0),
        "png_named.jpg": (png, np.asarray(photo), 0),  # wrong extension: the content decides
        "cmyk.jpg": (cmyk, _pillow_rgb(cmyk), 1),  # nvImageCodec rounds CMYK->RGB differently by 1
        "rgb16.png": (rgb16, rgb16_expected, 0),  # 16-bit: scaled to 8 bits as DALI does
        "gray16.png": (gray16_png, np.repeat(_to_uint8(gray16)[:, :, None], 3, 2), 0),
        "gray_alpha.png": (la, _pillow_rgb(la), 0),  # alpha dropped, gray replicated
    }


ODD = _odd_valid()


def make_root(tmp: Path, extra: dict[str, bytes]) -> Path:
    """tmp/root/cls: 3 good JPEGs plus ``extra`` (name -> bytes)."""
    cls = tmp / "root" / "cls"
    cls.mkdir(parents=True)
    for f in GOOD_JPEGS[:3]:
        shutil.copy(f, cls / f.name)
    for name, data in extra.items():
        (cls / name).write_bytes(data)
    return tmp / "root"


def image_pipe(root: Path | str, on_error: str, *, max_pixels: int | None = 128_000_000,
               batch_size: int = BATCH, filters: Any = None, **kw: Any) -> sf.Pipeline:
    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=0, on_error=on_error, **kw)
    def pipe():
        reader_kw = {"file_filters": filters} if filters else {}
        jpegs, labels = fn.readers.file(file_root=root, **reader_kw)
        images = fn.decoders.image(jpegs, max_pixels=max_pixels)
        return images, fn.resize(images, size=(16, 16)), labels

    return pipe()


ALL_FILES = ["*"]  # take every file, whatever its extension


def expect_raise(pipe: sf.Pipeline, name: str, words: str) -> PipelineError:
    """Run one epoch; it must fail with a PipelineError naming ``name`` and ``words``."""
    with pytest.raises(PipelineError) as info:
        for _ in pipe.iter():
            pass
    err = info.value
    text = str(err)
    text.encode("utf-8")  # printable whatever the file name
    assert name in text and words in text, text
    assert err.source is not None and err.source.endswith(name)
    assert err.operator and err.stage
    assert isinstance(err.__cause__, (DecodeError, ReadError))
    assert pipe.state is sf.PipelineState.FAILED
    return err


def expect_skip(pipe: sf.Pipeline, bad: list[str], epochs: int = 2) -> None:
    """Every batch full, each bad file counted, later epochs fine.

    The stages run ahead of the consumer (the next epoch is being read while
    this one is consumed), so after ``e`` epochs each bad file has been
    counted at least ``e`` times; a replacement is drawn at random from the
    shard and may be the bad file again, which counts it once more.
    """
    for epoch in range(epochs):
        sizes = [len(batch[1]) for batch in pipe.iter()]
        assert sizes and all(s == pipe.batch_size for s in sizes), sizes
        skipped = pipe.stats().skipped
        names = [os.path.basename(s.source) for s in skipped]
        assert set(names) == set(bad), names
        assert all(names.count(b) >= epoch + 1 for b in bad), names
        assert all(s.reason and s.stage and s.operator for s in skipped)


# ---------------------------------------------------------------- bad files, both policies


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_file_raises_naming_file_and_cause(tmp_path: Path, name: str, no_leaks) -> None:
    data, words = BAD[name]
    pipe = image_pipe(make_root(tmp_path, {name: data}), "raise", filters=ALL_FILES)
    try:
        expect_raise(pipe, name, words)
    finally:
        pipe.close()


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_file_is_skipped_counted_and_pipeline_goes_on(tmp_path: Path, name: str, no_leaks) -> None:
    pipe = image_pipe(make_root(tmp_path, {name: BAD[name][0]}), "skip", filters=ALL_FILES)
    with pipe:
        expect_skip(pipe, [name])
        assert BAD[name][1] in pipe.stats().skipped[0].reason


def test_all_bad_files_at_once_under_skip(tmp_path: Path, no_leaks) -> None:
    files = {name: data for name, (data, _) in BAD.items()}
    with image_pipe(make_root(tmp_path, files), "skip", filters=ALL_FILES, batch_size=5) as pipe:
        expect_skip(pipe, sorted(files), epochs=1)


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_but_valid_files_decode_like_pillow(tmp_path: Path, name: str) -> None:
    data, expected, tolerance = ODD[name]
    with image_pipe(make_root(tmp_path, {name: data}), "raise", filters=ALL_FILES) as pipe:
        (batch,) = list(pipe.iter())
        row = [os.path.basename(s) for s in batch.sources].index(name)
        image = batch[0].at(row)
        assert image.dtype == np.uint8 and image.shape == expected.shape, (image.shape, expected.shape)
        assert int(np.abs(image.astype(int) - expected.astype(int)).max()) <= tolerance
        assert batch[1].at(row).shape == (16, 16, 3)


# ---------------------------------------------------------------- decompression bomb


def _rss_high_water_reset() -> bool:
    """Reset VmHWM (Linux ``clear_refs`` 5); False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def _decode_growth(root: Path, max_pixels: int | None) -> tuple[int, int, Any]:
    """(RSS high-water growth in KiB, tracemalloc peak in bytes, result or error) of one epoch."""
    pipe = image_pipe(root, "raise", max_pixels=max_pixels, batch_size=1)
    outcome: Any
    gc.collect()
    before = _status_kib("VmRSS")
    _rss_high_water_reset()
    tracemalloc.start()
    try:
        try:
            outcome = [b[0].at(0).shape for b in pipe.iter()]
        except PipelineError as exc:
            outcome = exc
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        pipe.close()
    return _status_kib("VmHWM") - before, peak, outcome


def test_decompression_bomb_is_refused_before_any_large_allocation(tmp_path: Path) -> None:
    if not _rss_high_water_reset():
        pytest.skip("cannot reset the RSS high-water mark (/proc/self/clear_refs) here")
    side = 6000  # a real, valid PNG: 0.1 MB on disk, 108 MB decoded
    for d in ("bomb", "control"):
        (tmp_path / d / "cls").mkdir(parents=True)
        (tmp_path / d / "cls" / f"{d}.png").write_bytes(zero_png(side) if d == "bomb" else zero_png(side // 2))
    # Refused by a configured limit, from the header: nothing close to 108 MB is touched.
    growth, peak, outcome = _decode_growth(tmp_path / "bomb", max_pixels=side * side - 1)
    assert isinstance(outcome, PipelineError), outcome
    assert "bomb.png" in str(outcome) and f"max_pixels={side * side - 1}" in str(outcome)
    assert "refused before decoding" in str(outcome)
    assert growth < 40 * 1024, f"RSS grew by {growth} KiB refusing a bomb"
    assert peak < 8 * 2**20, f"Python allocations peaked at {peak} bytes"
    # The measurement sees a real decode (control: 27 MB decoded, limit lifted).
    growth, _, outcome = _decode_growth(tmp_path / "control", max_pixels=None)
    assert outcome == [(side // 2, side // 2, 3)]
    assert growth > 20 * 1024, f"the control decode grew RSS by only {growth} KiB"


def test_default_max_pixels_refuses_huge_headers(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"bomb.png": BAD["bomb.png"][0]})
    with image_pipe(root, "skip", filters=ALL_FILES) as pipe:
        expect_skip(pipe, ["bomb.png"], epochs=1)
        reason = pipe.stats().skipped[0].reason
    assert "100000x100000" in reason and "max_pixels=128000000" in reason


# ---------------------------------------------------------------- unreadable, special files


def test_unreadable_file_permission_denied(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"secret.jpg": HOPPER})
    path = root / "cls" / "secret.jpg"
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running as root (or with CAP_DAC_OVERRIDE): permissions are not enforced; "
                        "the directory and FIFO cases below cover unreadable entries")
        with image_pipe(root, "raise") as pipe:
            expect_raise(pipe, "secret.jpg", "permission denied")
        with image_pipe(root, "skip") as pipe:
            expect_skip(pipe, ["secret.jpg"])
    finally:
        path.chmod(0o644)


def _special_root(tmp_path: Path, kind: str) -> tuple[Path, str]:
    root = make_root(tmp_path, {})
    if kind == "fifo":
        os.mkfifo(root / "cls" / "pipe.jpg")  # reading it would block forever
        return root, "pipe.jpg"
    if kind == "self_symlink":
        os.symlink("loop.jpg", root / "cls" / "loop.jpg")  # ELOOP when opened
        return root, "loop.jpg"
    if kind == "dangling_symlink":
        os.symlink("nowhere.jpg", root / "cls" / "gone.jpg")
        return root, "gone.jpg"
    if kind == "device":
        os.symlink("/dev/zero", root / "cls" / "zero.jpg")  # endless: must not be read
        return root, "zero.jpg"
    raise ValueError(kind)


SPECIAL = {
    "fifo": "not a regular file (a FIFO)",
    "self_symlink": "Too many levels of symbolic links",
    "dangling_symlink": "file not found",
    "device": "not a regular file (a device)",
}


@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_unreadable_entries_raise_or_skip(tmp_path: Path, kind: str, no_leaks) -> None:
    root, name = _special_root(tmp_path, kind)
    pipe = image_pipe(root, "raise")
    try:
        err = expect_raise(pipe, os.path.basename(name), SPECIAL[kind])
        assert isinstance(err.__cause__, ReadError) and err.stage == "read"
    finally:
        pipe.close()
    with image_pipe(root, "skip") as pipe:
        expect_skip(pipe, [os.path.basename(name)])


def test_directories_named_like_images(tmp_path: Path, no_leaks) -> None:
    root = make_root(tmp_path, {})
    (root / "cls" / "folder.jpg").mkdir()  # under file_root: walked into, never listed as a file
    with image_pipe(root, "raise", batch_size=3) as pipe:
        assert [len(b[0]) for b in pipe.iter()] == [3]
    listing = tmp_path / "list.txt"  # named by a file list: a read error naming it
    listing.write_text("".join(f"cls/{f.name} 0\n" for f in GOOD_JPEGS[:3]) + "cls/folder.jpg 1\n")

    @sf.pipeline_def(batch_size=4, num_threads=2, seed=0, on_error="raise")
    def pipe():
        jpegs, _ = fn.readers.file(file_list=listing, file_root=root)
        return fn.decoders.image(jpegs)

    p = pipe()
    try:
        expect_raise(p, "folder.jpg", "is a directory")
    finally:
        p.close()


def test_read_whole_file_refuses_special_files_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "f.jpg"
    os.mkfifo(fifo)
    began = time.monotonic()
    with pytest.raises(ReadError, match="FIFO"):
        read_whole_file(str(fifo))
    with pytest.raises(ReadError, match="NUL"):
        read_whole_file(str(tmp_path / "a\0b.jpg"))
    assert time.monotonic() - began < 1


# ---------------------------------------------------------------- files deleted mid-epoch


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_file_deleted_mid_epoch(tmp_path: Path, on_error: str, no_leaks) -> None:
    cls = tmp_path / "root" / "cls"
    cls.mkdir(parents=True)
    for i in range(40):
        shutil.copy(GOOD_JPEGS[i % 3], cls / f"img_{i:02d}.jpg")
    pipe = image_pipe(tmp_path / "root", on_error, batch_size=2, prefetch_queue_depth=1)
    try:
        it = pipe.iter()
        next(it)  # the listing is done and the epoch is running
        (cls / "img_39.jpg").unlink()  # the last batch: not read ahead yet
        if on_error == "raise":
            with pytest.raises(PipelineError, match="img_39.jpg.*file not found"):
                for _ in it:
                    pass
        else:
            sizes = [len(b[1]) for b in it]
            assert sizes == [2] * 19
            skipped = pipe.stats().skipped  # once, or more: the next epoch is read ahead
            assert skipped and all(s.source.endswith("img_39.jpg") and "not found" in s.reason for s in skipped)
            assert [len(b[1]) for b in pipe.iter()] == [2] * 20  # next epoch: still full
    finally:
        pipe.close()


# ---------------------------------------------------------------- symlink loops


def test_symlink_loops_under_file_root_are_cut(tmp_path: Path, no_leaks) -> None:
    root = make_root(tmp_path, {})
    cls = root / "cls"
    (cls / "sub").mkdir()
    shutil.copy(GOOD_JPEGS[3], cls / "sub" / "deep.jpg")
    os.symlink(".", cls / "self")  # cls/self -> cls
    os.symlink("..", cls / "sub" / "up")  # cls/sub/up -> cls
    os.symlink(str(root), cls / "sub" / "to_root")  # back to the root of all classes
    os.symlink("b_link", cls / "a_link")  # a_link -> b_link -> a_link
    os.symlink("a_link", cls / "b_link")
    began = time.monotonic()
    pipe = image_pipe(root, "skip", batch_size=2)
    assert time.monotonic() - began < 5
    with pipe:
        sources = [os.path.basename(s) for b in pipe.iter() for s in b.sources]
        skipped = sorted(os.path.basename(s.source) for s in pipe.stats().skipped)
    # The files are listed (once per path they are reachable by), and each read
    # ends: the link loops a_link/b_link (listed: they match no filter? they do
    # not end in .jpg) are not listed, so nothing is skipped.
    assert {"deep.jpg", *(f.name for f in GOOD_JPEGS[:3])} <= set(sources)
    assert skipped == []


def test_symlink_loop_named_like_an_image(tmp_path: Path) -> None:
    root = make_root(tmp_path, {})
    os.symlink("b.jpg", root / "cls" / "a.jpg")
    os.symlink("a.jpg", root / "cls" / "b.jpg")
    with image_pipe(root, "raise", batch_size=5) as pipe:
        expect_raise(pipe, "a.jpg", "Too many levels of symbolic links")
    with image_pipe(root, "skip", batch_size=5) as pipe:
        expect_skip(pipe, ["a.jpg", "b.jpg"])


# ---------------------------------------------------------------- non-UTF-8 names


NON_UTF8_GOOD = b"caf\xe9.jpg"  # latin-1, not UTF-8
NON_UTF8_BAD = b"bro\xffken.jpg"


def _non_utf8_root(tmp_path: Path) -> Path:
    root = make_root(tmp_path, {})
    cls = os.fsencode(root / "cls")
    try:
        with open(os.path.join(cls, NON_UTF8_GOOD), "wb") as f:
            f.write(HOPPER)
        with open(os.path.join(cls, NON_UTF8_BAD), "wb") as f:
            f.write(HOPPER[:100])
    except (OSError, UnicodeError) as exc:
        pytest.skip(f"this file system refuses non-UTF-8 names: {exc}")
    return root


def test_non_utf8_names_are_read_and_named_readably(tmp_path: Path, no_leaks) -> None:
    root = _non_utf8_root(tmp_path)
    pipe = image_pipe(root, "raise", batch_size=5)
    try:
        err = expect_raise(pipe, "ken.jpg", "JPEG")
        text = str(err)
        assert "bro\\udcffken.jpg" in text or "bro\\xffken.jpg" in text, text  # escaped, printable
        assert os.fsencode(err.source).endswith(NON_UTF8_BAD)  # the exact name, recoverable
    finally:
        pipe.close()
    with image_pipe(root, "skip", batch_size=5) as pipe:
        (batch,) = list(pipe.iter())
        names = [os.fsencode(os.path.basename(s)) for s in batch.sources]
        assert NON_UTF8_GOOD in names and len(batch[0]) == 5
        skipped = pipe.stats().skipped
        assert skipped and all(os.fsencode(s.source).endswith(NON_UTF8_BAD) for s in skipped)


def test_bytes_paths_in_files_and_file_root(tmp_path: Path) -> None:
    root = _non_utf8_root(tmp_path)
    good = os.path.join(os.fsencode(root / "cls"), NON_UTF8_GOOD)

    @sf.pipeline_def(batch_size=1, num_threads=1, seed=0)
    def by_files():
        jpegs, _ = fn.readers.file(files=[good])
        return fn.decoders.image(jpegs)

    with by_files() as pipe:
        batch = pipe.run()
    assert batch[0].at(0).shape == (128, 128, 3)
    assert os.fsencode(batch.sources[0]) == good
    with image_pipe(os.fsencode(root), "skip", batch_size=5) as pipe:
        assert len(next(iter(pipe.iter()))[0]) == 5


def test_sample_error_message_is_printable_for_non_utf8_names() -> None:
    name = os.fsdecode(b"/data/bro\xffken.jpg")
    message = str(ReadError("file not found", name))
    message.encode("utf-8")
    assert "bro\\xffken.jpg" in message


# ---------------------------------------------------------------- faults in user callbacks


def _sync_callable(info: Any) -> Any:
    if info.iteration == 2:
        raise ValueError("user callback broke")
    return [np.zeros((2, 2), np.uint8)] * 2


async def _async_callable(info: Any) -> Any:
    await asyncio.sleep(0)
    if info.iteration == 2:
        raise ValueError("user callback broke")
    return [np.zeros((2, 2), np.uint8)] * 2


def _generator():
    for _ in range(2):
        yield [np.zeros((2, 2), np.uint8)] * 2
    raise ValueError("user callback broke")


async def _async_generator():
    for _ in range(2):
        yield [np.zeros((2, 2), np.uint8)] * 2
    raise ValueError("user callback broke")


CALLBACKS = {
    "sync": (_sync_callable, True),
    "async": (_async_callable, True),
    "iterator": (_generator, False),
    "async_iterator": (_async_generator, False),
}


@pytest.mark.parametrize("kind", sorted(CALLBACKS))
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_exception_in_external_source_callback(kind: str, on_error: str, no_leaks) -> None:
    source, takes_info = CALLBACKS[kind]

    @sf.pipeline_def(batch_size=2, num_threads=2, seed=0, on_error=on_error)
    def pipe():
        data = fn.external_source(source if takes_info else source(), batch_info=takes_info, name="user")
        return fn.flip(data, horizontal=1)

    p = pipe()
    try:
        p.run()
        p.run()
        with pytest.raises(PipelineError, match="user callback broke") as info:
            p.run()  # a broken source is not a bad sample: it stops the pipeline either way
        assert "user" in str(info.value) and isinstance(info.value.__cause__, ValueError)
        assert p.state is sf.PipelineState.FAILED
        with pytest.raises(PipelineError):
            p.run()  # the same error again, not a hang
    finally:
        p.close()
    assert p.state is sf.PipelineState.CLOSED
    with pytest.raises(sf.PipelineClosedError):
        p.run()


# ---------------------------------------------------------------- abandoned, cancelled, interrupted


def slow_pipe(delay: float = 0.05, batch_size: int = 2) -> sf.Pipeline:
    def source(info: Any) -> Any:
        time.sleep(delay)  # the I/O thread is busy in user code
        return [np.full((4, 4, 3), info.iteration % 256, np.uint8)] * batch_size

    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=0)
    def pipe():
        data = fn.external_source(source, batch_info=True)
        return fn.resize(fn.flip(data, horizontal=1), size=(8, 8))

    return pipe()


def test_abandoned_sync_iterator_is_collected_and_epoch_goes_on(image_root: Path, no_leaks) -> None:
    pipe = image_pipe(image_root, "raise", batch_size=1)
    it = pipe.iter()
    next(it)
    del it
    gc.collect()
    assert pipe.run().batch_index == 1
    pipe.close()


def test_abandoned_async_iterator_then_usable(image_root: Path, no_leaks) -> None:
    async def main() -> list[asyncio.Task[Any]]:
        pipe = image_pipe(image_root, "raise", batch_size=1)
        async with pipe:
            agen = pipe.__aiter__()
            await agen.__anext__()
            del agen  # never closed by the consumer: the loop's asyncgen hooks finalize it
            gc.collect()
            await asyncio.sleep(0)
            assert (await pipe.arun()).batch_index == 1
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert asyncio.run(main()) == []


def test_pipeline_dropped_mid_epoch_is_released_by_gc(image_root: Path, no_leaks) -> None:
    pipe = image_pipe(image_root, "raise", batch_size=1)
    it = pipe.iter()
    next(it)
    del it, pipe
    gc.collect()


@pytest.mark.parametrize("point", ["before_first_batch", "waiting_for_batch", "inside_loop_body",
                                   "source_thread_busy"])
def test_cancelled_async_consumer_leaves_nothing_and_pipeline_usable(point: str, no_leaks) -> None:
    async def main() -> list[asyncio.Task[Any]]:
        pipe = slow_pipe(delay=0.2 if point == "source_thread_busy" else 0.02)
        seen: list[int] = []
        entered = asyncio.Event()

        async def consume() -> None:
            async for batch in pipe:
                seen.append(batch.batch_index)
                if point == "inside_loop_body":
                    entered.set()
                    await asyncio.sleep(10)

        task = asyncio.create_task(consume())
        if point == "before_first_batch":
            await asyncio.sleep(0)
        elif point == "inside_loop_body":
            await entered.wait()
        else:
            while len(seen) < 2:
                await asyncio.sleep(0.005)
            if point == "source_thread_busy":
                await asyncio.sleep(0.1)  # the reader is inside the 0.2 s callback
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # Usable again: the next batch continues the same epoch (nothing lost).
        batch = await pipe.arun()
        expected = seen[-1] + 1 if seen else 0
        assert batch.batch_index == expected, (seen, batch.batch_index)
        await pipe.aclose()
        assert pipe.state is sf.PipelineState.CLOSED
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert asyncio.run(main()) == []


def test_cancelled_task_running_aclose_still_releases_everything(no_leaks) -> None:
    """A consumer cancelled while it awaits ``aclose()`` (e.g. a server shutting down)."""

    async def main() -> None:
        pipe = slow_pipe(delay=0.3)
        await pipe.arun()
        closer = asyncio.create_task(pipe.aclose())
        await asyncio.sleep(0.05)  # aclose waits for the I/O thread inside the callback
        closer.cancel()
        try:
            await closer
        except asyncio.CancelledError:
            pass
        await pipe.aclose()  # a second close finishes the job
        assert pipe.state is sf.PipelineState.CLOSED

    asyncio.run(main())


def test_keyboard_interrupt_during_iter_then_usable_and_closable(no_leaks, ctrl_c) -> None:
    pipe = slow_pipe(delay=0.1)
    seen: list[int] = []
    timer = threading.Timer(0.35, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        for batch in pipe.iter():
            seen.append(batch.batch_index)
    timer.join()
    assert seen, "the interrupt came before the first batch"
    batch = pipe.run()  # the pipeline survives a Ctrl-C of its consumer
    assert batch.batch_index > seen[-1], (seen, batch.batch_index)
    pipe.close()


def test_keyboard_interrupt_during_iter_loses_no_batch(no_leaks, ctrl_c) -> None:
    pipe = slow_pipe(delay=0.1)
    seen: list[int] = []
    timer = threading.Timer(0.35, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            for batch in pipe.iter():
                seen.append(batch.batch_index)
        timer.join()
        assert pipe.run().batch_index == seen[-1] + 1, seen
    finally:
        pipe.close()


def test_keyboard_interrupt_in_the_consumer_body_then_close(image_root: Path, no_leaks) -> None:
    pipe = image_pipe(image_root, "raise", batch_size=1)
    with pytest.raises(KeyboardInterrupt):
        for batch in pipe.iter():
            raise KeyboardInterrupt
    pipe.close()
    with pytest.raises(sf.PipelineClosedError):
        pipe.run()
