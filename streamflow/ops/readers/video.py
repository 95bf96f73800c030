"""``readers.video`` and ``experimental.readers.video``: sequences of frames from video files.

The reader indexes every file once when the pipeline is defined (packet
timestamps and keyframes, by demuxing: ``codecs/video.py``), cuts each file
into sequences, and yields per sample a small request (file, frame numbers);
the frames are decoded by the operator that follows it in the graph
(``SequenceDecode``), on the worker threads, seeking to the keyframe before
each sequence and decoding forward. Labels, frame numbers and timestamps come
from the index.

Which sequences (DALI's rules):

* ``experimental.readers.video`` (checked against DALI 2.4's CPU reader):
  sequences start at ``start, start + step, ...`` (``step`` defaults to
  ``stride * sequence_length``) while ``start + stride * sequence_length <=
  end``; with a ``pad_mode`` other than ``none`` one more, padded, sequence
  covers the tail. ``uniform_sample``: one sequence per file, frames
  ``floor(linspace(start, end - 1, sequence_length) + 0.5)``.
* ``readers.video`` (DALI's legacy GPU reader, from its source; DALI runs it
  only on the GPU): sequences while ``start + (sequence_length - 1) * stride
  < end``; ``pad_sequences`` adds every shorter tail sequence, zero-filled,
  with frame numbers and timestamps ``-1`` for the missing frames.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...codecs.video import DecoderCache, VideoIndex, build_index
from ...errors import DecodeError, PipelineDefinitionError, SampleError
from ...graph import DataNode, add_node
from ...operator import Chunk, Operator, SourceBatch
from ...sharding import ShardSpec
from ...types import DataType, Device, ImageType, parse_device, parse_dtype, parse_image_type
from ..arguments import READER, fn_function
from ..decoders.video import check_fill_value, pad_frames, parse_pad_mode
from .file import read_list_lines, sub_folders, walk_files
from .list_source import ListSource

__all__ = ["SequenceDecode", "SequenceRequest", "VideoFileWarning", "VideoReader", "experimental_video", "video"]


class VideoFileWarning(UserWarning):
    """A listed video was left out (it cannot be opened, or its frame range is empty), as DALI does,
    or only its first frames can be read (a truncated file)."""


@dataclass(frozen=True)
class SequenceRequest:
    """What the reader hands the decoder for one sample."""

    path: str
    index: VideoIndex
    frames: np.ndarray  # frame numbers; -1: a padding frame (fill)
    fill: np.ndarray  # uint8 value(s) of padding frames


@dataclass(frozen=True)
class _Entry:
    path: str
    label: int
    start: float = 0.0
    end: float = 0.0


@functools.lru_cache(maxsize=4096)
def _cached_index(path: str, mtime_ns: int, size: int) -> VideoIndex:
    return build_index(path, path)


def index_file(path: str) -> VideoIndex:
    """The index of ``path``, built once per file version (cached by modification time and size)."""
    try:
        st = os.stat(path)
    except OSError as err:
        raise DecodeError(f"cannot open the video: {err.strerror or err}", path) from None
    return _cached_index(path, st.st_mtime_ns, st.st_size)


def _list_entries(op: str, *, filenames: Sequence[str] | None, labels: Sequence[int] | None, file_root: str | None,
                  file_list: str | None) -> list[_Entry]:
    given = [k for k, v in (("filenames", filenames), ("file_root", file_root), ("file_list", file_list)) if v]
    if len(given) != 1:
        raise PipelineDefinitionError(f"{op}: give exactly one of filenames, file_root or file_list (got {given or 'none'})")
    if filenames:
        if isinstance(filenames, str):
            filenames = [filenames]
        names = [os.fsdecode(f) for f in filenames]
        if labels is not None and len(labels) not in (0, len(names)):
            raise PipelineDefinitionError(f"{op}: {len(labels)} labels for {len(names)} files; give one per file")
        values = list(labels) if labels else list(range(len(names)))
        return [_Entry(p, int(x)) for p, x in zip(names, values)]
    if labels is not None:
        raise PipelineDefinitionError(f"{op}: labels go with filenames only")
    if file_root:
        root = os.fsdecode(file_root)
        classes = sub_folders(root, op)
        entries = [_Entry(p, label) for label, c in enumerate(classes) for p in walk_files(os.path.join(root, c), ["*"], True)]
        if not entries:
            raise PipelineDefinitionError(f"{op}: no files under {root!r}; file_root expects one sub-folder per class")
        return entries
    assert file_list is not None
    return _parse_file_list(op, os.fsdecode(file_list))


def _parse_file_list(op: str, file_list: str) -> list[_Entry]:
    lines = read_list_lines(file_list, op)
    base = os.path.dirname(os.path.abspath(file_list))
    entries = []
    for number, line in enumerate(lines, start=1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        try:
            if not 2 <= len(parts) <= 4:
                raise ValueError
            label = int(parts[1])
            start = float(parts[2]) if len(parts) > 2 else 0.0
            end = float(parts[3]) if len(parts) > 3 else 0.0
        except ValueError:
            raise PipelineDefinitionError(
                f"{op}: {file_list}:{number}: expected 'file label [start [end]]', got {line!r}"
            ) from None
        path = parts[0]
        if not os.path.isabs(path) and not os.path.exists(path):  # relative to the list, as a fallback
            path = os.path.join(base, path)
        entries.append(_Entry(path, label, start, end))
    if not entries:
        raise PipelineDefinitionError(f"{op}: file_list {file_list!r} lists no files")
    return entries


@dataclass(frozen=True)
class SequencePlan:
    """How files are cut into sequences (the arguments both readers share, resolved)."""

    sequence_length: int
    stride: int
    step: int
    legacy: bool  # readers.video's rules (else experimental.readers.video's)
    pad_rule: str = "none"  # experimental: DALI's pad_mode rule; legacy: "constant" when pad_sequences
    uniform_sample: bool = False
    file_list_frames: bool = False  # start/end are frame numbers, not seconds
    round_start_up: bool = True
    round_end_up: bool = False

    def frame_range(self, entry: _Entry, index: VideoIndex) -> tuple[int, int]:
        """``[start, end)`` frames of ``entry``'s file (the whole file when start and end are 0)."""
        n = index.num_frames
        if entry.start == 0 and entry.end == 0:
            return 0, n
        start = self._bound(entry.start, index, self.round_start_up, is_end=False)
        end = self._bound(entry.end, index, self.round_end_up, is_end=True)
        return max(start, 0), min(end, n)

    def _bound(self, value: float, index: VideoIndex, up: bool, *, is_end: bool) -> int:
        n = index.num_frames
        if is_end and value == 0:  # "file label start": to the end of the file
            return n
        if self.file_list_frames:
            if self.legacy:  # DALI's legacy reader truncates frame numbers
                return int(value) if value >= 0 else n + int(value)
            frame = n + value if value < 0 else value
            return math.ceil(frame - 1e-9) if up else math.floor(frame + 1e-9)
        if value < 0:  # seconds from the end
            period = index.frame_period or 1.0
            frame = n + value / period
            return math.ceil(frame - 1e-6) if up else math.floor(frame + 1e-6)
        if value > float(index.seconds(np.array([n - 1]))[0]) + 1e-9:
            return n
        return index.frame_at(value, round_up=up)

    def sequences(self, start: int, end: int) -> list[np.ndarray]:
        """The frame numbers of every sequence of ``[start, end)`` (``-1``: padding)."""
        L, stride, step = self.sequence_length, self.stride, self.step
        offsets = stride * np.arange(L, dtype=np.int64)
        out: list[np.ndarray] = []
        if self.uniform_sample:
            picks = np.floor(np.linspace(start, end - 1, L) + 0.5).astype(np.int64)
            return [picks]
        span = (L - 1) * stride + 1 if self.legacy else stride * L
        s = start
        while s + span <= end:
            out.append(s + offsets)
            s += step
        if self.pad_rule != "none":
            tails = range(s, end, step) if self.legacy else ([s] if s < end else [])
            for t in tails:
                out.append(pad_frames(t + offsets, end, self.pad_rule))
        return out


