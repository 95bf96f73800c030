"""``laplacian``: the sum of the second derivatives along H and W (DALI's ``fn.laplacian``).

DALI 2.4's rules (its windows are OpenCV's ``getDerivKernels``):

* Each partial derivative is a separable correlation: a derivative window
  along its axis and smoothing windows along the other. A smoothing window of
  size ``n`` is the binomial row ``C(n-1, k)`` (``[1, 2, 1]`` for 3, ``[1]``
  for 1); a derivative window of size ``n >= 3`` is the smoothing window of
  ``n - 2`` convolved with ``[1, -2, 1]``.
* ``window_size`` (odd, >= 3; one value or ``(h, w)``) sizes each
  derivative's windows; ``smoothing_size`` (odd, >= 1) overrides the
  smoothing windows' sizes per axis.
* ``scale`` multiplies each partial derivative (one value or one per
  derivative); ``normalized_kernel=True`` uses ``2^-(s - 4)`` instead, where
  ``s`` is the sum of that derivative's window sizes. Not both.
* Borders ``reflect_101``; float32 arithmetic; the output type is the input's
  (negative values saturate to 0 for unsigned types) or float32 (``dtype=FLOAT``).

Against DALI's recorded outputs (``tests/unit/ops/test_laplacian.py``):
bit-identical on photo crops for every argument set recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import filters as native
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device, parse_dtype
from .arguments import fn_function
from .sequence import add_frames_node, frame_layout, is_per_frame_argument
from .spatial import map_planes, sample_layout

__all__ = ["Laplacian", "derivative_window", "laplacian", "laplacian_terms", "smoothing_window"]


def smoothing_window(size: int) -> np.ndarray:
    """The binomial smoothing window of ``size`` (odd) taps, float32 (exact integers)."""
    w = np.array([1.0])
    for _ in range(size - 1):
        w = np.convolve(w, [1.0, 1.0])
    return w.astype(np.float32)


def derivative_window(size: int) -> np.ndarray:
    """The second-derivative window of ``size`` (odd, >= 3) taps: smoothing(size - 2) * [1, -2, 1]."""
    return np.convolve(smoothing_window(size - 2).astype(np.float64), [1.0, -2.0, 1.0]).astype(np.float32)


def _pair(value: Any, what: str, count: int = 2) -> tuple[float, ...]:
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if arr.size == 1:
        return (float(arr[0]),) * count
    if arr.size == count:
        return tuple(float(v) for v in arr)
    raise SampleError(f"laplacian: {what} must have 1 value or {count} (one per spatial axis, H then W), got {arr.size}")


def laplacian_terms(window_size: Any = 3, smoothing_size: Any = None, scale: Any = None,
                    normalized_kernel: bool = False) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """The two ``(vertical window, horizontal window, scale)`` terms: d2/dy2, then d2/dx2."""
    deriv = _pair(window_size, "window_size")
    if any(d != int(d) or d < 3 or int(d) % 2 == 0 for d in deriv):
        raise SampleError(f"laplacian: window_size must be odd integers >= 3, got {window_size!r}")
    smooth = None if smoothing_size is None else _pair(smoothing_size, "smoothing_size")
    if smooth is not None and any(s != int(s) or s < 1 or int(s) % 2 == 0 for s in smooth):
        raise SampleError(f"laplacian: smoothing_size must be odd integers >= 1, got {smoothing_size!r}")
    sizes = []
    for i in range(2):  # sizes[i][j]: derivative i, axis j
        sizes.append([int(deriv[i]) if i == j or smooth is None else int(smooth[j]) for j in range(2)])
    if normalized_kernel:
        if scale is not None:
            raise SampleError("laplacian: scale cannot be given with normalized_kernel=True")
        scales = [float(np.exp2(-(sum(s) - 2 - 2))) for s in sizes]
    else:
        scales = list(_pair(1.0 if scale is None else scale, "scale"))
    return [
        (derivative_window(sizes[0][0]), smoothing_window(sizes[0][1]), scales[0]),
        (smoothing_window(sizes[1][0]), derivative_window(sizes[1][1]), scales[1]),
    ]


class Laplacian(Operator):
    """The Laplacian of each sample's spatial axes (see the module docstring)."""

    name = "laplacian"
    per_sample_args = frozenset({"window_size", "smoothing_size", "scale"})
    keeps_channels = True

    def __init__(self, window_size: Any = 3, smoothing_size: Any = None, scale: Any = None,
                 normalized_kernel: bool = False, *, dtype: Any = None, layout: str = "",
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.window_size, self.smoothing_size, self.scale = window_size, smoothing_size, scale
        self.normalized_kernel = bool(normalized_kernel)
        try:
            laplacian_terms(window_size, smoothing_size, scale, self.normalized_kernel)
        except SampleError as err:
            raise PipelineDefinitionError(str(err)) from None
        self.out_dtype = None if dtype is None else parse_dtype(dtype).numpy
        if self.out_dtype is not None and self.out_dtype != np.float32:
            raise PipelineDefinitionError(f"laplacian: dtype must be FLOAT or unset, got {self.out_dtype.name}")
        self._layout = layout

    def terms(self, chunk: Chunk, row: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
        return laplacian_terms(chunk.arg("window_size", row, self.window_size),
                               chunk.arg("smoothing_size", row, self.smoothing_size),
                               chunk.arg("scale", row, self.scale), self.normalized_kernel)

    def _one(self, chunk: Chunk, row: int, image: Any) -> np.ndarray:
        image = np.asarray(image)
        layout = sample_layout(self._layout, image.ndim, self.name)
        terms = self.terms(chunk, row)
        try:
            return map_planes(image, layout, lambda p: native.separable(p, terms, out_dtype=self.out_dtype))
        except ValueError as err:
            raise SampleError(f"laplacian: {err}") from None

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, image: self._one(chunk, row, image))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def laplacian(
    data: DataNode,
    *,
    window_size: int | Sequence[int] | DataNode = 3,
    smoothing_size: int | Sequence[int] | DataNode | None = None,
    scale: float | Sequence[float] | DataNode | None = None,
    normalized_kernel: bool = False,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """d2/dy2 + d2/dx2 of images, each approximated by a separable derivative and smoothing window.

    Args:
        window_size: odd size (>= 3) of the derivative windows, one value or ``(h, w)``.
        smoothing_size: odd size (>= 1) of the smoothing windows per axis
            (default: the derivative's window size; 1 means no smoothing).
        scale: factor of each partial derivative (one value or two).
        normalized_kernel: scale each derivative by ``2^-(sum of its window sizes - 4)``.
        dtype: ``FLOAT`` for float32 output (default: the input's type).
    """
    constants, per_sample = split_arguments({"window_size": window_size, "smoothing_size": smoothing_size,
                                             "scale": scale})
    layout = input_layout(data, "laplacian")
    if layout.startswith("F") and any(is_per_frame_argument(v) for v in per_sample.values()):
        # arguments given per frame (fn.per_frame), as DALI takes them: filter frame by frame
        op = Laplacian(constants.get("window_size", 3), constants.get("smoothing_size"), constants.get("scale"),
                       normalized_kernel, dtype=dtype, layout=frame_layout(layout), name=name)
        return add_frames_node(op, data, per_sample, device=device, frame_layouts=("HW", "HWC", "CHW"))
    op = Laplacian(constants.get("window_size", 3), constants.get("smoothing_size"), constants.get("scale"),
                   normalized_kernel, dtype=dtype, layout=layout, name=name)
    return add_node(op, [data], per_sample, device=device)[0]
