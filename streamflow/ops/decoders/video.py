"""``decoders.video`` (and ``experimental.decoders.video``): encoded video bytes to FHWC uint8 frames.

Which frames (DALI 2.4's rules, checked against its CPU decoder):

* nothing given: every frame;
* ``frames``: those frame numbers, in that order, repeats allowed;
* ``start_frame`` (default 0) with ``end_frame`` (exclusive) or
  ``sequence_length``, advancing by ``stride`` (default 1).

Frames past the end follow ``pad_mode``: ``constant`` (the default here:
``fill_value``), ``edge``/``repeat`` (the last frame), ``reflect``/``reflect_101``
(mirror, not repeating the last frame), ``symmetric``/``reflect_1001``
(mirror, repeating it), ``none`` (a shorter sequence; for ``frames``, an error).
The padding rules live here and the video readers use them too (``pad_frames``).

Decoding is PyAV's (``streamflow/codecs/video.py``): it seeks to the keyframe
before the first frame needed and decodes forward, on the worker threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...codecs.video import VideoDecoder
from ...errors import PipelineDefinitionError, SampleError
from ...graph import DataNode, add_node, split_arguments
from ...operator import Chunk, Operator
from ...types import Device
from ..arguments import fn_function

__all__ = ["PAD_MODES", "VideoDecode", "check_fill_value", "pad_frames", "video"]

#: DALI's pad modes and the rule each stands for.
PAD_MODES = {
    "none": "none", "constant": "constant", "edge": "edge", "repeat": "edge",
    "reflect": "reflect_101", "reflect_101": "reflect_101", "symmetric": "reflect_1001", "reflect_1001": "reflect_1001",
}  # fmt: skip


def parse_pad_mode(value: str, op_name: str) -> str:
    """The padding rule of a DALI ``pad_mode`` name."""
    rule = PAD_MODES.get(str(value).lower())
    if rule is None:
        raise PipelineDefinitionError(f"{op_name}: pad_mode must be one of {sorted(PAD_MODES)}, got {value!r}")
    return rule


def pad_frames(frames: np.ndarray, end: int, rule: str) -> np.ndarray:
    """Frame numbers ``>= end`` mapped by ``rule`` (``-1``: a constant padding frame).

    ``reflect_101`` mirrors about frame ``end - 1`` (``end, end+1`` -> ``end-2, end-3``);
    ``reflect_1001`` mirrors about the edge (``end`` -> ``end-1``), both periodic.
    """
    frames = np.asarray(frames, dtype=np.int64).copy()
    past = frames >= end
    if not past.any() or rule == "none":
        return frames
    if rule == "constant":
        frames[past] = -1
    elif rule == "edge":
        frames[past] = end - 1
    elif rule == "reflect_101":
        if end == 1:
            frames[past] = 0
        else:
            period = 2 * (end - 1)
            m = frames[past] % period
            frames[past] = np.where(m < end, m, period - m)
    else:  # reflect_1001
        m = frames[past] % (2 * end)
        frames[past] = np.where(m < end, m, 2 * end - 1 - m)
    return frames


def check_fill_value(fill_value: Any, op_name: str) -> np.ndarray:
    """``fill_value`` as 1 or 3 uint8 values (DALI: each in [0, 255])."""
    values = np.atleast_1d(np.asarray(fill_value, dtype=np.float64)).reshape(-1)
    if values.size not in (1, 3) or (values < 0).any() or (values > 255).any() or (values != np.round(values)).any():
        raise PipelineDefinitionError(
            f"{op_name}: fill_value must be one integer or one per channel (3), each in [0, 255], got {fill_value!r}"
        )
    return values.astype(np.uint8)


class VideoDecode(Operator):
    """Decodes each sample's encoded video into the chosen frames (FHWC uint8)."""

    name = "decoders.video"
    devices = frozenset({Device.CPU, Device.MIXED})
    per_sample_args = frozenset({"frames", "start_frame", "end_frame", "sequence_length", "stride"})

    def __init__(self, *, frames: Any = None, start_frame: int | None = None, end_frame: int | None = None,
                 sequence_length: int | None = None, stride: int | None = None, pad_mode: str = "constant",
                 fill_value: Any = 0, name: str | None = None) -> None:
        super().__init__(name=name)
        self.frames = None if frames is None else np.atleast_1d(np.asarray(frames, dtype=np.int64))
        self.start_frame, self.end_frame = start_frame, end_frame
        self.sequence_length, self.stride = sequence_length, stride
        self.pad_rule = parse_pad_mode(pad_mode, self.name)
        self.fill = check_fill_value(fill_value, self.name)

    def output_channels(self, input_channels: Sequence[int | None]) -> int | None:
        return 3

    def frame_numbers(self, chunk: Chunk, row: int, num_frames: int) -> np.ndarray:
        """The frame numbers of ``row`` (``-1``: constant padding), as DALI picks them."""
        frames = chunk.arg("frames", row, self.frames)
        if frames is not None:
            frames = np.atleast_1d(np.asarray(frames, dtype=np.int64)).reshape(-1)
            if (frames < 0).any():
                raise SampleError(f"{self.name}: frames must be non-negative, got {frames.tolist()}")
            if self.pad_rule == "none" and (frames >= num_frames).any():
                raise SampleError(
                    f"{self.name}: frame {int(frames.max())} is past the end of the video ({num_frames} frames) "
                    "and pad_mode='none'"
                )
            return pad_frames(frames, num_frames, self.pad_rule)
        start = _int_arg(chunk.arg("start_frame", row, self.start_frame), 0)
        stride = _int_arg(chunk.arg("stride", row, self.stride), 1)
        length = chunk.arg("sequence_length", row, self.sequence_length)
        end = chunk.arg("end_frame", row, self.end_frame)
        if stride < 1:
            raise SampleError(f"{self.name}: stride must be >= 1, got {stride}")
        if start < 0 or start >= num_frames:
            raise SampleError(f"{self.name}: start_frame {start} is outside the video ({num_frames} frames)")
        if length is not None:
            count = _int_arg(length, 0)
        else:
            stop = num_frames if end is None else _int_arg(end, num_frames)
            count = max(0, -(-(stop - start) // stride))
        if count < 1:
            raise SampleError(f"{self.name}: the frame range selects no frames (start={start}, end={end})")
        frames = start + stride * np.arange(count, dtype=np.int64)
        if self.pad_rule == "none":
            return frames[frames < num_frames]
        return pad_frames(frames, num_frames, self.pad_rule)

    def decode_one(self, chunk: Chunk, row: int, data: Any) -> np.ndarray:
        source = chunk.sources[row] or f"sample {row}"
        encoded = np.asarray(data)
        if encoded.dtype != np.uint8 or encoded.ndim != 1:
            raise SampleError(f"{self.name}: expects encoded bytes (1-D uint8), got {encoded.dtype} {encoded.shape}")
        decoder = VideoDecoder(encoded, source)
        try:
            frames = self.frame_numbers(chunk, row, decoder.index.num_frames)
            shape = (len(frames), *decoder.frame_shape)
            out = chunk.output_buffer(row, shape, np.uint8)
            return decoder.decode(frames, out=out, fill=self.fill)
        finally:
            decoder.close()

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, data: self.decode_one(chunk, row, data))]

    def layout(self, index: int) -> str:
        return "FHWC"


