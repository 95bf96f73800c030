"""``decoders.image``: encoded bytes to HWC images (nvImageCodec, with Pillow and
tifffile as CPU fallbacks), and ``DecoderCrop``, the base of the decoders
that decode one window per sample.

Output semantics (``output_type``, ``dtype``, EXIF orientation) and the
per-format checks against Pillow and DALI 2.4 are in ``docs/decoding.md``;
the images each decoder produced are counted in ``pipe.stats().decoded_by``.

Each reads the oriented image size from the header (``ImageDecoder.peek_shape``),
computes the window, and decodes it (``decode_batch(regions=...)``). For JPEG
to RGB/BGR/GRAY/YCbCr that is an nvImageCodec region decode, which reads and
converts only the window's pixels; other images are decoded whole and cut.
Either way the result equals decoding the whole image and slicing the window,
bit for bit (EXIF orientation included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...codecs.convert import DTYPES
from ...codecs.nvimgcodec import ImageDecoder
from ...errors import DecodeError, PipelineDefinitionError, SampleError
from ...graph import DataNode, add_node
from ...operator import Chunk, Operator
from ...types import (
    DataType,
    Device,
    ImageType,
    parse_dtype,
    parse_image_type,
)
from ..arguments import DECODER, fn_function

__all__ = ["DecoderCrop", "ImageDecode", "Window", "decoder_arguments", "image"]


class ImageDecode(Operator):
    """Decodes the chunk's images in one nvImageCodec call on the worker thread."""

    name = "decoders.image"
    devices = frozenset({Device.CPU, Device.MIXED})

    def output_channels(self, input_channels: Sequence[int | None]) -> int | None:
        if self.output_type is ImageType.ANY_DATA:
            return None  # as stored: known per file only
        return 1 if self.output_type is ImageType.GRAY else 3

    def __init__(
        self,
        *,
        device: Device = Device.CPU,
        output_type: ImageType = ImageType.RGB,
        adjust_orientation: bool = True,
        max_pixels: int | None = 128_000_000,
        dtype: DataType = DataType.UINT8,
        name: str | None = None,
    ) -> None:
        super().__init__(device=device, name=name)
        self.output_type = output_type
        self.adjust_orientation = adjust_orientation
        self.max_pixels = max_pixels
        self.dtype = dtype
        self._decoder: ImageDecoder | None = None

    def _cpu_decoder(self) -> ImageDecoder:
        # Built on first use (the decoder keeps one nvImageCodec instance per thread).
        if self._decoder is None:
            self._decoder = ImageDecoder(
                Device.CPU, output_type=self.output_type, adjust_orientation=self.adjust_orientation,
                max_pixels=self.max_pixels, dtype=self.dtype,
            )
        return self._decoder

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return self.decode(chunk, self._cpu_decoder())

    def decode(self, chunk: Chunk, decoder: ImageDecoder) -> list[list[Any]]:
        """Decode the chunk's images with ``decoder`` (the CPU one, or a GPU stage's)."""
        names: list[str] = []
        results = decoder.decode_batch(chunk.inputs[0], chunk.sources, decoded_by=names)
        out: list[Any] = []
        for row, result in enumerate(results):
            if isinstance(result, DecodeError):
                chunk.fail(row, result)
                out.append(None)
            else:
                out.append(result)
        count_decoders(chunk, names)
        return [out]

    def layout(self, index: int) -> str:
        return "HWC"

Window = tuple[int, int, int, int]  # (y0, x0, h, w)


