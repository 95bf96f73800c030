"""``color_space_conversion``: uint8 RGB, BGR, GRAY and YCbCr conversions (CPU).

Measured against DALI 2.4.0 CPU on the four demo photos (see ``ops/color.py``
for the method):

* ``color_space_conversion``: RGB<->BGR, GRAY->RGB/BGR bit-identical; the
  others max |diff| 1 (RGB->GRAY 0.01 % of values, RGB->YCbCr 1 %,
  YCbCr->RGB 1.5 %, YCbCr->GRAY 0.8 %, GRAY->YCbCr 0.4 %), at values within
  about 0.03 of a tie (checked on one photo): DALI's CPU conversion runs through OpenCV, whose
  fixed-point arithmetic rounds those differently from these float32
  formulas (DALI's own BT.601 kernel formulas, as on its GPU path).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node
from ..operator import Chunk
from ..types import (
    Device,
    ImageType,
    parse_image_type,
)
from .arguments import fn_function
from .color import F32, ColorOp, convert_to

__all__ = ["ColorSpaceConversion", "color_space_conversion", "convert_color", "csc_constants"]


# --- color space conversion (uint8, DALI's kernels) -----------------------
_BT601_Y = np.array([0.257, 0.504, 0.098], dtype=F32)


_BT601_CB = np.array([-0.148, -0.291, 0.439], dtype=F32)


_BT601_CR = np.array([0.439, -0.368, -0.071], dtype=F32)


_GRAY = np.array([0.299, 0.587, 0.114], dtype=F32)


# YCbCr -> RGB: r = 1.164 (y - 16) + 1.596 cr', g = ... - 0.813 cr' - 0.392 cb', b = ... + 2.017 cb'
_YCC_RGB = np.array([1.164, 1.596, 0.813, 0.392, 2.017], dtype=F32)


_Y_SUM = F32(F32(0.257) + F32(0.504) + F32(0.098))


_CHANNELS = {ImageType.RGB: 3, ImageType.BGR: 3, ImageType.YCbCr: 3, ImageType.GRAY: 1}


def csc_constants() -> np.ndarray:
    """The float32 constants of these formulas, in the order the GPU kernel reads them (``kernels/color.cu``).

    GRAY (3), Y (3), Cb (3), Cr (3) weights, the YCbCr -> RGB factors 1.164,
    1.596, 0.813, 0.392, 2.017, the sum of the Y weights and its inverse.
    """
    return np.concatenate([_GRAY, _BT601_Y, _BT601_CB, _BT601_CR, _YCC_RGB,
                           np.array([_Y_SUM, F32(1) / _Y_SUM], dtype=F32)]).astype(F32)


def _dot(rgb: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return r * coeffs[0] + g * coeffs[1] + b * coeffs[2]


def _u8(values: np.ndarray) -> np.ndarray:
    return convert_to(values, np.dtype(np.uint8))


def _rgb_to_ycbcr(rgb: np.ndarray) -> np.ndarray:
    x = rgb.astype(F32)
    gray = (rgb[..., 0] == rgb[..., 1]) & (rgb[..., 0] == rgb[..., 2])
    y = _u8(_dot(x, _BT601_Y) + F32(16))
    cb = np.where(gray, np.uint8(128), _u8(_dot(x, _BT601_CB) + F32(128)))
    cr = np.where(gray, np.uint8(128), _u8(_dot(x, _BT601_CR) + F32(128)))
    return np.stack([y, cb, cr], axis=-1)


def _ycbcr_to_rgb(ycc: np.ndarray) -> np.ndarray:
    x = ycc.astype(F32)
    k = _YCC_RGB
    ty = k[0] * (x[..., 0] - F32(16))
    tb = x[..., 1] - F32(128)
    tr = x[..., 2] - F32(128)
    r = _u8(ty + k[1] * tr)
    g = _u8(ty - k[2] * tr - k[3] * tb)
    b = _u8(ty + k[4] * tb)
    return np.stack([r, g, b], axis=-1)


def convert_color(image: np.ndarray, src: ImageType, dst: ImageType) -> np.ndarray:
    """uint8 color conversion between RGB, BGR, GRAY (full range, BT.601 luma) and YCbCr (BT.601, 16-235)."""
    if src == dst:
        return image.copy()
    if src is ImageType.BGR:
        image, src = image[..., ::-1], ImageType.RGB
        if dst is ImageType.RGB:
            return np.ascontiguousarray(image)
    if src is ImageType.RGB:
        if dst is ImageType.BGR:
            return np.ascontiguousarray(image[..., ::-1])
        if dst is ImageType.GRAY:
            return _u8(_dot(image.astype(F32), _GRAY))[..., None]
        return _rgb_to_ycbcr(image)
    if src is ImageType.GRAY:
        g = image[..., 0]
        if dst in (ImageType.RGB, ImageType.BGR):
            return np.repeat(g[..., None], 3, axis=-1)
        y = _u8(g.astype(F32) * _Y_SUM + F32(16))
        return np.stack([y, np.full_like(y, 128), np.full_like(y, 128)], axis=-1)
    # src is YCbCr
    if dst is ImageType.GRAY:
        return _u8((image[..., 0].astype(F32) - F32(16)) * (F32(1) / _Y_SUM))[..., None]
    rgb = _ycbcr_to_rgb(image)
    return rgb if dst is ImageType.RGB else np.ascontiguousarray(rgb[..., ::-1])


class ColorSpaceConversion(ColorOp):
    """``color_space_conversion(image_type, output_type)`` for uint8 HWC images."""

    name = "color_space_conversion"
    devices = frozenset({Device.CPU, Device.GPU})

    def output_channels(self, input_channels: Sequence[int | None]) -> int | None:
        return _CHANNELS[self.output_type]

    def __init__(self, image_type: Any, output_type: Any, *, name: str | None = None) -> None:
        super().__init__(name=name)
        try:
            self.image_type = parse_image_type(image_type)
            self.output_type = parse_image_type(output_type)
        except ValueError as e:
            raise PipelineDefinitionError(f"color_space_conversion: {e}") from None
        for what, t in (("image_type", self.image_type), ("output_type", self.output_type)):
            if t not in _CHANNELS:
                raise PipelineDefinitionError(
                    f"color_space_conversion: {what} must be RGB, BGR, GRAY or YCbCr, got {t.name}"
                )

    def process(self, chunk: Chunk, row: int, image: Any) -> np.ndarray:
        image = self._check_image(image, _CHANNELS[self.image_type])
        if image.dtype != np.uint8:
            raise SampleError(f"color_space_conversion accepts only uint8 images (like DALI), got {image.dtype}")
        return convert_color(image, self.image_type, self.output_type)

@fn_function()
def color_space_conversion(
    data: DataNode,
    *,
    image_type: ImageType | str,
    output_type: ImageType | str,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Convert uint8 HWC images between RGB, BGR, GRAY (1 channel) and YCbCr (ITU-R BT.601)."""
    op = ColorSpaceConversion(image_type, output_type, name=name)
    return add_node(op, [data], device=device)[0]