class VideoReader(ListSource):
    """The sequences of a list of videos; outputs requests, [labels], [frame numbers], [timestamps]."""

    def __init__(self, *, op_name: str, entries: list[_Entry], plan: SequencePlan, labels: bool, frame_num: str,
                 timestamps: bool, fill: np.ndarray, shard: ShardSpec, seed: int | None, name: str | None) -> None:
        super().__init__(shard=shard, seed=seed, name=name)
        self.name = op_name  # type: ignore[misc]
        self.plan = plan
        self.fill = fill
        self.with_labels, self.frame_num, self.with_timestamps = labels, frame_num, timestamps
        self.num_outputs = 1 + labels + (frame_num != "none") + timestamps
        self.samples: list[tuple[str, VideoIndex, int, np.ndarray]] = []
        for entry in entries:
            try:
                index = index_file(entry.path)
            except DecodeError as err:
                warnings.warn(f"{op_name}: leaving out {entry.path}: {err.reason}", VideoFileWarning, stacklevel=4)
                continue
            if index.damage is not None:  # read what can be read, and say so
                warnings.warn(f"{op_name}: {entry.path} is damaged, reading its first {index.num_frames} frames: "
                              f"{index.damage}", VideoFileWarning, stacklevel=4)
            start, end = plan.frame_range(entry, index)
            if start >= end:
                warnings.warn(f"{op_name}: leaving out {entry.path}: empty frame range [{start}, {end})",
                              VideoFileWarning, stacklevel=4)
                continue
            for frames in plan.sequences(start, end):
                self.samples.append((entry.path, index, entry.label, frames))
        if not self.samples:
            raise PipelineDefinitionError(
                f"{op_name}: no sequences: every video is shorter than sequence_length={plan.sequence_length} "
                f"x stride={plan.stride} frames, or none could be opened"
            )

    @property
    def num_items(self) -> int:
        return len(self.samples)

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        requests, labels, frame_nums, stamps, sources = [], [], [], [], []
        for i in items.tolist():
            path, index, label, frames = self.samples[i]
            requests.append(SequenceRequest(path, index, frames, self.fill))
            sources.append(path)
            labels.append(np.array([label], dtype=np.int32))
            if self.frame_num == "scalar":
                frame_nums.append(np.array([frames[0]], dtype=np.int32))
            else:
                frame_nums.append(frames.astype(np.int32))
            stamps.append(index.seconds(frames))
        outputs: list[list[Any]] = [requests]
        if self.with_labels:
            outputs.append(labels)
        if self.frame_num != "none":
            outputs.append(frame_nums)
        if self.with_timestamps:
            outputs.append(stamps)
        return SourceBatch(outputs=outputs, sample_ids=ids, sources=sources)


