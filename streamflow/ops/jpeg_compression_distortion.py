"""``jpeg_compression_distortion``: JPEG artifacts by encoding and decoding RGB images (DALI's operator).

DALI's CPU operator encodes each HWC uint8 RGB image with libjpeg (through
OpenCV: 4:2:0 chroma subsampling, the standard quantisation tables scaled by
``quality``) and decodes it again. Pillow uses the same libjpeg(-turbo)
settings, so encoding and decoding with Pillow gives DALI's pixels: identical
on the recorded photo crops for qualities 1, 10, 50, 95 and 100
(``tests/unit/ops/test_jpeg_compression_distortion.py``). ``quality`` is
clamped to 1..100 and may be per sample. Needs Pillow
(``pip install 'streamflow[augment]'``); Pillow releases the GIL while coding.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["JpegCompressionDistortion", "jpeg_compression_distortion", "jpeg_roundtrip"]


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError as exc:
        raise MissingDependencyError("pillow", "augment", "jpeg_compression_distortion") from exc
    return Image


def jpeg_roundtrip(image: np.ndarray, quality: int) -> np.ndarray:
    """``image`` (HWC uint8 RGB) encoded as a JPEG of ``quality`` (clamped to 1..100) and decoded."""
    pil = _pillow()
    q = int(min(max(int(quality), 1), 100))
    buf = io.BytesIO()
    pil.fromarray(np.ascontiguousarray(image), mode="RGB").save(buf, format="JPEG", quality=q)
    buf.seek(0)
    with pil.open(buf) as decoded:
        return np.asarray(decoded.convert("RGB"))


class JpegCompressionDistortion(Operator):
    """JPEG encode + decode per sample (see the module docstring)."""

    name = "jpeg_compression_distortion"
    per_sample_args = frozenset({"quality"})
    keeps_channels = True

    def __init__(self, quality: int = 50, *, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        if not isinstance(quality, (int, np.integer)) or isinstance(quality, bool):
            raise PipelineDefinitionError(f"jpeg_compression_distortion: quality must be an integer, got {quality!r}")
        self.quality = int(quality)
        self._layout = layout
        _pillow()  # fail where the pipeline is defined, not on every sample

    def _one(self, chunk: Chunk, row: int, image: Any) -> np.ndarray:
        image = np.asarray(image)
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
            raise SampleError(f"jpeg_compression_distortion: expected an HWC uint8 RGB image, "
                              f"got shape {image.shape} and type {image.dtype}")
        if 0 in image.shape:
            return image.copy()
        q = np.asarray(chunk.arg("quality", row, self.quality)).reshape(-1)
        if q.size != 1:
            raise SampleError(f"jpeg_compression_distortion: quality must be one number per sample, got {q.size}")
        return jpeg_roundtrip(image, int(q[0]))

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, image: self._one(chunk, row, image))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def jpeg_compression_distortion(
    data: DataNode,
    *,
    quality: int | DataNode = 50,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Introduce JPEG compression artifacts into HWC uint8 RGB images.

    Args:
        quality: JPEG quality, 1 (worst) to 100 (best); values outside are clamped.
    """
    constants, per_sample = split_arguments({"quality": quality})
    op = JpegCompressionDistortion(constants.get("quality", 50), layout=input_layout(data, "jpeg_compression_distortion"),
                                   name=name)
    return add_node(op, [data], per_sample, device=device)[0]
