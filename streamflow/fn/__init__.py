"""The operator functions, in DALI's namespaces: each call adds a node to the pipeline graph.

Use them inside a function decorated with ``streamflow.pipeline_def``::

    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True)
    images = fn.decoders.image(jpegs)
    images = fn.resize(images, resize_shorter=256)

This package only re-exports: each function lives with its operator in
``streamflow/ops/<name>.py`` (``fn.resize`` in ``ops/resize.py``,
``fn.decoders.image_crop`` in ``ops/decoders/image_crop.py``).
"""

from ..ops.cast import cast
from ..ops.cat import cat, stack
from ..ops.color import brightness, brightness_contrast, color_twist, contrast, hsv, hue, saturation
from ..ops.color_space_conversion import color_space_conversion
from ..ops.constant import constant
from ..ops.crop import crop
from ..ops.crop_mirror_normalize import crop_mirror_normalize
from ..ops.equalize import equalize
from ..ops.external_source import external_source
from ..ops.filter import filter
from ..ops.flip import flip
from ..ops.gaussian_blur import gaussian_blur
from ..ops.grid_mask import grid_mask
from ..ops.jpeg_compression_distortion import jpeg_compression_distortion
from ..ops.laplacian import laplacian
from ..ops.normalize import normalize
from ..ops.permute_batch import permute_batch
from ..ops.python_function import dl_tensor_python_function, python_function, torch_python_function
from ..ops.random_resized_crop import random_resized_crop
from ..ops.reshape import expand_dims, reshape, squeeze
from ..ops.resize import resize
from ..ops.rotate import rotate
from ..ops.shapes import shapes
from ..ops.slice import slice
from ..ops.transpose import transpose
from ..ops.warp_affine import warp_affine
from . import decoders, experimental, noise, random, readers, reductions

# DALI's deprecated names, still used by many pipelines.
image_decoder = decoders.image
image_decoder_crop = decoders.image_crop
image_decoder_random_crop = decoders.image_random_crop
image_decoder_slice = decoders.image_slice
file_reader = readers.file
numpy_reader = readers.numpy

__all__ = [
    "brightness_contrast",
    "cast",
    "cat",
    "color_space_conversion",
    "color_twist",
    "crop",
    "crop_mirror_normalize",
    "decoders",
    "dl_tensor_python_function",
    "expand_dims",
    "external_source",
    "file_reader",
    "flip",
    "hsv",
    "hue",
    "image_decoder",
    "image_decoder_crop",
    "image_decoder_random_crop",
    "image_decoder_slice",
    "normalize",
    "numpy_reader",
    "permute_batch",
    "python_function",
    "random",
    "random_resized_crop",
    "readers",
    "reshape",
    "resize",
    "rotate",
    "saturation",
    "shapes",
    "squeeze",
    "stack",
    "torch_python_function",
    "transpose",
    "warp_affine",
    "brightness",
    "contrast",
    "reductions",
    "filter",
    "gaussian_blur",
    "laplacian",
    "equalize",
    "experimental",
    "grid_mask",
    "jpeg_compression_distortion",
    "noise",
    "slice",
    "constant",
]