class SequenceDecode(Operator):
    """Decodes the reader's sequence requests into FHWC frames (the reader's first output)."""

    name = "readers.video"
    devices = frozenset({Device.CPU, Device.MIXED})

    def __init__(self, *, op_name: str, image_type: ImageType = ImageType.RGB, dtype: DataType = DataType.UINT8,
                 normalized: bool = False) -> None:
        super().__init__()
        self.name = op_name  # type: ignore[misc]
        self.image_type = "YCbCr" if image_type is ImageType.YCbCr else "RGB"
        self.dtype = np.dtype(dtype.numpy)
        self.normalized = normalized
        self._decoders = DecoderCache()

    def output_channels(self, input_channels: Sequence[int | None]) -> int | None:
        return 3

    def decode_one(self, chunk: Chunk, row: int, request: SequenceRequest) -> np.ndarray:
        decoder = self._decoders.get(request.path, request.index, self.image_type)
        shape = (len(request.frames), *decoder.frame_shape)
        if self.dtype == np.uint8:
            return decoder.decode(request.frames, out=chunk.output_buffer(row, shape, np.uint8), fill=request.fill)
        frames = decoder.decode(request.frames, fill=request.fill)
        out = chunk.output_buffer(row, shape, self.dtype)
        out = np.empty(shape, self.dtype) if out is None else out
        np.multiply(frames, 1 / 255 if self.normalized else 1, out=out, casting="unsafe")
        return out

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def decode(row: int, request: Any) -> np.ndarray:
            if not isinstance(request, SequenceRequest):
                raise SampleError(f"{self.name}: expected the reader's sequence requests")
            return self.decode_one(chunk, row, request)

        return [chunk.each_sample(decode)]

    def layout(self, index: int) -> str:
        return "FHWC"


