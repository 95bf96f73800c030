"""``fn.experimental``: DALI's experimental namespace (``fn.experimental.readers.video`` ...)."""

from . import decoders, readers

__all__ = ["decoders", "readers"]
