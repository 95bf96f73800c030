"""The GPU implementation of each operator, one module per operator (named as in ``streamflow/ops/``).

Importing this package registers them all; ``find_impl(op)`` gives the one
that runs ``op``.
"""

from . import (
    arithmetic,
    audio_resample,
    conditional,
    copy_to_gpu,
    crop,
    crop_mirror_normalize,
    decoders,
    erase,
    flip,
    mel_filter_bank,
    mfcc,
    pad,
    paste,
    permute_batch,
    preemphasis_filter,
    readers_numpy,
    resize,
    resize_crop_mirror_normalize,
    sequence,
    slice,
    spectrogram,
    to_decibels,
    video,
)
from .registry import GpuImpl, find_impl, register

__all__ = [
    "GpuImpl",
    "arithmetic",
    "audio_resample",
    "conditional",
    "copy_to_gpu",
    "crop",
    "crop_mirror_normalize",
    "decoders",
    "find_impl",
    "flip",
    "paste",
    "permute_batch",
    "readers_numpy",
    "register",
    "resize",
    "resize_crop_mirror_normalize",
    "erase",
    "mel_filter_bank",
    "mfcc",
    "pad",
    "preemphasis_filter",
    "sequence",
    "slice",
    "spectrogram",
    "to_decibels",
    "video",
]
