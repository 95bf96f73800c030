"""Image operators of ``fn``: resize, crop, flip, crop_mirror_normalize.

Every scalar argument may be a constant or a per-sample ``DataNode``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..graph import DataNode, add_node, split_arguments
from ..ops.crop import Crop, CropSpec
from ..ops.flip import Flip
from ..ops.normalize import CropMirrorNormalize
from ..ops.resize import Resize, ResizeSpec
from ..types import DataType, Device, InterpType, OutOfBoundsPolicy, parse_device

__all__ = ["crop", "crop_mirror_normalize", "flip", "resize"]

Number = float | int


def _place(op: Any, device: str | Device) -> Any:
    op.device = parse_device(device)
    return op


def resize(
    data: DataNode,
    *,
    resize_x: Number | DataNode | None = None,
    resize_y: Number | DataNode | None = None,
    resize_shorter: Number | DataNode | None = None,
    resize_longer: Number | DataNode | None = None,
    size: Sequence[Number] | DataNode | None = None,
    mode: str = "default",
    max_size: Number | Sequence[Number] | None = None,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    antialias: bool = True,
    dtype: DataType | str | None = None,
    roi_start: Sequence[Number] | DataNode | None = None,
    roi_end: Sequence[Number] | DataNode | None = None,
    roi_relative: bool = False,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Resize HWC images.

    Args:
        resize_x: output width; alone, the height keeps the aspect ratio.
        resize_y: output height; alone, the width keeps the aspect ratio.
        resize_shorter: length of the shorter edge (aspect kept).
        resize_longer: length of the longer edge (aspect kept).
        size: ``(height, width)``; a 0 extent keeps the aspect ratio.
        mode: ``default``, ``stretch``, ``not_larger``, ``not_smaller``.
        max_size: cap on the output extent(s).
        interp_type: ``INTERP_NN``, ``INTERP_LINEAR`` (default), ``INTERP_CUBIC``,
            ``INTERP_LANCZOS3``, ``INTERP_GAUSSIAN``.
        antialias: widen the filter when downscaling (on by default, like DALI).
        dtype: output type, ``UINT8`` or ``FLOAT`` (default: the input's).
        roi_start: ``(y, x)`` start of the input region to resize.
        roi_end: ``(y, x)`` end of the input region (before start: flipped).
        roi_relative: the roi is given as fractions of the input size.
        device: ``"cpu"`` or ``"gpu"``.
    """
    constants, per_sample = split_arguments(dict(
        resize_x=resize_x, resize_y=resize_y, resize_shorter=resize_shorter,
        resize_longer=resize_longer, size=size, roi_start=roi_start, roi_end=roi_end,
    ))
    spec = ResizeSpec.from_args(
        **constants, mode=mode, max_size=max_size, interp_type=interp_type,
        antialias=antialias, dtype=dtype, roi_relative=roi_relative,
    )
    if not per_sample and not any(
        v is not None for v in (spec.resize_x, spec.resize_y, spec.resize_shorter, spec.resize_longer, spec.size)
    ):
        from ..errors import PipelineDefinitionError

        raise PipelineDefinitionError(
            "resize: say what size to produce (resize_x, resize_y, resize_shorter, resize_longer or size)"
        )
    return add_node(_place(Resize(spec, name=name), device), [data], per_sample)[0]


