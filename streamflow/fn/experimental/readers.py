"""``fn.experimental.readers``: DALI's experimental readers (``streamflow/ops/readers/``)."""

from ...ops.readers.video import experimental_video as video

__all__ = ["video"]
