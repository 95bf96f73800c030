"""Video demuxing and decoding on the CPU through PyAV (FFmpeg): the only module that imports ``av``.

* ``VideoIndex``: every frame's presentation timestamp and the keyframes of
  one video stream, read once by demuxing the packets (no decoding). Frames
  are numbered in presentation order, as DALI numbers them.
* ``VideoDecoder``: decodes chosen frames of one video, reusing its open
  container between calls. To reach frame ``f`` it seeks to the keyframe at or
  before ``f`` and decodes forward; frames already ahead of the decoder are
  reached by decoding on, without a seek. So a sequence costs the GOPs it
  touches, not the whole file.
* ``DecoderCache``: a few open decoders per worker thread (PyAV containers
  are not shared between threads).

Facts this module relies on (PyAV 12-18, checked here):

* Colour conversion uses the swscale flags of DALI's CPU video decoder
  (``BILINEAR | FULL_CHR_H_INT | ACCURATE_RND``): RGB frames are then bit for
  bit DALI 2.4's for VP9 and MJPEG (4:2:0 and 4:4:4), the codecs its CPU
  reader decodes.
* ``container.seek(pts, stream=s, backward=True)`` lands on the keyframe at or
  before ``pts`` and flushes the decoder; decoded frames are identified by
  their ``pts``, so a seek that lands early or late is detected, not trusted.
* Decoding runs in FFmpeg without the GIL (``avcodec_send_packet`` /
  ``receive_frame`` and ``sws_scale`` are called ``nogil``), so worker threads
  decode in parallel.
* Damaged data: ``err_detect=explode`` makes the decoders raise on damage they
  would otherwise conceal; a frame the index lists that the decoder never
  returns (a truncated stream) is reported too. Either way the error names the
  file, the frame and its timestamp.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import DecodeError, MissingDependencyError

__all__ = ["DecoderCache", "VideoDecoder", "VideoIndex", "av_module", "build_index", "open_container"]

#: Source of a video: a path, or the encoded bytes (``decoders.video``).
VideoSource = str | bytes | np.ndarray


def av_module() -> Any:
    """The ``av`` module (PyAV), imported on first use."""
    try:
        import av
    except ImportError as exc:
        raise MissingDependencyError("av", "video", "Video decoding on the CPU") from exc
    return av


_SWS_FLAGS: Any = None


def _sws_flags() -> Any:
    """DALI's CPU decoder flags: bilinear, full chroma interpolation, accurate rounding."""
    global _SWS_FLAGS
    if _SWS_FLAGS is None:
        interp = av_module().video.reformatter.Interpolation
        _SWS_FLAGS = interp.BILINEAR | interp.FULL_CHR_H_INT | interp.ACCURATE_RND
    return _SWS_FLAGS


def open_container(source: VideoSource) -> Any:
    """An opened input container over a path or in-memory bytes."""
    av = av_module()
    if isinstance(source, str):
        return av.open(source, mode="r")
    data = source.tobytes() if isinstance(source, np.ndarray) else bytes(source)
    return av.open(io.BytesIO(data), mode="r")


def _video_stream(container: Any, name: str) -> Any:
    streams = container.streams.video
    if not streams:
        raise DecodeError("no video stream in the file", name)
    return streams[0]


@dataclass(frozen=True)
class VideoIndex:
    """Frames of a video stream in presentation order.

    Attributes:
        pts: each frame's presentation timestamp, in ``time_base`` units, ascending.
        keyframes: the frame numbers of the keyframes, ascending (at least frame 0).
        time_base: seconds per ``pts`` unit.
        height, width: frame size [pixels].
        codec: the FFmpeg codec name (``h264``, ``hevc``, ``vp9`` ...).
        damage: why frames past the last indexed one could not be read (a
            truncated or damaged file), or ``None`` when the stream read cleanly.
    """

    pts: np.ndarray
    keyframes: np.ndarray
    time_base: Fraction
    height: int
    width: int
    codec: str
    damage: str | None = None

    @property
    def num_frames(self) -> int:
        return len(self.pts)

    def seconds(self, frames: np.ndarray) -> np.ndarray:
        """Timestamps [s] of ``frames`` from the first frame (float64); ``-1`` where a frame is ``< 0``."""
        frames = np.asarray(frames, dtype=np.int64)
        rel = (self.pts[np.clip(frames, 0, self.num_frames - 1)] - self.pts[0]).astype(np.float64)
        out = rel * float(self.time_base)
        return np.where(frames < 0, -1.0, out)

    @property
    def frame_period(self) -> float:
        """Mean time between frames [s] (1/fps; 0 for a one-frame video)."""
        if self.num_frames < 2:
            return 0.0
        return float(self.pts[-1] - self.pts[0]) * float(self.time_base) / (self.num_frames - 1)

    def keyframe_before(self, frame: int) -> int:
        """The last keyframe at or before ``frame``."""
        pos = int(np.searchsorted(self.keyframes, frame, side="right")) - 1
        return int(self.keyframes[max(pos, 0)])

    def frame_at(self, seconds: float, round_up: bool) -> int:
        """The frame shown at ``seconds`` from the first frame: the first frame at or after
        it (``round_up``), else the last frame at or before it."""
        rel = (self.pts - self.pts[0]).astype(np.float64) * float(self.time_base)
        eps = 1e-9
        if round_up:
            return int(np.searchsorted(rel, seconds - eps, side="left"))
        return max(int(np.searchsorted(rel, seconds + eps, side="right")) - 1, 0)

    def frame_of_pts(self) -> dict[int, int]:
        return {int(p): i for i, p in enumerate(self.pts)}


