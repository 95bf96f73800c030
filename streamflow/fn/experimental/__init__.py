"""``fn.experimental``: DALI's experimental namespace (re-exports only).

``fn.experimental.readers.video`` and ``fn.experimental.decoders.video`` are
DALI's experimental video operators; ``peek_image_shape`` and the image
decoders under ``decoders`` are DALI 2.4's deprecated experimental aliases of
``fn.peek_image_shape`` and ``fn.decoders``.
"""

from ...ops.peek_image_shape import peek_image_shape
from ...ops.warp_perspective import remap, warp_perspective
from . import decoders, readers

__all__ = ["decoders", "peek_image_shape", "readers", "remap", "warp_perspective"]
