"""``fn.io``: I/O operators on pipeline data (``fn.io.file.read``)."""

from . import file

__all__ = ["file"]