def _frame_num_policy(value: str | bool | None, op: str) -> str:
    if value in (None, False, "none", "None", "false"):
        return "none"
    if value in (True, "scalar", "true"):
        return "scalar"
    if value == "sequence":
        return "sequence"
    raise PipelineDefinitionError(f"{op}: enable_frame_num must be 'none', 'scalar' or 'sequence', got {value!r}")


def _decode_device(device: str | Device | None) -> Device:
    """The decoder's device: the reader's ``"gpu"`` (DALI's name) decodes in the mixed stage."""
    if device is None:
        return Device.CPU
    parsed = parse_device(device)
    return Device.MIXED if parsed in (Device.GPU, Device.MIXED) else Device.CPU


def _outputs(reader: VideoReader, decode: SequenceDecode, device: Device) -> DataNode | tuple[DataNode, ...]:
    outputs = add_node(reader, [])
    video_node = add_node(decode, [outputs[0]], device=device)[0]
    if len(outputs) == 1:
        return video_node
    return (video_node, *outputs[1:])


def _rgb_or_ycbcr(image_type: ImageType | str, op: str) -> ImageType:
    kind = parse_image_type(image_type)
    if kind not in (ImageType.RGB, ImageType.YCbCr):
        raise PipelineDefinitionError(f"{op}: image_type must be RGB or YCbCr, got {kind.name}")
    return kind


def _check_sizes(op: str, sequence_length: int, stride: int) -> None:
    if sequence_length < 1:
        raise PipelineDefinitionError(f"{op}: sequence_length must be >= 1, got {sequence_length}")
    if stride < 1:
        raise PipelineDefinitionError(f"{op}: stride must be >= 1, got {stride}")