def build_index(source: VideoSource, name: str) -> VideoIndex:
    """Index the first video stream of ``source`` by demuxing its packets (no decoding).

    Raises:
        DecodeError: not a video, no video stream, no frames or no timestamps.
    """
    av = av_module()
    try:
        container = open_container(source)
    except (av.FFmpegError, OSError, ValueError, EOFError) as err:
        raise DecodeError(f"cannot open the video: {err}", name) from None
    try:
        stream = _video_stream(container, name)
        pts: list[int] = []
        key: list[bool] = []
        damage: str | None = None
        try:
            for packet in container.demux(stream):
                if packet.size == 0:  # the flush packet at the end
                    continue
                ts = packet.pts if packet.pts is not None else packet.dts
                if ts is None:
                    raise DecodeError(f"packet {len(pts)} has no timestamp; cannot index the video", name)
                if ts < 0:  # dropped by the decoder (edit lists, B-frame priming)
                    continue
                pts.append(int(ts))
                key.append(bool(packet.is_keyframe))
        except (av.FFmpegError, EOFError) as err:
            if not pts:
                raise DecodeError(f"cannot read the video's packets: {err}", name) from None
            damage = f"cannot read past frame {len(pts) - 1}: {err}"
        declared = int(stream.frames or 0)
        if damage is None and declared > len(pts):
            damage = f"the container lists {declared} frames, only {len(pts)} can be read (truncated?)"
        if not pts:
            raise DecodeError("the video stream has no frames", name)
        order = np.argsort(np.asarray(pts, dtype=np.int64), kind="stable")
        sorted_pts = np.asarray(pts, dtype=np.int64)[order]
        keyframes = np.flatnonzero(np.asarray(key)[order])
        if len(keyframes) == 0 or keyframes[0] != 0:
            keyframes = np.concatenate([[0], keyframes]).astype(np.int64)
        ctx = stream.codec_context
        return VideoIndex(
            pts=sorted_pts, keyframes=keyframes.astype(np.int64), time_base=Fraction(stream.time_base),
            height=int(ctx.height), width=int(ctx.width), codec=str(ctx.name), damage=damage,
        )
    finally:
        container.close()


