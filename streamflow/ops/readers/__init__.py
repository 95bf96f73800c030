"""The readers (``fn.readers``): one module per reader, and the list-reader base they share."""

from typing import Any as _Any


def __getattr__(name: str) -> _Any:
    """DALI's legacy classes: ``ops.readers.X(**args)`` (see ``streamflow.ops.legacy_op``)."""
    from .. import legacy_op

    return legacy_op("readers", name)
