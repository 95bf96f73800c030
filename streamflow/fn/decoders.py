"""``fn.decoders``: turn encoded images into pixels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import PipelineDefinitionError
from ..graph import DataNode, add_node, split_arguments
from ..ops.crop import CropSpec
from ..ops.decoder import ImageDecode
from ..ops.decoder_crop import ImageCrop, ImageRandomCrop, ImageSlice
from ..ops.random_crop import RandomCropParams
from ..types import Device, ImageType, parse_device, parse_image_type

__all__ = ["image", "image_crop", "image_random_crop", "image_slice"]

Number = float | int


def image(
    data: DataNode,
    *,
    device: str | Device = "cpu",
    output_type: str | ImageType = ImageType.RGB,
    adjust_orientation: bool = True,
    max_pixels: int | None = 128_000_000,
    name: str | None = None,
) -> DataNode:
    """Decode images (JPEG, PNG, BMP, TIFF, WebP, JPEG 2000, PNM) to HWC uint8.

    Args:
        data: encoded images (e.g. the first output of ``fn.readers.file``).
        device: ``"cpu"`` (nvImageCodec's CPU backend) or ``"mixed"`` (GPU decoding).
        output_type: ``types.RGB`` (default), ``types.BGR``, ``types.GRAY``, ``types.YCbCr``.
        adjust_orientation: apply the EXIF orientation.
        max_pixels: refuse images with more pixels than this (decompression
            bombs), before decoding; ``None`` for no limit.
        name: a name for errors and statistics.

    A file that cannot be decoded fails with an error naming it, or is
    skipped and replaced under ``on_error="skip"``.
    """
    op = ImageDecode(
        device=parse_device(device),
        output_type=parse_image_type(output_type),
        adjust_orientation=adjust_orientation,
        max_pixels=max_pixels,
        name=name,
    )
    return add_node(op, [data])[0]


def _decoder_kw(device: str | Device, output_type: str | ImageType, adjust_orientation: bool,
                max_pixels: int | None, name: str | None) -> dict[str, Any]:
    return dict(
        device=parse_device(device), output_type=parse_image_type(output_type),
        adjust_orientation=adjust_orientation, max_pixels=max_pixels, name=name,
    )


def image_random_crop(
    data: DataNode,
    *,
    device: str | Device = "cpu",
    output_type: str | ImageType = ImageType.RGB,
    random_area: Sequence[float] = (0.08, 1.0),
    random_aspect_ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    num_attempts: int = 10,
    seed: int | None = None,
    adjust_orientation: bool = True,
    max_pixels: int | None = 128_000_000,
    name: str | None = None,
) -> DataNode:
    """Decode a random window of each image (only that window is decoded).

    Args:
        random_area: range of the window's area, as a fraction of the image's.
        random_aspect_ratio: range of the window's width / height (log-uniform).
        num_attempts: draws before the fallback (largest window of the clamped
            aspect ratio, placed at random).
        seed: a fixed seed for this operator (default: from the pipeline seed);
            the window is a function of (seed, epoch, sample).

    Other arguments as ``image``.
    """
    params = RandomCropParams.from_args("decoders.image_random_crop", random_area, random_aspect_ratio, num_attempts)
    op = ImageRandomCrop(params, seed=seed, **_decoder_kw(device, output_type, adjust_orientation, max_pixels, name))
    return add_node(op, [data])[0]


def image_crop(
    data: DataNode,
    *,
    crop: Sequence[Number] | Number | None = None,
    crop_h: Number | DataNode | None = None,
    crop_w: Number | DataNode | None = None,
    crop_pos_x: Number | DataNode = 0.5,
    crop_pos_y: Number | DataNode = 0.5,
    rounding: str = "round",
    device: str | Device = "cpu",
    output_type: str | ImageType = ImageType.RGB,
    adjust_orientation: bool = True,
    max_pixels: int | None = 128_000_000,
    name: str | None = None,
) -> DataNode:
    """Decode a ``crop=(h, w)`` window at a relative position (only the window is decoded).

    Args:
        crop: ``(height, width)`` of the window (or ``crop_h`` and ``crop_w``).
        crop_pos_x: relative horizontal position, 0 = left, 0.5 = centre (default), 1 = right.
        crop_pos_y: relative vertical position.
        rounding: anchor rounding, ``round`` (halves away from zero) or ``truncate``.

    A window larger than the image fails with an error naming the file. Other
    arguments as ``image``.
    """
    constants, per_sample = split_arguments(dict(crop_h=crop_h, crop_w=crop_w, crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y))
    spec = CropSpec.from_args(
        "decoders.image_crop", crop=crop, crop_h=constants.get("crop_h"), crop_w=constants.get("crop_w"),
        crop_pos_x=constants.get("crop_pos_x", 0.5), crop_pos_y=constants.get("crop_pos_y", 0.5), rounding=rounding,
    )
    has_h = spec.crop_h is not None or "crop_h" in per_sample
    has_w = spec.crop_w is not None or "crop_w" in per_sample
    if not (has_h and has_w):
        raise PipelineDefinitionError("decoders.image_crop: give the window size, crop=(h, w) or crop_h and crop_w")
    op = ImageCrop(spec, **_decoder_kw(device, output_type, adjust_orientation, max_pixels, name))
    return add_node(op, [data], per_sample)[0]


def image_slice(
    data: DataNode,
    anchor: Sequence[Number] | DataNode,
    shape: Sequence[Number] | DataNode,
    *,
    axes: Sequence[int] | None = None,
    axis_names: str | None = None,
    normalized_anchor: bool = True,
    normalized_shape: bool = True,
    device: str | Device = "cpu",
    output_type: str | ImageType = ImageType.RGB,
    adjust_orientation: bool = True,
    max_pixels: int | None = 128_000_000,
    name: str | None = None,
) -> DataNode:
    """Decode the window ``anchor`` .. ``anchor + shape`` (only the window is decoded).

    Args:
        anchor: start of the window, in the order of ``axes`` (default
            ``(x, y)``); constant or per sample (a ``DataNode``).
        shape: size of the window, same order.
        axes: dimension indices the values refer to; default ``(1, 0)``,
            i.e. ``(x, y)`` as DALI (``(0, 1)`` for ``(y, x)``).
        axis_names: the same as letters, e.g. ``"WH"`` (default) or ``"HW"``;
            takes priority over ``axes``.
        normalized_anchor: float anchors are fractions of the image size (default).
        normalized_shape: float shapes are fractions of the image size (default).
            Integer values are always pixels.

    Start and end are rounded half away from zero: start ``= round(anchor *
    extent)``, end ``= round((anchor + shape) * extent)``. A window outside the
    image fails with an error naming the file. Other arguments as ``image``.
    """
    constants, per_sample = split_arguments(dict(anchor=anchor, shape=shape))
    op = ImageSlice(
        constants.get("anchor"), constants.get("shape"), axes=axes, axis_names=axis_names,
        normalized_anchor=normalized_anchor, normalized_shape=normalized_shape,
        **_decoder_kw(device, output_type, adjust_orientation, max_pixels, name),
    )
    return add_node(op, [data], per_sample)[0]