@fn_function(READER)
def video(
    *,
    sequence_length: int,
    filenames: Sequence[str] | str | None = None,
    file_root: str | None = None,
    file_list: str | None = None,
    labels: Sequence[int] | None = None,
    step: int = -1,
    stride: int = 1,
    enable_frame_num: str | bool = "none",
    enable_timestamps: bool = False,
    file_list_frame_num: bool = False,
    file_list_include_preceding_frame: bool = False,
    pad_sequences: bool = False,
    dtype: DataType | str = DataType.UINT8,
    normalized: bool = False,
    image_type: ImageType | str = ImageType.RGB,
    channels: int = 3,
    random_shuffle: bool = False,
    initial_fill: int = 1024,
    shard_id: int | None = None,
    num_shards: int | None = None,
    stick_to_shard: bool = False,
    pad_last_batch: bool = False,
    skip_vfr_check: bool = False,
    additional_decode_surfaces: int = 2,
    seed: int | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode | tuple[DataNode, ...]:
    """Read sequences of ``sequence_length`` frames from video files (DALI's ``readers.video``).

    Returns ``video`` (FHWC), then ``labels`` (int32, shape (1,)) when labels
    are given or the files come from ``file_root``/``file_list``, then
    ``frame_num`` and ``timestamps`` (float64 seconds) when asked for (with
    ``file_list``, or ``filenames`` with ``labels``). One output is returned
    as is, several as a tuple.

    Args:
        sequence_length: frames per sequence.
        filenames: video files (labels: ``labels``, or 0, 1, ... for ``labels=[]``).
        file_root: one sub-folder per class (label = sorted index).
        file_list: lines ``file label [start [end]]``; start/end in seconds
            (``ceil``/``floor`` to frames, or ``floor``/``ceil`` with
            ``file_list_include_preceding_frame``), or frame numbers with
            ``file_list_frame_num``; negative values count from the end; end exclusive.
        step: frames between sequence starts (default: ``sequence_length * stride``).
        stride: frames between the frames of a sequence.
        enable_frame_num: ``"scalar"`` (first frame, shape (1,)) or ``"sequence"``
            (every frame, ``-1`` for padding).
        enable_timestamps: output each frame's time [s] from the first frame.
        pad_sequences: also yield the shorter sequences at the end of each file,
            padded with zero frames.
        dtype: ``UINT8`` (default) or ``FLOAT``; ``normalized`` divides by 255.
        image_type: ``RGB`` (default) or ``YCbCr``.
        channels: 3 (the only value DALI supports).
        random_shuffle, initial_fill, shard_id, num_shards, stick_to_shard,
            pad_last_batch, seed: as for the other readers (``fn.readers.file``).
        skip_vfr_check, additional_decode_surfaces: accepted; variable frame
            rate videos are read by timestamp, and NVDEC surfaces are managed by
            the GPU decoder.
        device: ``"gpu"`` decodes on the GPU (NVDEC), ``"cpu"`` (default here) with FFmpeg.
        name: the reader's name (``pipe.epoch_size(name)``, iterators' ``reader_name``).
    """
    op = "readers.video"
    _check_sizes(op, sequence_length, stride)
    if channels != 3:
        raise PipelineDefinitionError(f"{op}: channels must be 3, got {channels}")
    out_dtype = parse_dtype(dtype)
    if out_dtype not in (DataType.UINT8, DataType.FLOAT):
        raise PipelineDefinitionError(f"{op}: dtype must be UINT8 or FLOAT, got {out_dtype.name}")
    kind = _rgb_or_ycbcr(image_type, op)
    frame_num = _frame_num_policy(enable_frame_num, op)
    has_labels = labels is not None or bool(file_root) or bool(file_list)
    can_number = bool(file_list) or (bool(filenames) and labels is not None)
    if (frame_num != "none" or enable_timestamps) and not can_number:
        raise PipelineDefinitionError(
            f"{op}: frame numbers and timestamps can be enabled only with file_list, or filenames with labels"
        )
    entries = _list_entries(op, filenames=filenames, labels=labels, file_root=file_root, file_list=file_list)
    plan = SequencePlan(
        sequence_length=sequence_length, stride=stride, step=step if step > 0 else sequence_length * stride,
        legacy=True, pad_rule="constant" if pad_sequences else "none", file_list_frames=file_list_frame_num,
        round_start_up=not file_list_include_preceding_frame, round_end_up=file_list_include_preceding_frame,
    )
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill)
    reader = VideoReader(op_name=op, entries=entries, plan=plan, labels=has_labels, frame_num=frame_num,
                         timestamps=enable_timestamps, fill=np.zeros(1, np.uint8), shard=spec, seed=seed, name=name)
    decode = SequenceDecode(op_name=op, image_type=kind, dtype=out_dtype, normalized=normalized)
    return _outputs(reader, decode, _decode_device(device))


_ROUNDING = {
    "start_down_end_up": (False, True), "start_up_end_down": (True, False), "all_up": (True, True),
    "all_down": (False, False),
}  # fmt: skip


