"""``gaussian_blur``: separable Gaussian smoothing of images and sequences (DALI's ``fn.gaussian_blur``).

DALI 2.4's rules, checked on its CPU operator:

* ``sigma`` and ``window_size`` give one value for both spatial axes or one
  per axis (outermost first: ``(H, W)``); either may be per-sample data.
  Only ``sigma``: the window is ``2 * ceil(3 * sigma) + 1``. Only
  ``window_size``: ``sigma = (radius - 1) * 0.3 + 0.8`` with ``radius =
  (window_size - 1) / 2`` (OpenCV's rule). A sigma of 0 counts as not given.
  Windows are odd.
* The window is ``exp(-x^2 / (2 sigma^2))`` normalised to sum 1, computed in
  float32 exactly as DALI does (``gaussian_window``).
* Borders reflect without repeating the edge (``reflect_101``), as often as
  the window needs. float32 arithmetic; integer outputs round half away from
  zero and saturate; ``dtype=FLOAT`` gives float32.
* Layouts: HW, HWC, CHW and sequences FHW, FHWC, FCHW (channels and frames
  are not blurred across). Volumes (DHWC) are not supported.

Against DALI's recorded outputs on photo crops (``tests/unit/ops/test_gaussian_blur.py``):
bit-identical for uint8 and float32 outputs, int16 and float32 inputs and
per-sample sigmas. The CPU kernel is ``_native/filters.c`` (GIL released);
the GPU one ``gpu/kernels/convolution.cu`` computes the same bits.
"""

from __future__ import annotations

import math
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

__all__ = ["GaussianBlur", "blur_windows", "gaussian_blur", "gaussian_window"]

F32 = np.float32


def gaussian_window(sigma: float, size: int) -> np.ndarray:
    """DALI's float32 Gaussian window of ``size`` taps (odd): half computed, mirrored, centre ``1 / sum``.

    The same operations as DALI's ``FillGaussian``, so the taps are identical
    bit for bit (and so are blurs computed in the same order).
    """
    r = (size - 1) // 2
    exp_scale = F32(0.5) / (F32(sigma) * F32(sigma))
    half = np.empty(r, dtype=F32)
    total = F32(0.0)
    for i, x in enumerate(range(-r, 0)):  # sequential float32 sum, in DALI's order
        # exp in double precision, rounded to float32 (float32 exp differs in the last bit)
        half[i] = F32(math.exp(float(F32(-(F32(x * x) * exp_scale)))))
        total = F32(total + half[i])
    scale = F32(1.0) / F32(F32(total * F32(2.0)) + F32(1.0))
    half = (half * scale).astype(F32)
    return np.concatenate([half, [scale], half[::-1]]).astype(F32)


def _per_axis(value: Any, what: str, cast: type) -> tuple[Any, Any]:
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if arr.size == 1:
        return cast(arr[0]), cast(arr[0])
    if arr.size == 2:
        return cast(arr[0]), cast(arr[1])
    raise SampleError(f"gaussian_blur: {what} must have 1 value or 2 (one per spatial axis, H then W), got {arr.size}")


def blur_windows(sigma: Any, window_size: Any) -> tuple[np.ndarray, np.ndarray]:
    """The (vertical, horizontal) windows for ``sigma`` / ``window_size`` (scalars or per-axis pairs)."""
    sigmas = _per_axis(0.0 if sigma is None else sigma, "sigma", float)
    sizes = _per_axis(0 if window_size is None else window_size, "window_size", float)
    out = []
    for s, w in zip(sigmas, sizes):
        if not (math.isfinite(s) and s >= 0) or w < 0 or w != int(w):
            raise SampleError(f"gaussian_blur: sigma must be >= 0 and window_size a non-negative integer, "
                              f"got sigma={s}, window_size={w}")
        w = int(w)
        if s <= 0 and w == 0:
            raise SampleError("gaussian_blur: give sigma or window_size (both are 0 or unset)")
        if w == 0:
            w = 2 * math.ceil(float(F32(s) * F32(3))) + 1
        if w % 2 == 0:
            raise SampleError(f"gaussian_blur: window_size must be odd, got {w}")
        if s <= 0:
            s = float(F32(((w - 1) // 2 - 1) * 0.3 + 0.8))
        out.append(gaussian_window(s, w))
    return out[0], out[1]


class GaussianBlur(Operator):
    """Separable Gaussian blur of each sample's spatial axes (see the module docstring)."""

    name = "gaussian_blur"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"sigma", "window_size"})
    keeps_channels = True

    def __init__(self, sigma: float | Sequence[float] | None = None, window_size: int | Sequence[int] | None = None,
                 *, dtype: Any = None, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        self.sigma, self.window_size = sigma, window_size
        if sigma is not None or window_size is not None:
            try:
                blur_windows(sigma, window_size)  # constant arguments are checked when the pipeline is defined
            except SampleError as err:
                raise PipelineDefinitionError(str(err)) from None
        self.out_dtype = None if dtype is None else parse_dtype(dtype).numpy
        if self.out_dtype is not None and self.out_dtype != np.float32:
            raise PipelineDefinitionError(f"gaussian_blur: dtype must be FLOAT or unset, got {self.out_dtype.name}")
        self._layout = layout

    def windows(self, chunk: Chunk, row: int) -> tuple[np.ndarray, np.ndarray]:
        """The sample's (vertical, horizontal) windows."""
        return blur_windows(chunk.arg("sigma", row, self.sigma), chunk.arg("window_size", row, self.window_size))

    def _one(self, chunk: Chunk, row: int, image: Any) -> np.ndarray:
        image = np.asarray(image)
        layout = sample_layout(self._layout, image.ndim, self.name)
        ky, kx = self.windows(chunk, row)
        try:
            return map_planes(image, layout, lambda p: native.separable(p, [(ky, kx, 1.0)], out_dtype=self.out_dtype))
        except ValueError as err:
            raise SampleError(f"gaussian_blur: {err}") from None

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, image: self._one(chunk, row, image))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def gaussian_blur(
    data: DataNode,
    *,
    sigma: float | Sequence[float] | DataNode | None = None,
    window_size: int | Sequence[int] | DataNode | None = None,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Blur images with a Gaussian window (separable, ``reflect_101`` borders).

    Args:
        sigma: standard deviation [pixels], one value or ``(sigma_h, sigma_w)``;
            may be per sample.
        window_size: odd window diameter, one value or ``(h, w)``; default
            ``2 * ceil(3 * sigma) + 1``. Alone, it sets
            ``sigma = ((window_size - 1) / 2 - 1) * 0.3 + 0.8``.
        dtype: ``FLOAT`` for float32 output (default: the input's type).
    """
    constants, per_sample = split_arguments({"sigma": sigma, "window_size": window_size})
    if not per_sample and constants.get("sigma") is None and constants.get("window_size") is None:
        raise PipelineDefinitionError("gaussian_blur: give sigma or window_size")
    layout = input_layout(data, "gaussian_blur")
    if layout.startswith("F") and any(is_per_frame_argument(v) for v in per_sample.values()):
        # sigma / window_size given per frame (fn.per_frame), as DALI takes them: blur frame by frame
        op = GaussianBlur(constants.get("sigma"), constants.get("window_size"), dtype=dtype,
                          layout=frame_layout(layout), name=name)
        return add_frames_node(op, data, per_sample, device=device, frame_layouts=("HW", "HWC", "CHW"))
    op = GaussianBlur(constants.get("sigma"), constants.get("window_size"), dtype=dtype, layout=layout, name=name)
    return add_node(op, [data], per_sample, device=device)[0]
