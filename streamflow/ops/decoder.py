"""``decoders.image``: encoded bytes to HWC uint8 images (nvImageCodec)."""

from __future__ import annotations

from typing import Any

from ..codecs.nvimgcodec import ImageDecoder
from ..errors import DecodeError
from ..types import Device, ImageType
from .base import Chunk, Operator

__all__ = ["ImageDecode"]


class ImageDecode(Operator):
    """Decodes the chunk's images in one nvImageCodec call on the worker thread."""

    name = "decoders.image"

    def __init__(
        self,
        *,
        device: Device = Device.CPU,
        output_type: ImageType = ImageType.RGB,
        adjust_orientation: bool = True,
        max_pixels: int | None = 128_000_000,
        name: str | None = None,
    ) -> None:
        super().__init__(device=device, name=name)
        self.output_type = output_type
        self.adjust_orientation = adjust_orientation
        self.max_pixels = max_pixels
        self._decoder: ImageDecoder | None = None

    def _get_decoder(self) -> ImageDecoder:
        # Built on first use (the decoder keeps one nvImageCodec instance per thread).
        if self._decoder is None:
            device = Device.CPU if self.device is Device.CPU else Device.MIXED
            self._decoder = ImageDecoder(
                device, output_type=self.output_type, adjust_orientation=self.adjust_orientation,
                max_pixels=self.max_pixels,
            )
        return self._decoder

    def run(self, chunk: Chunk) -> list[list[Any]]:
        results = self._get_decoder().decode_batch(chunk.inputs[0], chunk.sources)
        out: list[Any] = []
        for row, result in enumerate(results):
            if isinstance(result, DecodeError):
                chunk.fail(row, result)
                out.append(None)
            else:
                out.append(result)
        return [out]

    def layout(self, index: int) -> str:
        return "HWC"
