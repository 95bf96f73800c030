"""Codecs: image decoding through nvImageCodec.

Importing this package does not import ``nvidia.nvimgcodec``; the first
``ImageDecoder`` built does.
"""

from .nvimgcodec import ImageDecoder, detect_format, jpeg_exif_orientation, rgb_to_ycbcr

__all__ = ["ImageDecoder", "detect_format", "jpeg_exif_orientation", "rgb_to_ycbcr"]
