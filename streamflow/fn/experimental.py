"""``fn.experimental``: DALI's experimental namespace (re-exports only).

``peek_image_shape`` and ``decoders`` are DALI 2.4's deprecated experimental
aliases of ``fn.peek_image_shape`` and ``fn.decoders``.
"""

from ..ops.peek_image_shape import peek_image_shape
from . import decoders

__all__ = ["decoders", "peek_image_shape"]
