"""Test videos made from synthetic frames with known content (PyAV encodes them).

``frames(n)`` are the source frames: frame ``i`` shifts a colour ramp by ``i``
steps and flips a checkerboard, so every frame differs from every other by far
more than codec error. ``clip(name)`` encodes one of ``SPECS`` once per test
session (cached in a temporary folder) and returns its path. Lossless clips
(x264 ``qp=0`` 4:4:4, VP9 ``lossless``) decode to the source within the RGB <->
YUV rounding (<= 2 levels); lossy ones within a PSNR bound.

The clips under ``tests/data/dali/video/`` (DALI's reference outputs are
recorded on them) were made by ``write_dali_clips``.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

DALI_CLIPS = Path(__file__).parent / "data" / "dali" / "video"

#: name -> (file suffix, codec, pixel format, frames, codec options, gop, container format)
SPECS: dict[str, tuple[str, str, str, int, dict[str, str], int, str | None]] = {
    "h264_lossless": (".mkv", "libx264", "yuv444p", 30, {"qp": "0"}, 10, None),
    "h264": (".mp4", "libx264", "yuv420p", 30, {"crf": "12"}, 10, None),
    "h264_long": (".mp4", "libx264", "yuv420p", 120,
                  {"crf": "20", "x264-params": "keyint=12:min-keyint=12:scenecut=0"}, 12, None),
    "hevc": (".mkv", "libx265", "yuv420p", 30, {"crf": "12", "x265-params": "log-level=error"}, 10, None),
    "vp9_lossless": (".webm", "libvpx-vp9", "yuv444p", 30, {"lossless": "1"}, 10, None),
    "vp9": (".webm", "libvpx-vp9", "yuv420p", 26, {}, 10, None),
    "mjpeg": (".avi", "mjpeg", "yuvj420p", 30, {}, 1, None),
}

_DIR: Path | None = None
_MADE: dict[str, Path] = {}


def frames(n: int, h: int = 48, w: int = 64) -> np.ndarray:
    """The ``n`` source frames, ``(n, h, w, 3)`` uint8."""
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.zeros((n, h, w, 3), np.uint8)
    for i in range(n):
        out[i, ..., 0] = (xx * 4 + i * 8) % 256
        out[i, ..., 1] = (yy * 5 + i * 3) % 256
        out[i, ..., 2] = ((xx // 8 + yy // 8 + i) % 2) * 200 + 20
    return out


def encode(path: Path, codec: str, pix_fmt: str, n: int, options: dict[str, str], gop: int,
           container_format: str | None = None, rate: int = 25) -> Path:
    """Encode ``frames(n)`` into ``path``."""
    import av

    # MP4: the index (moov) first, so a truncated file still opens and fails on its missing frames.
    muxer = {"movflags": "+faststart"} if path.suffix == ".mp4" else {}
    container = av.open(str(path), "w", format=container_format, options=muxer)
    stream: Any = container.add_stream(codec, rate=rate)
    stream.width, stream.height, stream.pix_fmt = 64, 48, pix_fmt
    stream.gop_size = gop
    stream.options = dict(options)
    for frame in frames(n):
        for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
            container.mux(packet)
    for packet in stream.encode():
        container.mux(packet)
    container.close()
    return path


def clip(name: str) -> Path:
    """The path of clip ``name`` (encoded on first use in this session)."""
    global _DIR
    if name not in _MADE:
        if _DIR is None:
            _DIR = Path(tempfile.mkdtemp(prefix="sf-video-"))
            atexit.register(shutil.rmtree, _DIR, True)
        suffix, codec, pix_fmt, n, options, gop, fmt = SPECS[name]
        _MADE[name] = encode(_DIR / f"{name}{suffix}", codec, pix_fmt, n, options, gop, fmt)
    return _MADE[name]


def reference_frames(path: Path | str) -> np.ndarray:
    """Every frame of ``path`` decoded by PyAV directly, with DALI's colour conversion flags."""
    import av
    from av.video.reformatter import Interpolation as I

    flags = I.BILINEAR | I.FULL_CHR_H_INT | I.ACCURATE_RND
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24", interpolation=flags) for f in container.decode(video=0)])


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def write_dali_clips(folder: Path = DALI_CLIPS) -> None:
    """Make the committed clips DALI's outputs are recorded on (VP9 and MJPEG: DALI 2.4 decodes
    those on the CPU; H.264/HEVC only on the GPU)."""
    folder.mkdir(parents=True, exist_ok=True)
    encode(folder / "a.webm", "libvpx-vp9", "yuv420p", 30, {}, 10)
    encode(folder / "b.webm", "libvpx-vp9", "yuv420p", 26, {}, 10)
    encode(folder / "lossless.webm", "libvpx-vp9", "yuv444p", 12, {"lossless": "1"}, 6)
    encode(folder / "c.avi", "mjpeg", "yuvj420p", 24, {}, 1)
