"""Video decoding on the GPU (``readers.video`` with ``device="gpu"``, ``decoders.video`` with
``device="mixed"``): NVDEC through ``codecs.nvdec``, into device memory on the stage's stream.

The frame numbers, padding and errors are the CPU operators' (computed from
the CPU index); only the decoding moves to NVDEC. Not yet run on a GPU.
"""

from __future__ import annotations

from typing import Any

from ...codecs.nvdec import NvdecDecoder
from ...codecs.video import build_index
from ...errors import SampleError
from ...operator import Chunk
from ...ops.decoders.video import VideoDecode
from ...ops.readers.video import SequenceDecode, SequenceRequest
from ..context import GpuContext
from .registry import register

__all__ = ["decode_video_gpu", "read_video_gpu"]


def _nvdec(ctx: GpuContext) -> NvdecDecoder:
    device = ctx.device
    return ctx.shared("nvdec", lambda: NvdecDecoder(device.device_id, device.stream.ptr))


def _as_dtype(op: SequenceDecode, frames: Any) -> Any:
    if op.dtype.itemsize == 1:
        return frames
    out = frames.astype(op.dtype)
    return out / 255 if op.normalized else out


@register(SequenceDecode)
def read_video_gpu(op: SequenceDecode, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    if op.image_type != "RGB":
        raise SampleError(f"{op.name}: image_type=YCbCr is decoded on the CPU only; use device='cpu'")
    decoder = _nvdec(ctx)

    def one(row: int, request: Any) -> Any:
        if not isinstance(request, SequenceRequest):
            raise SampleError(f"{op.name}: expected the reader's sequence requests")
        shape = (request.index.height, request.index.width, 3)
        return _as_dtype(op, decoder.decode(request.path, request.frames, request.fill, shape))

    return [chunk.each_sample(one)]


@register(VideoDecode)
def decode_video_gpu(op: VideoDecode, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    decoder = _nvdec(ctx)

    def one(row: int, data: Any) -> Any:
        source = chunk.sources[row] or f"sample {row}"
        index = build_index(data, source)
        frames = op.frame_numbers(chunk, row, index.num_frames)
        shape = (index.height, index.width, 3)
        return decoder.decode_bytes(data, source, frames, op.fill, shape)

    return [chunk.each_sample(one)]
