"""``equalize``: per-channel histogram equalization of uint8 images (DALI's ``fn.equalize``).

DALI 2.4 follows OpenCV's ``equalizeHist``, channel by channel: with ``h`` the
channel's histogram, ``i`` its lowest present value and ``N`` its pixel
count, value ``v > i`` maps to ``round(255 * (h[i+1] + ... + h[v]) / (N - h[i]))``
and ``i`` maps to 0; a channel with a single value is left unchanged.
Channels are found from the layout (``HWC``, ``CHW``; ``HW`` is one channel;
sequences ``FHWC``/``FCHW`` equalize each frame). Only uint8 is accepted.

Against DALI's recorded outputs (``tests/unit/ops/test_equalize.py``):
identical on photo crops (HWC, HW, CHW, dark and flat images).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._native import filters as native
from ..errors import SampleError
from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["Equalize", "equalize", "equalize_luts"]


def equalize_luts(hist: np.ndarray) -> np.ndarray:
    """uint8 lookup tables (one row per channel) from histograms of shape (channels, 256)."""
    hist = np.asarray(hist, dtype=np.int64)
    total = hist.sum(axis=1)
    luts = np.empty(hist.shape, dtype=np.uint8)
    for c in range(hist.shape[0]):
        present = np.flatnonzero(hist[c])
        if present.size == 0:
            luts[c] = np.arange(256)
            continue
        lo = int(present[0])
        if hist[c, lo] == total[c]:  # one value only: unchanged
            luts[c] = np.arange(256)
            continue
        scale = 255.0 / float(total[c] - hist[c, lo])
        cum = np.cumsum(hist[c]) - hist[c, lo]
        lut = np.rint(cum * scale)
        lut[: lo + 1] = 0
        luts[c] = np.clip(lut, 0, 255).astype(np.uint8)
    return luts


def _equalize_hwc(image: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """HWC (or HW) uint8 image, every channel equalized (histograms and lookups in C, GIL released),
    into ``out`` when given (e.g. the sample's row of the batch)."""
    channels = 1 if image.ndim == 2 else image.shape[2]
    return native.apply_luts(image, equalize_luts(native.histograms(image, channels)), out=out)


class Equalize(Operator):
    """Histogram equalization per channel (see the module docstring)."""

    name = "equalize"
    keeps_channels = True

    def __init__(self, *, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        self._layout = layout

    def _one(self, image: Any, slot: Callable[[tuple[int, ...]], np.ndarray | None] | None = None) -> np.ndarray:
        """``slot(shape)``: where a single frame's result may be written (the batch row), or ``None``."""
        image = np.asarray(image)
        if image.dtype != np.uint8:
            raise SampleError(f"equalize: only uint8 images are supported, got {image.dtype}")
        layout = self._layout or {2: "HW", 3: "HWC", 4: "FHWC"}.get(image.ndim, "")
        if len(layout) != image.ndim or layout not in ("HW", "HWC", "CHW", "FHW", "FHWC", "FCHW"):
            raise SampleError(f"equalize: expected an HW, HWC or CHW image (or a sequence of them), "
                              f"got shape {image.shape} with layout {layout!r}")
        if layout.startswith("F"):
            return np.stack([self._frame(f, layout[1:]) for f in image]) if len(image) else image.copy()
        return self._frame(image, layout, slot(image.shape) if slot is not None else None)

    @staticmethod
    def _frame(image: np.ndarray, layout: str, out: np.ndarray | None = None) -> np.ndarray:
        if layout == "CHW":
            return np.stack([_equalize_hwc(ch) for ch in image])
        return _equalize_hwc(image, out)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, image: self._one(
            image, lambda shape: chunk.output_buffer(row, shape, np.uint8)))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def equalize(data: DataNode, *, device: str | Device | None = None, name: str | None = None) -> DataNode:
    """Histogram-equalize each channel of uint8 images (OpenCV's ``equalizeHist`` per channel)."""
    op = Equalize(layout=input_layout(data, "equalize"), name=name)
    return add_node(op, [data], device=device)[0]
