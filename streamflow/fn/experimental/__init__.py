"""``fn.experimental``: DALI's experimental namespace (re-exports only).

``fn.experimental.readers.video`` and ``fn.experimental.decoders.video`` are
DALI's experimental video operators; ``peek_image_shape`` and the image
decoders under ``decoders`` are DALI 2.4's deprecated experimental aliases of
``fn.peek_image_shape`` and ``fn.decoders``. ``audio_resample`` is DALI's
deprecated alias of ``fn.audio_resample``; ``resize`` is DALI's GPU-only
experimental resize, with the arguments and defaults of ``fn.resize``.
"""

from ...ops.audio_resample import audio_resample
from ...ops.debayer import debayer
from ...ops.decoders.inflate import inflate
from ...ops.morphology import dilate, erode
from ...ops.peek_image_shape import peek_image_shape
from ...ops.resize import resize
from ...ops.tensor_resize import tensor_resize
from ...ops.warp_perspective import remap, warp_perspective
from . import decoders, readers

__all__ = ["audio_resample", "debayer", "decoders", "dilate", "erode", "inflate", "peek_image_shape", "readers", "remap", "resize", "tensor_resize", "warp_perspective"]
