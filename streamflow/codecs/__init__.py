"""Codecs: image decoding through nvImageCodec, with CPU fallback decoders.

Importing this package does not import ``nvidia.nvimgcodec``, Pillow or
tifffile; the first ``ImageDecoder`` built imports nvImageCodec, the first
fallback decode the library it needs.
"""

from .convert import Native, convert_dtype, rgb_to_ycbcr, to_output
from .headers import Header, detect_format, inspect, jpeg_exif_orientation
from .nvimgcodec import ImageDecoder

__all__ = [
    "Header",
    "ImageDecoder",
    "Native",
    "convert_dtype",
    "detect_format",
    "inspect",
    "jpeg_exif_orientation",
    "rgb_to_ycbcr",
    "to_output",
]
