"""``fn.decoders``: turn encoded images into pixels."""

from __future__ import annotations

from ..graph import DataNode, add_node
from ..ops.decoder import ImageDecode
from ..types import Device, ImageType, parse_device, parse_image_type

__all__ = ["image"]


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
