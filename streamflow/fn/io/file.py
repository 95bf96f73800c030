"""``fn.io.file``: read files named by pipeline data (``streamflow/ops/io_file_read.py``)."""

from ...ops.io_file_read import read

__all__ = ["read"]
