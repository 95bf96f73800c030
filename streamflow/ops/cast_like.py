"""``cast_like``: the first input converted to the type of the second, as DALI 2.4's ``Cast``.

The conversion is ``cast``'s: float to integer rounds half away from zero and
saturates, NaN becomes 0. Each sample takes the type of the second input's
sample in the same row.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..errors import SampleError
from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function
from .cast import cast_array
from .constant import as_node

__all__ = ["CastLike", "cast_like"]


class CastLike(Operator):
    """Converts input 0 to the dtype of input 1."""

    name: ClassVar[str] = "cast_like"
    devices = frozenset({Device.CPU, Device.GPU})
    keeps_channels = True

    def __init__(self, layout: str = "", *, name: str | None = None) -> None:
        super().__init__(name=name)
        self._layout = layout

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, sample: Any) -> Any:
            arr = np.asarray(sample)
            target = np.dtype(chunk.inputs[1][row].dtype)
            if arr.dtype.kind not in "uifb" or target.kind not in "uifb":
                raise SampleError(f"cast_like: both inputs must be numeric, got {arr.dtype} and {target}")
            return cast_array(arr, target)

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def cast_like(input_0: DataNode, input_1: Any, *, device: str | Device | None = None,
              name: str | None = None) -> DataNode:
    """``input_0`` converted to the type of ``input_1`` (pipeline data or a constant)."""
    like = as_node(input_1, "cast_like")
    return add_node(CastLike(input_layout(input_0, "cast_like"), name=name), [input_0, like], device=device)[0]
