"""``fn.experimental``: DALI's experimental namespace (re-exports only).

DALI's experimental operators (``readers.video``, ``decoders.video``,
``median_blur``, ``warp_perspective``, ``remap``) and its older experimental
names of operators that have moved (``peek_image_shape``, ``filter``,
``equalize``, and the image decoders under ``decoders``).
"""

from ...ops.equalize import equalize
from ...ops.filter import filter
from ...ops.median_blur import median_blur
from ...ops.peek_image_shape import peek_image_shape
from ...ops.warp_perspective import remap, warp_perspective
from . import decoders, readers

__all__ = ["decoders", "equalize", "filter", "median_blur", "peek_image_shape", "readers", "remap",
           "warp_perspective"]
