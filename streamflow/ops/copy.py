"""``copy``: a copy of each sample (any shape, type and layout), as DALI 2.4."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["Copy", "copy"]


class Copy(Operator):
    """Copies each sample into a new buffer (written in place into the batch when it is an output)."""

    name: ClassVar[str] = "copy"
    devices = frozenset({Device.CPU, Device.GPU})
    keeps_channels = True

    def __init__(self, layout: str = "", *, name: str | None = None) -> None:
        super().__init__(name=name)
        self._layout = layout

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, sample in enumerate(chunk.inputs[0]):
            arr = np.asarray(sample)
            target = chunk.output_buffer(row, arr.shape, arr.dtype)
            if target is None:
                out.append(arr.copy())
            else:
                target[...] = arr
                out.append(target)
        return [out]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def copy(input: DataNode, *, device: str | Device | None = None, name: str | None = None) -> DataNode:
    """A copy of ``input`` (same shape, type and layout)."""
    return add_node(Copy(input_layout(input, "copy"), name=name), [input], device=device)[0]
