"""``flip``: mirror images horizontally and/or vertically, per sample."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SampleError
from ..graph import DataNode, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import (
    Device,
)
from .arguments import fn_function
from .sequence import add_frames_node, frame_layout

__all__ = ["Flip", "flip"]


class Flip(Operator):
    """Flips HWC (or HW, or CHW when told) images; 1 = flip, 0 = keep."""

    keeps_channels = True
    name = "flip"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"horizontal", "vertical"})

    def __init__(self, horizontal: int = 1, vertical: int = 0, *, layout: str = "HWC", name: str | None = None) -> None:
        super().__init__(name=name)
        self.horizontal, self.vertical = int(horizontal), int(vertical)
        self._layout = layout or "HWC"

    def _axes(self, ndim: int) -> tuple[int, int]:
        if self._layout.upper() == "CHW" and ndim == 3:
            return 1, 2
        return 0, 1

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, image in enumerate(chunk.inputs[0]):
            if image.ndim not in (2, 3):
                chunk.fail(row, SampleError(f"flip expects an HW or HWC image, got shape {image.shape}"))
                out.append(None)
                continue
            y_axis, x_axis = self._axes(image.ndim)
            index: list[Any] = [slice(None)] * image.ndim
            if int(chunk.arg("horizontal", row, self.horizontal)):
                index[x_axis] = slice(None, None, -1)
            if int(chunk.arg("vertical", row, self.vertical)):
                index[y_axis] = slice(None, None, -1)
            out.append(np.ascontiguousarray(image[tuple(index)]))
        return [out]

    def layout(self, index: int) -> str:
        return self._layout

@fn_function()
def flip(
    data: DataNode,
    *,
    horizontal: int | DataNode = 1,
    vertical: int | DataNode = 0,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Mirror images: ``horizontal=1`` flips left-right, ``vertical=1`` top-bottom."""
    constants, per_sample = split_arguments(dict(horizontal=horizontal, vertical=vertical))
    layout = frame_layout(input_layout(data, "flip")) or "HWC"
    op = Flip(constants.get("horizontal", 1), constants.get("vertical", 0), layout=layout, name=name)
    return add_frames_node(op, data, per_sample, device=device, frame_layouts=("HWC", "CHW"))
