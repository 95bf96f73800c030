"""``fn.experimental``: DALI's experimental namespace (``median_blur``; ``filter`` and ``equalize`` are
DALI's older names of ``fn.filter`` and ``fn.equalize``)."""

from ..ops.equalize import equalize
from ..ops.filter import filter
from ..ops.median_blur import median_blur

__all__ = ["equalize", "filter", "median_blur"]
