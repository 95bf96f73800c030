"""The GPU implementation of each operator, one module per operator (named as in ``streamflow/ops/``).

Importing this package registers them all; ``find_impl(op)`` gives the one
that runs ``op``.
"""

from . import (
    arithmetic,
    brightness_contrast,
    conditional,
    copy_to_gpu,
    crop,
    crop_mirror_normalize,
    decoders,
    flip,
    gaussian_blur,
    permute_batch,
    readers_numpy,
    resize,
    resize_crop_mirror_normalize,
)
from .registry import GpuImpl, find_impl, register

__all__ = [
    "GpuImpl",
    "arithmetic",
    "brightness_contrast",
    "conditional",
    "copy_to_gpu",
    "crop",
    "crop_mirror_normalize",
    "decoders",
    "find_impl",
    "flip",
    "gaussian_blur",
    "permute_batch",
    "readers_numpy",
    "register",
    "resize",
    "resize_crop_mirror_normalize",
]
