"""``fn.experimental``: DALI's experimental namespace (re-exports only).

DALI's experimental operators (``readers.video``, ``decoders.video``,
``median_blur``, ``warp_perspective``, ``remap``, ``dilate``, ``erode``,
``readers.fits``) and its older experimental names of operators that have
moved (``peek_image_shape``, ``filter``, ``equalize``, ``audio_resample``,
``debayer``, ``inflate``, ``tensor_resize``, and the image decoders under
``decoders``); ``resize`` is DALI's GPU-only experimental resize, with the
arguments and defaults of ``fn.resize``.
"""

from ...ops.audio_resample import audio_resample
from ...ops.debayer import debayer
from ...ops.decoders.inflate import inflate
from ...ops.equalize import equalize
from ...ops.filter import filter
from ...ops.median_blur import median_blur
from ...ops.morphology import dilate, erode
from ...ops.numba_function import numba_function
from ...ops.peek_image_shape import peek_image_shape
from ...ops.resize import resize
from ...ops.tensor_resize import tensor_resize
from ...ops.warp_perspective import remap, warp_perspective
from . import decoders, readers

__all__ = ["audio_resample", "debayer", "decoders", "dilate", "equalize", "erode", "filter", "inflate",
           "median_blur", "numba_function", "peek_image_shape", "readers", "remap", "resize", "tensor_resize",
           "warp_perspective"]
