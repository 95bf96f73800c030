"""Mixed decoding (``decoders.image*`` with ``device='mixed'``): nvImageCodec on the stage's stream.

The operator's own logic (windows, errors) with the stage's one GPU decoder
(``codecs.nvimgcodec.GpuImageDecoder``: one per stage and decoder
configuration, batch calls serialized, out-of-memory told apart from bad
data).
"""

from __future__ import annotations

from typing import Any

from ...codecs.nvimgcodec import GpuImageDecoder
from ...operator import Chunk
from ...ops.decoders.image import ImageDecode
from ..context import GpuContext
from .registry import register

__all__ = ["decode_gpu"]


@register(ImageDecode)
def decode_gpu(op: ImageDecode, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    device = ctx.device
    key = ("image-decoder", op.output_type, op.adjust_orientation, op.max_pixels, op.dtype)
    decoder = ctx.shared(key, lambda: GpuImageDecoder(
        device_id=device.device_id, cuda_stream=device.stream.ptr, cpu_threads=ctx.cpu_threads,
        output_type=op.output_type, adjust_orientation=op.adjust_orientation, max_pixels=op.max_pixels,
        dtype=op.dtype,
    ))
    return op.decode(chunk, decoder)
