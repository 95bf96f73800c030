"""``readers.video_resize`` (and DALI's deprecated ``video_reader_resize``): ``readers.video`` whose
frames are resized as they are read, as DALI 2.4 (GPU only there).

The reader's arguments and outputs are ``fn.readers.video``'s; the resize
arguments are ``fn.resize``'s (applied to every frame of the FHWC sequences;
0 means "not given", DALI's defaults). Here it is that composition: the
video reader, then the resize operator on its first output, so it runs on the
CPU (and on the GPU where ``fn.resize`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import PipelineDefinitionError
from ...graph import DataNode
from ...types import DataType, Device, ImageType, InterpType, Number, parse_interp
from ..arguments import READER, fn_function
from ..resize import resize
from .video import video

__all__ = ["video_resize"]


@fn_function(READER)
def video_resize(
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
    resize_x: Number | DataNode = 0.0,
    resize_y: Number | DataNode = 0.0,
    resize_z: Number | DataNode = 0.0,
    resize_shorter: Number | DataNode = 0.0,
    resize_longer: Number | DataNode = 0.0,
    size: Number | Sequence[Number] | DataNode | None = None,
    mode: str = "default",
    max_size: Number | Sequence[Number] | None = None,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    min_filter: str | InterpType | None = None,
    mag_filter: str | InterpType | None = None,
    antialias: bool = True,
    roi_start: Sequence[Number] | DataNode | None = None,
    roi_end: Sequence[Number] | DataNode | None = None,
    roi_relative: bool = False,
    subpixel_scale: bool = True,
    minibatch_size: int = 32,
    temp_buffer_hint: int = 0,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode | tuple[DataNode, ...]:
    """Video sequences (``fn.readers.video``) with every frame resized (``fn.resize``'s arguments).

    Returns what ``fn.readers.video`` returns, its frames resized.
    """
    interp = parse_interp(interp_type)
    for extra in (min_filter, mag_filter):
        if extra is not None and parse_interp(extra) is not interp:
            raise PipelineDefinitionError(
                "readers.video_resize: min_filter/mag_filter different from interp_type are not supported")
    outputs = video(
        sequence_length=sequence_length, filenames=filenames, file_root=file_root, file_list=file_list,
        labels=labels, step=step, stride=stride, enable_frame_num=enable_frame_num,
        enable_timestamps=enable_timestamps, file_list_frame_num=file_list_frame_num,
        file_list_include_preceding_frame=file_list_include_preceding_frame, pad_sequences=pad_sequences,
        dtype=dtype, normalized=normalized, image_type=image_type, channels=channels,
        random_shuffle=random_shuffle, initial_fill=initial_fill, shard_id=shard_id, num_shards=num_shards,
        stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch, skip_vfr_check=skip_vfr_check,
        additional_decode_surfaces=additional_decode_surfaces, seed=seed, device=device, name=name)
    rest: tuple[DataNode, ...] = outputs[1:] if isinstance(outputs, tuple) else ()
    frames = outputs[0] if isinstance(outputs, tuple) else outputs

    def given(value: Any) -> Any:  # DALI's 0.0 defaults mean "not given"
        return None if not isinstance(value, DataNode) and value is not None and float(value) == 0.0 else value

    resized = resize(frames, resize_x=given(resize_x), resize_y=given(resize_y), resize_z=given(resize_z),
                     resize_shorter=given(resize_shorter), resize_longer=given(resize_longer), size=size, mode=mode,
                     max_size=max_size, interp_type=interp, antialias=antialias, roi_start=roi_start,
                     roi_end=roi_end, roi_relative=roi_relative)
    return (resized, *rest) if isinstance(outputs, tuple) else resized
