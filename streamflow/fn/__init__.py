"""The operator functions: each call adds a node to the pipeline graph.

Use them inside a function decorated with ``streamflow.pipeline_def``::

    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True)
    images = fn.decoders.image(jpegs)
    images = fn.resize(images, resize_shorter=256)
"""

from . import decoders, random, readers
from .color import brightness_contrast, color_space_conversion, color_twist, hsv, hue, saturation
from .geometry import random_resized_crop, rotate, transpose, warp_affine
from .image import crop, crop_mirror_normalize, flip, resize
from .misc import cast, normalize
from .sources import external_source

__all__ = [
    "brightness_contrast",
    "cast",
    "color_space_conversion",
    "color_twist",
    "crop",
    "crop_mirror_normalize",
    "decoders",
    "external_source",
    "flip",
    "hsv",
    "hue",
    "normalize",
    "random",
    "random_resized_crop",
    "readers",
    "resize",
    "rotate",
    "saturation",
    "transpose",
    "warp_affine",
]