class DecoderCrop(ImageDecode):
    """A decoder that decodes one window per sample (subclasses say which)."""

    name = "decoders.image_crop_base"

    def window(self, chunk: Chunk, row: int, height: int, width: int) -> Window:
        raise NotImplementedError

    def decode(self, chunk: Chunk, decoder: ImageDecoder) -> list[list[Any]]:
        data = chunk.inputs[0]
        regions: list[tuple[int, int, int, int] | None] = []
        failed: dict[int, SampleError] = {}
        for row, raw in enumerate(data):
            source = chunk.sources[row]
            try:
                height, width, _ = decoder.peek_shape(raw, source)
                y0, x0, h, w = self.window(chunk, row, height, width)
            except DecodeError as err:
                failed[row] = err
                regions.append(None)
                continue
            except (SampleError, ValueError) as err:
                reason = err.reason if isinstance(err, SampleError) else str(err)
                failed[row] = SampleError(f"{self.name}: {reason}", source)
                regions.append(None)
                continue
            if h <= 0 or w <= 0 or y0 < 0 or x0 < 0 or y0 + h > height or x0 + w > width:
                failed[row] = SampleError(
                    f"{self.name}: window {h}x{w} at (y={y0}, x={x0}) does not fit the "
                    f"{height}x{width} image", source,
                )
                regions.append(None)
                continue
            regions.append((y0, x0, y0 + h, x0 + w))
        todo = [row for row in range(len(data)) if row not in failed]
        out: list[Any] = [None] * len(data)
        if todo:
            names: list[str] = []
            results = decoder.decode_batch(
                [data[r] for r in todo], [chunk.sources[r] for r in todo], regions=[regions[r] for r in todo],
                decoded_by=names,
            )
            count_decoders(chunk, names)
            for row, result in zip(todo, results):
                if isinstance(result, DecodeError):
                    failed[row] = result
                else:
                    out[row] = result
        for row, failure in failed.items():
            chunk.fail(row, failure)
        return [out]

def count_decoders(chunk: Chunk, names: list[str]) -> None:
    """Count each decoded image under its decoder, for ``pipe.stats().decoded_by``."""
    for decoder in names:
        if decoder:
            chunk.count("decoded_by:" + decoder)


@fn_function(DECODER)
def image(
    data: DataNode,
    *,
    device: str | Device | None = None,
    output_type: str | ImageType = ImageType.RGB,
    dtype: str | DataType = DataType.UINT8,
    adjust_orientation: bool = True,
    max_pixels: int | None = 128_000_000,
    name: str | None = None,
) -> DataNode:
    """Decode images (JPEG, PNG, BMP, TIFF, WebP, JPEG 2000, PNM) to HWC.

    Args:
        data: encoded images (e.g. the first output of ``fn.readers.file``).
        device: ``"cpu"`` (nvImageCodec's CPU backend) or ``"mixed"`` (GPU decoding).
        output_type: ``types.RGB`` (default), ``types.BGR``, ``types.GRAY``,
            ``types.YCbCr``, or ``types.ANY_DATA`` (the channels as stored:
            gray, gray+alpha, RGBA, CMYK...).
        dtype: the output type, ``types.UINT8`` (default), ``UINT16``, ``UINT32``,
            ``INT8``, ``INT16``, ``INT32`` or ``FLOAT``: samples are scaled to its
            full range (``FLOAT``: 0..1), as DALI does; 16-bit images keep
            their precision in ``UINT16`` and ``FLOAT``.
        adjust_orientation: apply the EXIF orientation (JPEG, PNG, WebP, TIFF).
        max_pixels: refuse images with more pixels than this (decompression
            bombs), before decoding; ``None`` for no limit.
        name: a name for errors and statistics.

    Files nvImageCodec cannot read, or reads wrongly, are decoded by Pillow
    or tifffile (``pip install 'streamflow[decoders]'``). A file that cannot
    be decoded fails with an error naming it, or is skipped and replaced under
    ``on_error="skip"``.
    """
    op = ImageDecode(**decoder_arguments(output_type, adjust_orientation, max_pixels, name, dtype))
    return add_node(op, [data], device=device)[0]


def decoder_arguments(output_type: str | ImageType, adjust_orientation: bool, max_pixels: int | None,
                      name: str | None, dtype: str | DataType = DataType.UINT8) -> dict[str, Any]:
    """The constructor arguments every image decoder shares, validated."""
    try:
        out_dtype = parse_dtype(dtype)
    except ValueError as exc:
        raise PipelineDefinitionError(f"decoders: {exc}") from None
    if out_dtype not in DTYPES:
        raise PipelineDefinitionError(
            f"decoders: dtype {out_dtype.name} is not an image type; expected one of "
            f"{', '.join(d.name for d in DTYPES)}"
        )
    return dict(
        output_type=parse_image_type(output_type), adjust_orientation=adjust_orientation,
        max_pixels=max_pixels, dtype=out_dtype, name=name,
    )
