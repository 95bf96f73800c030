"""``fn.experimental.readers``: DALI's experimental readers (``streamflow/ops/readers/``)."""

from ...ops.readers.fits import fits
from ...ops.readers.video import experimental_video as video

__all__ = ["fits", "video"]
