"""``fn.readers``: operators that read data sets from storage (``streamflow/ops/readers/``)."""

from ..ops.readers.coco import coco
from ..ops.readers.file import file
from ..ops.readers.numpy import numpy

__all__ = ["file", "numpy", "coco"]