@fn_function(READER)
def experimental_video(
    *,
    sequence_length: int,
    filenames: Sequence[str] | str | None = None,
    file_root: str | None = None,
    file_list: str | None = None,
    labels: Sequence[int] | None = None,
    step: int = -1,
    stride: int = 1,
    enable_frame_num: str | bool = "none",
    enable_timestamps: bool = False,
    file_list_format: str = "timestamps",
    file_list_rounding: str = "start_down_end_up",
    file_list_include_end: bool = True,
    pad_mode: str = "none",
    fill_value: int | Sequence[int] = 0,
    uniform_sample: bool = False,
    image_type: ImageType | str = ImageType.RGB,
    random_shuffle: bool = False,
    initial_fill: int = 1024,
    shard_id: int | None = None,
    num_shards: int | None = None,
    stick_to_shard: bool = False,
    pad_last_batch: bool = False,
    seed: int | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode | tuple[DataNode, ...]:
    """Read sequences of frames from video files (DALI's ``experimental.readers.video``).

    Returns ``video`` (FHWC uint8), then ``labels`` (with ``labels``,
    ``file_root`` or ``file_list``), ``frame_num`` and ``timestamps`` when asked for.

    Args:
        sequence_length: frames per sequence.
        filenames, labels, file_root, file_list: the files, as for ``readers.video``.
        step: frames between sequence starts (default ``stride * sequence_length``).
        stride: frames between the frames of a sequence.
        enable_frame_num: ``"scalar"`` or ``"sequence"`` (padding frames: their
            mapped number, ``-1`` for constant padding).
        enable_timestamps: each frame's time [s] from the first frame (``-1`` for padding).
        file_list_format: ``"timestamps"`` (seconds) or ``"frames"`` (negative: from the end).
        file_list_rounding: ``start_down_end_up`` (default), ``start_up_end_down``,
            ``all_up``, ``all_down``: how times between frames round.
        file_list_include_end: clamp ``end`` to the video (DALI 2.4: the end stays exclusive).
        pad_mode: ``none`` (default: only whole sequences), ``constant``,
            ``edge``/``repeat``, ``reflect``/``reflect_101``, ``symmetric``/``reflect_1001``:
            how the padded tail sequence of each file is filled.
        fill_value: value(s) of ``constant`` padding.
        uniform_sample: one sequence per file, spread evenly over it.
        image_type: ``RGB`` (default) or ``YCbCr``.
        device: ``"cpu"`` or ``"gpu"`` (NVDEC).
    """
    op = "experimental.readers.video"
    _check_sizes(op, sequence_length, stride)
    if file_list_format not in ("timestamps", "frames"):
        raise PipelineDefinitionError(f"{op}: file_list_format must be 'timestamps' or 'frames', got {file_list_format!r}")
    if file_list_rounding not in _ROUNDING:
        raise PipelineDefinitionError(f"{op}: file_list_rounding must be one of {sorted(_ROUNDING)}, got {file_list_rounding!r}")
    if labels is not None and filenames and len(labels) != (1 if isinstance(filenames, str) else len(filenames)):
        raise PipelineDefinitionError(f"{op}: give one label per file ({len(labels)} labels)")
    kind = _rgb_or_ycbcr(image_type, op)
    entries = _list_entries(op, filenames=filenames, labels=labels, file_root=file_root, file_list=file_list)
    up_start, up_end = _ROUNDING[file_list_rounding]
    plan = SequencePlan(
        sequence_length=sequence_length, stride=stride, step=step if step > 0 else sequence_length * stride,
        legacy=False, pad_rule=parse_pad_mode(pad_mode, op), uniform_sample=uniform_sample,
        file_list_frames=file_list_format == "frames", round_start_up=up_start, round_end_up=up_end,
    )
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill)
    has_labels = labels is not None or bool(file_root) or bool(file_list)
    reader = VideoReader(op_name=op, entries=entries, plan=plan, labels=has_labels,
                         frame_num=_frame_num_policy(enable_frame_num, op), timestamps=enable_timestamps,
                         fill=check_fill_value(fill_value, op), shard=spec, seed=seed, name=name)
    decode = SequenceDecode(op_name=op, image_type=kind)
    return _outputs(reader, decode, _decode_device(device))
