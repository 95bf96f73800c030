"""The image decoders (``fn.decoders``): one module per operator."""

from typing import Any as _Any


def __getattr__(name: str) -> _Any:
    """DALI's legacy classes: ``ops.decoders.X(**args)`` (see ``streamflow.ops.legacy_op``)."""
    from .. import legacy_op

    return legacy_op("decoders", name)
