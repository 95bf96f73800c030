"""``fn.experimental.decoders``: DALI's experimental decoders (``streamflow/ops/decoders/``)."""

from ...ops.decoders.video import video

__all__ = ["video"]
