"""``dump_image``: write each image of a batch to a PPM file and pass the batch on, as DALI 2.4.

For debugging. Each uint8 image (HWC, or CHW with ``input_layout="CHW"``)
becomes ``<position in the batch>-<suffix>-0.ppm`` in the current working
directory, DALI's name (so each batch overwrites the previous one's files):
plain-text PPM (``P3``) for 3 channels, PGM (``P2``) for 1, one image row
per text line. The output is the input, unchanged.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node
from ..graph import input_layout as layout_of
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["DumpImage", "dump_image", "ppm_text"]


def ppm_text(image: np.ndarray) -> str:
    """The plain-text PPM (3 channels) or PGM (1 channel) of an HWC uint8 image, as DALI writes it."""
    h, w, c = image.shape
    magic = {1: "P2", 3: "P3"}.get(c)
    if magic is None:
        raise SampleError(f"dump_image: PPM files hold 1 or 3 channels, got {c}")
    rows = "".join("".join(f"{v} " for v in row) + "\n" for row in image.reshape(h, w * c).tolist())
    return f"{magic}\n{w} {h}\n255\n{rows}"


class DumpImage(Operator):
    """Writes every image of the batch (whole batch: a file per position in it)."""

    name: ClassVar[str] = "dump_image"
    whole_batch = True
    keeps_channels = True

    def __init__(self, suffix: str = "", input_layout: str = "HWC", *, layout: str = "",
                 name: str | None = None) -> None:
        super().__init__(name=name)
        if input_layout not in ("HWC", "CHW"):
            raise PipelineDefinitionError(f"dump_image: input_layout must be 'HWC' or 'CHW', got {input_layout!r}")
        self.suffix, self.input_layout = suffix, input_layout
        self._layout = layout

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, image: Any) -> Any:
            arr = np.asarray(image)
            if arr.ndim != 3 or arr.dtype != np.uint8:
                raise SampleError(f"dump_image: expects 3-D uint8 images, got {arr.dtype} of shape {arr.shape}")
            hwc = arr.transpose(1, 2, 0) if self.input_layout == "CHW" else arr
            path = os.path.join(os.getcwd(), f"{row}-{self.suffix}-0.ppm")
            with open(path, "w", encoding="ascii") as f:
                f.write(ppm_text(hwc))
            return image

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def dump_image(input: DataNode, *, suffix: str = "", input_layout: str = "HWC", device: str | Device | None = None,
               name: str | None = None) -> DataNode:
    """Write each uint8 image to ``<position>-<suffix>-0.ppm`` (current directory) and pass the images on.

    Args:
        suffix: added to the file names.
        input_layout: ``"HWC"`` (default) or ``"CHW"``.
    """
    op = DumpImage(suffix, input_layout, layout=layout_of(input, "dump_image"), name=name)
    return add_node(op, [input], device=device)[0]
