"""Mixed decoding (``decoders.image*`` with ``device='mixed'``): nvImageCodec on the stage's stream.
"""

from __future__ import annotations

from typing import Any

from ...codecs.nvimgcodec import ImageDecoder
from ...operator import Chunk
from ...ops.decoders.image import ImageDecode
from ...types import Device
from ..context import GpuContext
from .registry import register

__all__ = ["MixedImageDecoder", "decode_gpu"]


class MixedImageDecoder(ImageDecoder):
    """``ImageDecoder(Device.MIXED)`` bound to a stage: its device, stream and CPU threads.

    The nvImageCodec decoder tries the hardware JPEG engine (A100/H100), then
    the CUDA decoder, then hybrid CPU/GPU, then the CPU, per image. One
    decoder per worker thread (the base class keeps them thread-local).
    """

    def __init__(self, *, device_id: int, cuda_stream: int, cpu_threads: int, **kw: Any) -> None:
        super().__init__(Device.MIXED, device_id=device_id, **kw)
        self._stream = cuda_stream
        self._cpu_threads = max(1, cpu_threads)

    def _make_gpu_decoder(self, nv: Any) -> Any:
        backends = [
            nv.Backend(nv.BackendKind.HW_GPU_ONLY),
            nv.Backend(nv.BackendKind.GPU_ONLY),
            nv.Backend(nv.BackendKind.HYBRID_CPU_GPU),
            nv.Backend(nv.BackendKind.CPU_ONLY),
        ]
        return nv.Decoder(device_id=self.device_id, max_num_cpu_threads=self._cpu_threads, backends=backends)

    def decode_batch(self, data: Any, sources: Any, *, regions: Any = None, cuda_stream: int = 0) -> list[Any]:
        return super().decode_batch(data, sources, regions=regions, cuda_stream=cuda_stream or self._stream)


@register(ImageDecode)
def decode_gpu(op: ImageDecode, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    """Mixed decoding: the operator's own logic (windows, errors) with a GPU decoder."""
    if not isinstance(op._decoder, MixedImageDecoder):
        op._decoder = MixedImageDecoder(
            device_id=ctx.device.device_id, cuda_stream=ctx.device.stream.ptr, cpu_threads=ctx.cpu_threads,
            output_type=op.output_type, adjust_orientation=op.adjust_orientation, max_pixels=op.max_pixels,
        )
    return op.run(chunk)