def crop(
    data: DataNode,
    *,
    crop: Sequence[Number] | Number | None = None,
    crop_h: Number | DataNode | None = None,
    crop_w: Number | DataNode | None = None,
    crop_pos_x: Number | DataNode = 0.5,
    crop_pos_y: Number | DataNode = 0.5,
    out_of_bounds_policy: str | OutOfBoundsPolicy = "error",
    fill_values: Number | Sequence[Number] = 0,
    rounding: str = "round",
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Cut a window out of HWC images.

    Args:
        crop: ``(height, width)`` of the window (or crop_h / crop_w).
        crop_pos_x: relative horizontal position, 0 = left, 0.5 = centre, 1 = right.
        crop_pos_y: relative vertical position.
        out_of_bounds_policy: ``error``, ``pad`` (with ``fill_values``) or ``trim_to_shape``.
        fill_values: padding value, one or one per channel.
        rounding: anchor rounding, ``round`` (halves away from zero) or ``truncate``.
    """
    constants, per_sample = split_arguments(dict(crop_h=crop_h, crop_w=crop_w, crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y))
    spec = CropSpec.from_args(
        "crop", crop=crop, crop_h=constants.get("crop_h"), crop_w=constants.get("crop_w"),
        crop_pos_x=constants.get("crop_pos_x", 0.5), crop_pos_y=constants.get("crop_pos_y", 0.5),
        rounding=rounding, out_of_bounds_policy=out_of_bounds_policy, fill_values=fill_values,
    )
    if not spec.active and ("crop_h" in per_sample or "crop_w" in per_sample):
        spec = CropSpec(crop_h=1.0, crop_w=1.0, pos_x=spec.pos_x, pos_y=spec.pos_y, rounding=spec.rounding,
                        policy=spec.policy, fill_values=spec.fill_values)
    return add_node(_place(Crop(spec, name=name), device), [data], per_sample)[0]


def flip(
    data: DataNode,
    *,
    horizontal: int | DataNode = 1,
    vertical: int | DataNode = 0,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Mirror images: ``horizontal=1`` flips left-right, ``vertical=1`` top-bottom."""
    constants, per_sample = split_arguments(dict(horizontal=horizontal, vertical=vertical))
    producer = data.producer.op
    layout = producer.layout(data.index) if hasattr(producer, "layout") else "HWC"
    op = Flip(constants.get("horizontal", 1), constants.get("vertical", 0), layout=layout, name=name)
    return add_node(_place(op, device), [data], per_sample)[0]


def crop_mirror_normalize(
    data: DataNode,
    *,
    crop: Sequence[Number] | Number | None = None,
    crop_h: Number | DataNode | None = None,
    crop_w: Number | DataNode | None = None,
    crop_pos_x: Number | DataNode = 0.5,
    crop_pos_y: Number | DataNode = 0.5,
    mean: Number | Sequence[Number] | DataNode = 0.0,
    std: Number | Sequence[Number] | DataNode = 1.0,
    scale: float = 1.0,
    shift: float = 0.0,
    mirror: int | DataNode = 0,
    dtype: DataType | str = DataType.FLOAT,
    output_layout: str = "CHW",
    pad_output: bool = False,
    out_of_bounds_policy: str | OutOfBoundsPolicy = "error",
    fill_values: Number | Sequence[Number] = 0,
    rounding: str = "round",
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Crop, mirror and normalize HWC images: ``scale * (x - mean) / std + shift``.

    Args:
        crop: ``(height, width)`` of the crop window (none: the whole image).
        mean: per-channel mean (or one value).
        std: per-channel standard deviation (or one value).
        scale: multiplier applied after normalizing.
        shift: value added last.
        mirror: 1 to flip the sample horizontally (per sample:
            ``mirror=fn.random.coin_flip()``).
        dtype: ``FLOAT`` (default), ``FLOAT16`` or ``UINT8``.
        output_layout: ``CHW`` (default) or ``HWC``.
        pad_output: pad channels to a power of two with zeros (3 -> 4).
        out_of_bounds_policy: ``error``, ``pad`` or ``trim_to_shape``.
        fill_values: value(s) of padded pixels.
    """
    constants, per_sample = split_arguments(dict(
        crop_h=crop_h, crop_w=crop_w, crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y, mean=mean, std=std, mirror=mirror,
        scale=scale, shift=shift,
    ))
    spec = CropSpec.from_args(
        "crop_mirror_normalize", crop=crop, crop_h=constants.get("crop_h"), crop_w=constants.get("crop_w"),
        crop_pos_x=constants.get("crop_pos_x", 0.5), crop_pos_y=constants.get("crop_pos_y", 0.5),
        rounding=rounding, out_of_bounds_policy=out_of_bounds_policy, fill_values=fill_values,
    )
    op = CropMirrorNormalize(
        spec, mean=constants.get("mean", 0.0), std=constants.get("std", 1.0),
        scale=constants.get("scale", 1.0), shift=constants.get("shift", 0.0),
        dtype=dtype, output_layout=output_layout, pad_output=pad_output, mirror=constants.get("mirror", 0), name=name,
    )
    return add_node(_place(op, device), [data], per_sample)[0]