def _int_arg(value: Any, default: int) -> int:
    if value is None:
        return default
    return int(np.asarray(value).reshape(-1)[0])


@fn_function()
def video(
    data: DataNode,
    *,
    frames: Sequence[int] | int | DataNode | None = None,
    start_frame: int | DataNode | None = None,
    end_frame: int | DataNode | None = None,
    sequence_length: int | DataNode | None = None,
    stride: int | DataNode | None = None,
    pad_mode: str = "constant",
    fill_value: int | Sequence[int] = 0,
    build_index: bool = True,
    affine: bool = True,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Decode encoded videos (one whole file per sample) into FHWC uint8 frame sequences.

    H.264, HEVC, VP8, VP9, AV1, MJPEG and what else the installed FFmpeg (PyAV)
    decodes, on the CPU; ``device="mixed"`` decodes on the GPU (NVDEC through
    PyNvVideoCodec).

    Args:
        data: encoded videos, e.g. the first output of ``fn.readers.file``.
        frames: frame numbers to decode, any order, repeats allowed (not with
            the range arguments).
        start_frame: first frame (default 0).
        end_frame: end of the range (exclusive); not with ``sequence_length``.
        sequence_length: number of frames from ``start_frame``.
        stride: step between frames (default 1).
        pad_mode: frames past the end: ``constant`` (default), ``edge``/``repeat``,
            ``reflect``/``reflect_101``, ``symmetric``/``reflect_1001``, ``none``.
        fill_value: value(s) of ``constant`` padding frames (one, or one per channel).
        build_index: accepted for DALI compatibility: an index of keyframes is
            always built (by demuxing, which is cheap).
        affine: accepted (DALI's thread pinning of the mixed backend); ignored.
        device: ``"cpu"`` or ``"mixed"``.
    """
    if frames is not None and any(v is not None for v in (start_frame, end_frame, sequence_length, stride)):
        raise PipelineDefinitionError(
            "decoders.video: frames cannot be combined with start_frame, end_frame, sequence_length or stride"
        )
    if end_frame is not None and sequence_length is not None:
        raise PipelineDefinitionError("decoders.video: give end_frame or sequence_length, not both")
    constants, per_sample = split_arguments(dict(
        frames=frames, start_frame=start_frame, end_frame=end_frame, sequence_length=sequence_length, stride=stride,
    ))
    for key in ("sequence_length", "stride"):
        value = constants.get(key)
        if value is not None and int(value) < 1:
            raise PipelineDefinitionError(f"decoders.video: {key} must be >= 1, got {value}")
    op = VideoDecode(**constants, pad_mode=pad_mode, fill_value=fill_value, name=name)
    return add_node(op, [data], per_sample, device=device)[0]
