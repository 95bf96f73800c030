"""``experimental.median_blur``: the median of a window around each pixel, per channel.

DALI 2.4 offers this operator on the GPU only (through CV-CUDA); streamflow
also runs it on the CPU (``_native/filters.c``, GIL released: a vectorised
median network for 3x3 windows, a selection per pixel for the others). As in OpenCV
and CV-CUDA, edges are replicated and windows are odd. ``window_size`` is one
value or ``(h, w)``, default ``(3, 3)``, and may be per sample. Layouts HW,
HWC, CHW, FHWC, FCHW; types uint8, int8, uint16, int16, float32.

Not compared with DALI (its CPU build has no median blur); checked against a
numpy reference (``numpy.median`` over a sliding window of the edge-padded
image, ``tests/unit/ops/test_median_blur.py``): identical.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import filters as native
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function
from .spatial import map_planes, sample_layout

__all__ = ["MedianBlur", "median_blur"]


def _window(value: Any) -> tuple[int, int]:
    arr = np.asarray(value).reshape(-1)
    if arr.size == 1:
        arr = np.repeat(arr, 2)
    if arr.size != 2:
        raise SampleError(f"median_blur: window_size must have 1 or 2 values, got {arr.size}")
    h, w = (int(v) for v in arr)
    if (h, w) != tuple(float(v) for v in arr) or h < 1 or w < 1 or h % 2 == 0 or w % 2 == 0:
        raise SampleError(f"median_blur: window_size must be odd positive integers, got {value!r}")
    return h, w


class MedianBlur(Operator):
    """Median filter (see the module docstring)."""

    name = "experimental.median_blur"
    per_sample_args = frozenset({"window_size"})
    keeps_channels = True

    def __init__(self, window_size: int | Sequence[int] = (3, 3), *, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        try:
            _window(window_size)
        except SampleError as err:
            raise PipelineDefinitionError(str(err)) from None
        self.window_size = window_size
        self._layout = layout

    def _one(self, chunk: Chunk, row: int, image: Any) -> np.ndarray:
        image = np.asarray(image)
        layout = sample_layout(self._layout, image.ndim, self.name)
        window = _window(chunk.arg("window_size", row, self.window_size))
        try:
            return map_planes(image, layout, lambda p: native.median(p, window))
        except ValueError as err:
            raise SampleError(f"median_blur: {err}") from None

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, image: self._one(chunk, row, image))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function(label="experimental.median_blur")
def median_blur(
    data: DataNode,
    *,
    window_size: int | Sequence[int] | DataNode = (3, 3),
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Replace each pixel by the median of its ``window_size`` neighbourhood (per channel, edges replicated).

    Args:
        window_size: odd window size, one value or ``(h, w)``; may be per sample.
    """
    constants, per_sample = split_arguments({"window_size": window_size})
    op = MedianBlur(constants.get("window_size", (3, 3)), layout=input_layout(data, "median_blur"), name=name)
    return add_node(op, [data], per_sample, device=device)[0]
