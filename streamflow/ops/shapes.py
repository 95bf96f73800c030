"""``shapes``: each sample's shape as pipeline data (also ``x.shape()``)."""

from __future__ import annotations

from ..graph import DataNode, add_node, require_node
from ..subscript import ShapesOp
from ..types import DataType, parse_dtype
from .arguments import fn_function

__all__ = ["shapes"]


@fn_function()
def shapes(data: DataNode, *, dtype: DataType | str = DataType.INT64, device: str | None = None,
           name: str | None = None) -> DataNode:
    """The shape of every sample, as a 1-D array of ``dtype`` (default int64)."""
    node = require_node(data, "shapes")
    return add_node(ShapesOp(parse_dtype(dtype).numpy, name=name), [node], device=device)[0]
