"""``decoders.image_crop``: decode a fixed-size window at a relative position.

``image_crop``: ``crop=(h, w)`` at ``crop_pos_x/y`` (anchor
``round(pos * (extent - crop))``, halves away from zero; ``rounding``), as
``fn.crop``; a window larger than the image is an error naming the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import PipelineDefinitionError
from ...graph import DataNode, add_node, split_arguments
from ...operator import Chunk
from ...types import (
    DataType,
    Device,
    ImageType,
    Number,
)
from ..arguments import DECODER, fn_function
from ..crop import CropSpec, crop_window
from .image import DecoderCrop, Window, decoder_arguments

__all__ = ["ImageCrop", "image_crop"]


class ImageCrop(DecoderCrop):
    """Decodes a fixed-size window at a relative position."""

    name = "decoders.image_crop"
    per_sample_args = frozenset({"crop_h", "crop_w", "crop_pos_x", "crop_pos_y"})

    def __init__(self, spec: CropSpec, **kw: Any) -> None:
        super().__init__(**kw)
        self.spec = spec

    def window(self, chunk: Chunk, row: int, height: int, width: int) -> Window:
        s = self.spec
        crop_h = chunk.arg("crop_h", row, s.crop_h)
        crop_w = chunk.arg("crop_w", row, s.crop_w)
        return crop_window(
            height, width,
            None if crop_h is None else float(crop_h), None if crop_w is None else float(crop_w),
            float(chunk.arg("crop_pos_y", row, s.pos_y)), float(chunk.arg("crop_pos_x", row, s.pos_x)),
            s.rounding,
        )

@fn_function(DECODER)
def image_crop(
    data: DataNode,
    *,
    crop: Sequence[Number] | Number | None = None,
    crop_h: Number | DataNode | None = None,
    crop_w: Number | DataNode | None = None,
    crop_pos_x: Number | DataNode = 0.5,
    crop_pos_y: Number | DataNode = 0.5,
    rounding: str = "round",
    device: str | Device | None = None,
    output_type: str | ImageType = ImageType.RGB,
    dtype: str | DataType = DataType.UINT8,
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
    op = ImageCrop(spec, **decoder_arguments(output_type, adjust_orientation, max_pixels, name, dtype))
    return add_node(op, [data], per_sample, device=device)[0]
