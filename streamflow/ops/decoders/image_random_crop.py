"""``decoders.image_random_crop``: decode a random window (DALI's random-crop draw).

``image_random_crop``: the random-crop draw of ``ops/random_crop_window.py``
(``random_area``, ``random_aspect_ratio``, ``num_attempts``), one per sample,
a pure function of (seed, operator, epoch, sample id).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...graph import DataNode, add_node
from ...operator import Chunk
from ...types import (
    DataType,
    Device,
    ImageType,
)
from ..arguments import DECODER, fn_function
from ..random_crop_window import RandomCropParams, sample_window
from .image import DecoderCrop, Window, decoder_arguments

__all__ = ["ImageRandomCrop", "image_random_crop"]


class ImageRandomCrop(DecoderCrop):
    """Decodes a random window of each image (DALI's random-crop draw)."""

    name = "decoders.image_random_crop"

    def __init__(self, params: RandomCropParams, *, seed: int | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.params = params
        self.seed = seed

    def window(self, chunk: Chunk, row: int, height: int, width: int) -> Window:
        return sample_window(chunk, row, height, width, self.params, self.seed).window

@fn_function(DECODER)
def image_random_crop(
    data: DataNode,
    *,
    device: str | Device | None = None,
    output_type: str | ImageType = ImageType.RGB,
    dtype: str | DataType = DataType.UINT8,
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
    op = ImageRandomCrop(params, seed=seed, **decoder_arguments(output_type, adjust_orientation, max_pixels, name, dtype))
    return add_node(op, [data], device=device)[0]