class VideoDecoder:
    """Decodes frames of one video; not thread-safe (one thread uses it at a time).

    Args:
        source: a path, or the encoded bytes.
        name: the file name for errors.
        index: the video's index (built here when not given).
        image_type: ``"RGB"`` or ``"YCbCr"`` (interleaved, full-size chroma).
    """

    def __init__(self, source: VideoSource, name: str, index: VideoIndex | None = None,
                 image_type: str = "RGB") -> None:
        self.source = source
        self.name = name
        self.index = index if index is not None else build_index(source, name)
        self.image_type = image_type
        self._pts_to_frame = self.index.frame_of_pts()
        self._container: Any = None
        self._frames: Iterator[Any] | None = None
        self._next = -1  # frame number the decoder returns next; -1: unknown (seek first)

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        return self.index.height, self.index.width, 3

    def close(self) -> None:
        if self._container is not None:
            self._container.close()
        self._container, self._frames, self._next = None, None, -1

    def _open(self) -> Any:
        if self._container is None:
            av = av_module()
            try:
                self._container = open_container(self.source)
            except (av.FFmpegError, OSError, ValueError, EOFError) as err:
                raise DecodeError(f"cannot open the video: {err}", self.name) from None
            stream = _video_stream(self._container, self.name)
            stream.codec_context.thread_count = 1  # parallelism comes from the worker threads
            stream.codec_context.options = {"err_detect": "explode"}
        return self._container

    def _frame_iter(self, container: Any) -> Iterator[Any]:
        stream = container.streams.video[0]
        for packet in container.demux(stream):
            yield from packet.decode()

    def _seek(self, frame: int) -> None:
        container = self._open()
        stream = container.streams.video[0]
        key = self.index.keyframe_before(frame)
        container.seek(int(self.index.pts[key]), stream=stream, backward=True, any_frame=False)
        self._frames = self._frame_iter(container)
        self._next = key

    def _where(self, frame: int) -> str:
        if 0 <= frame < self.index.num_frames:
            return f"frame {frame} (t={float(self.index.seconds(np.array([frame]))[0]):.3f}s)"
        return f"frame {frame}"

    def decode(self, frames: Sequence[int] | np.ndarray, out: np.ndarray | None = None,
               fill: np.ndarray | None = None) -> np.ndarray:
        """Frames ``frames`` as an ``(F, H, W, 3)`` uint8 array (written into ``out`` when given).

        A frame number ``< 0`` is a padding frame filled with ``fill`` (zeros by default);
        numbers may repeat and come in any order.

        Raises:
            DecodeError: a frame is out of range or cannot be decoded (names the
                file, the frame and its timestamp).
        """
        frames = np.asarray(frames, dtype=np.int64).reshape(-1)
        n = self.index.num_frames
        if out is None:
            out = np.empty((len(frames), *self.frame_shape), dtype=np.uint8)
        bad = frames[frames >= n]
        if len(bad):
            raise DecodeError(f"frame {int(bad[0])} is out of range: the video has {n} frames", self.name)
        pad = frames < 0
        if pad.any():
            out[pad] = 0 if fill is None else fill
        wanted: dict[int, list[int]] = {}
        for pos, f in enumerate(frames.tolist()):
            if f >= 0:
                wanted.setdefault(f, []).append(pos)
        for target in sorted(wanted):
            self._decode_to(target, out, wanted[target])
        return out

    def _decode_to(self, target: int, out: np.ndarray, positions: list[int]) -> None:
        av = av_module()
        # Decode on from where the decoder is, unless the target is behind it or a
        # later keyframe lies between (then a seek skips the frames in between).
        attempts = 0
        if self._next < 0 or target < self._next or self.index.keyframe_before(target) > self._next:
            self._seek(target)
        while True:
            assert self._frames is not None
            try:
                frame = next(self._frames, None)
            except (av.FFmpegError, EOFError, ValueError) as err:
                self.close()
                raise DecodeError(f"cannot decode {self._where(target)}: {err}", self.name) from None
            if frame is None:
                self.close()
                raise DecodeError(
                    f"cannot decode {self._where(target)}: the stream ends before it (truncated or damaged)",
                    self.name,
                )
            number = self._pts_to_frame.get(frame.pts) if frame.pts is not None else self._next
            if number is None:
                continue  # a frame the index does not list (negative pts): not addressable
            self._next = number + 1
            if number < target:
                continue
            if number > target:
                # The decoder skipped the target (a seek landed late, or damage): go
                # back one keyframe more, then give up.
                attempts += 1
                if attempts > 2:
                    self.close()
                    raise DecodeError(f"cannot decode {self._where(target)}: the decoder skips it", self.name)
                self._seek(max(self.index.keyframe_before(target) - 1, 0) if attempts == 1 else 0)
                continue
            self._convert(frame, out[positions[0]])
            for pos in positions[1:]:
                out[pos] = out[positions[0]]
            return

    def _convert(self, frame: Any, dst: np.ndarray) -> None:
        if frame.height != self.index.height or frame.width != self.index.width:
            raise DecodeError(
                f"frame size changes within the video ({frame.height}x{frame.width}, "
                f"expected {self.index.height}x{self.index.width})", self.name,
            )
        if self.image_type == "YCbCr":
            planes = frame.reformat(format="yuv444p", interpolation=_sws_flags()).to_ndarray()
            np.copyto(dst, planes.reshape(3, frame.height, frame.width).transpose(1, 2, 0))
        else:
            np.copyto(dst, frame.to_ndarray(format="rgb24", interpolation=_sws_flags()))


class DecoderCache:
    """Open ``VideoDecoder``s by path, a few per thread (each thread its own)."""

    def __init__(self, per_thread: int = 4) -> None:
        self._per_thread = per_thread
        self._local = threading.local()

    def get(self, path: str, index: VideoIndex, image_type: str) -> VideoDecoder:
        cache: OrderedDict[tuple[str, str], VideoDecoder] | None = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = OrderedDict()
        key = (path, image_type)
        decoder = cache.get(key)
        if decoder is None or decoder.index is not index:
            if decoder is not None:
                decoder.close()
            decoder = VideoDecoder(path, path, index, image_type)
            cache[key] = decoder
            while len(cache) > self._per_thread:
                cache.popitem(last=False)[1].close()
        cache.move_to_end(key)
        return decoder
