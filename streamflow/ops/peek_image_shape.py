"""``peek_image_shape``: the shape an encoded image decodes to, from its header only (as DALI 2.4).

``[H, W, C]``: H and W after the EXIF orientation (``adjust_orientation``,
JPEG), C of ``image_type`` (3 for RGB/BGR/YCbCr, 1 for GRAY, the stored
channels for ANY_DATA), converted to ``dtype`` (default int64). A file whose
header cannot be read fails with an error naming it.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..codecs.nvimgcodec import ImageDecoder
from ..errors import DecodeError, SampleError
from ..graph import DataNode, add_node, require_node
from ..operator import Chunk, Operator
from ..types import DataType, Device, ImageType, parse_dtype, parse_image_type
from .arguments import fn_function

__all__ = ["PeekImageShape", "peek_image_shape"]


class PeekImageShape(Operator):
    """Reads ``[H, W, C]`` of each encoded image from its header."""

    name = "peek_image_shape"

    def __init__(self, *, dtype: Any = DataType.INT64, image_type: Any = ImageType.RGB,
                 adjust_orientation: bool = True, name: str | None = None) -> None:
        super().__init__(name=name)
        self.out_dtype = parse_dtype(dtype).numpy
        self.image_type = parse_image_type(image_type) if isinstance(image_type, str) else image_type
        self.adjust_orientation = bool(adjust_orientation)
        self._local = threading.local()  # nvImageCodec objects are not shared between threads

    def _decoder(self) -> ImageDecoder:
        decoder = getattr(self._local, "decoder", None)
        if decoder is None:
            decode_as = ImageType.RGB if self.image_type is ImageType.ANY_DATA else self.image_type
            decoder = self._local.decoder = ImageDecoder(
                output_type=decode_as, adjust_orientation=self.adjust_orientation, max_pixels=None)
        return decoder

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, data: Any) -> np.ndarray:
            raw = np.asarray(data)
            if raw.dtype != np.uint8 or raw.ndim != 1:
                raise SampleError(f"peek_image_shape: expects encoded bytes (1-D uint8), got {raw.dtype} {raw.shape}")
            try:
                shape = self._decoder().peek_shape(raw, chunk.sources[row],
                                                   stored_channels=self.image_type is ImageType.ANY_DATA)
            except DecodeError as err:
                raise SampleError(f"peek_image_shape: {err.reason}", chunk.sources[row]) from None
            return np.asarray(shape).astype(self.out_dtype)

        return [chunk.each_sample(one)]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_local", None)
        return state


@fn_function()
def peek_image_shape(
    data: DataNode,
    *,
    dtype: DataType | str = DataType.INT64,
    image_type: ImageType | str = ImageType.RGB,
    adjust_orientation: bool = True,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """The shape ``[H, W, C]`` that each encoded image decodes to, read from its header only.

    Args:
        dtype: type of the output (default ``INT64``).
        image_type: the colour format it would be decoded to (C: 3, 1 for GRAY,
            the stored channels for ANY_DATA).
        adjust_orientation: apply the EXIF orientation (JPEG) to H and W.
    """
    op = PeekImageShape(dtype=dtype, image_type=image_type, adjust_orientation=adjust_orientation, name=name)
    return add_node(op, [require_node(data, "peek_image_shape")], device=device)[0]
