"""``clahe``: Contrast Limited Adaptive Histogram Equalization of uint8 HWC images, as DALI 2.4's CPU
operator, which runs OpenCV's CLAHE (so does this: bit-identical).

``tiles_x`` x ``tiles_y`` tiles, each equalized with its histogram clipped at
``clip_limit`` times the mean bin count, the tiles' lookup tables blended
bilinearly. One channel: equalized directly. Three (RGB): with ``luma_only``
(default) the L channel of CIE Lab is equalized and the image converted back
(OpenCV's Lab conversion); otherwise each channel on its own. ``bins`` is
accepted and, as on DALI's CPU, unused (256 bins). Needs OpenCV: ``pip install
'streamflow[opencv]'``. CPU only.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function
from .opencv import opencv

__all__ = ["Clahe", "clahe", "equalize_clahe"]


def equalize_clahe(image: np.ndarray, tiles_x: int, tiles_y: int, clip_limit: float, luma_only: bool) -> np.ndarray:
    """CLAHE of one HWC uint8 image with 1 or 3 channels (see the module docstring)."""
    cv2 = opencv("clahe")
    engine = cv2.createCLAHE(clipLimit=float(clip_limit), tileGridSize=(int(tiles_x), int(tiles_y)))
    channels = image.shape[2]
    if channels == 1:
        return engine.apply(np.ascontiguousarray(image[..., 0]))[..., None]
    if luma_only:
        lab = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2LAB)
        lab[..., 0] = engine.apply(np.ascontiguousarray(lab[..., 0]))
        return cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)
    return np.stack([engine.apply(np.ascontiguousarray(image[..., c])) for c in range(channels)], axis=-1)


class Clahe(Operator):
    """CLAHE with OpenCV."""

    name: ClassVar[str] = "clahe"
    keeps_channels = True

    def __init__(self, tiles_x: int, tiles_y: int, clip_limit: float, luma_only: bool = True, *,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        if tiles_x <= 0 or tiles_y <= 0:
            raise PipelineDefinitionError(f"clahe: tiles_x and tiles_y must be positive, got {tiles_x}, {tiles_y}")
        if not clip_limit > 0:
            raise PipelineDefinitionError(f"clahe: clip_limit must be positive, got {clip_limit}")
        self.tiles_x, self.tiles_y, self.clip_limit, self.luma_only = tiles_x, tiles_y, clip_limit, luma_only

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, image: Any) -> Any:
            arr = np.asarray(image)
            if arr.ndim != 3 or arr.dtype != np.uint8 or arr.shape[2] not in (1, 3):
                raise SampleError(f"clahe: expects HWC uint8 images with 1 or 3 channels, got {arr.dtype} of "
                                  f"shape {arr.shape}")
            return equalize_clahe(arr, self.tiles_x, self.tiles_y, self.clip_limit, self.luma_only)

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return "HWC"


@fn_function()
def clahe(
    input: DataNode,
    *,
    tiles_x: int,
    tiles_y: int,
    clip_limit: float,
    luma_only: bool = True,
    bins: int = 256,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Contrast Limited Adaptive Histogram Equalization of uint8 HWC images (1 or 3 channels, RGB).

    Args:
        tiles_x, tiles_y: the tile grid.
        clip_limit: the histogram clip, relative to the mean bin count.
        luma_only: RGB: equalize the luminance (Lab's L) only (default), else each channel.
        bins: accepted (a power of 2); 256 bins are used, as on DALI's CPU.
    """
    layout = input_layout(input, "clahe")
    if layout and layout != "HWC":
        raise PipelineDefinitionError(f"clahe: expects HWC images, got layout {layout!r}")
    if bins <= 0 or bins & (bins - 1):
        raise PipelineDefinitionError(f"clahe: bins must be a power of 2, got {bins}")
    return add_node(Clahe(tiles_x, tiles_y, clip_limit, luma_only, name=name), [input], device=device)[0]
