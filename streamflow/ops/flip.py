"""``flip``: mirror images horizontally and/or vertically (and volumes depthwise), per sample."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import (
    Device,
)
from .arguments import fn_function

__all__ = ["Flip", "flip"]


class Flip(Operator):
    """Flips HWC (or HW, or CHW when told) images and DHWC volumes; 1 = flip, 0 = keep."""

    keeps_channels = True
    name = "flip"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"horizontal", "vertical", "depthwise"})

    def __init__(self, horizontal: int = 1, vertical: int = 0, *, layout: str = "HWC", name: str | None = None,
                 depthwise: int = 0) -> None:
        super().__init__(name=name)
        self.horizontal, self.vertical, self.depthwise = int(horizontal), int(vertical), int(depthwise)
        self._layout = layout or "HWC"

    def _axes(self, ndim: int) -> tuple[int, int]:
        if self._layout.upper() == "CHW" and ndim == 3:
            return 1, 2
        return 0, 1

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, image in enumerate(chunk.inputs[0]):
            if image.ndim not in (2, 3, 4):
                chunk.fail(row, SampleError(f"flip expects an HW or HWC image or a DHWC volume, got shape {image.shape}"))
                out.append(None)
                continue
            index: list[Any] = [slice(None)] * image.ndim
            if image.ndim == 4:  # DHWC volume
                y_axis, x_axis = 1, 2
                if int(chunk.arg("depthwise", row, self.depthwise)):
                    index[0] = slice(None, None, -1)
            else:
                y_axis, x_axis = self._axes(image.ndim)
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
    depthwise: int | DataNode = 0,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Mirror images: ``horizontal=1`` flips left-right, ``vertical=1`` top-bottom, ``depthwise=1``
    front-back (DHWC volumes)."""
    constants, per_sample = split_arguments(dict(horizontal=horizontal, vertical=vertical, depthwise=depthwise))
    layout = input_layout(data, "flip") or "HWC"
    op = Flip(constants.get("horizontal", 1), constants.get("vertical", 0), layout=layout, name=name,
              depthwise=constants.get("depthwise", 0))
    return add_node(op, [data], per_sample, device=device)[0]
