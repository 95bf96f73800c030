"""``random_resized_crop``: crop a random window (DALI's draw) and resize it.

The window is drawn as in ``random_crop_window.py``; the resize is ``resize``'s
resampler with antialias, so the result equals resizing the drawn window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import imgproc as kernels
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node
from ..operator import Chunk, Operator
from ..types import (
    DataType,
    Device,
    InterpType,
    Number,
    parse_dtype,
    parse_interp,
)
from .arguments import RESAMPLING, fn_function
from .random_crop_window import RandomCropParams, sample_window

__all__ = ["RandomResizedCrop", "random_resized_crop"]


def _size(value: Any, op_name: str) -> tuple[int, int]:
    values = [float(v) for v in np.asarray(value, dtype=np.float64).reshape(-1)]
    if len(values) == 1:
        values = values * 2
    if len(values) != 2 or any(v <= 0 for v in values):
        raise PipelineDefinitionError(f"{op_name}: size must be (height, width) > 0, got {value!r}")
    return max(1, int(math.floor(values[0] + 0.5))), max(1, int(math.floor(values[1] + 0.5)))


class RandomResizedCrop(Operator):
    """Random crop (the draw above) resized to ``size``, in one resampling pass.

    The window is passed to ``kernels.resample`` as its ``roi``: no intermediate
    crop is copied, and the result equals ``resample(image[window], size)``.
    """

    keeps_channels = True
    name = "random_resized_crop"
    uses_random = True

    def __init__(
        self,
        size: Sequence[float] | float,
        params: RandomCropParams,
        *,
        interp: InterpType | str = InterpType.INTERP_LINEAR,
        antialias: bool = True,
        dtype: Any = None,
        seed: int | None = None,
        name: str | None = None,
        mag_interp: InterpType | str | None = None,
    ) -> None:
        super().__init__(name=name)
        self.size = _size(size, self.name)
        self.params = params
        self.interp = parse_interp(interp) if isinstance(interp, str) else interp
        self.mag_interp = self.interp if mag_interp is None else (
            parse_interp(mag_interp) if isinstance(mag_interp, str) else mag_interp)
        self.antialias = bool(antialias)
        self.dtype = None if dtype is None else parse_dtype(dtype).numpy
        if self.dtype is not None and self.dtype not in (np.uint8, np.float32):
            raise PipelineDefinitionError(f"{self.name}: dtype must be UINT8 or FLOAT, got {self.dtype}")
        self.seed = seed

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, image in enumerate(chunk.inputs[0]):
            if not isinstance(image, np.ndarray) or image.ndim not in (2, 3):
                chunk.fail(row, SampleError(f"{self.name} expects an HWC image, got {getattr(image, 'shape', image)!r}"))
                out.append(None)
                continue
            d = sample_window(chunk, row, image.shape[0], image.shape[1], self.params, self.seed)
            src = image if image.dtype in (np.uint8, np.float32) else image.astype(np.float32)
            out.append(kernels.resample(
                src, self.size, interp=self.interp, mag_interp=self.mag_interp, antialias=self.antialias,
                roi=(d.y0, d.x0, d.y0 + d.h, d.x0 + d.w), out_dtype=self.dtype or src.dtype,
            ))
        return [out]

    def layout(self, index: int) -> str:
        return "HWC"

@fn_function(RESAMPLING)
def random_resized_crop(
    data: DataNode,
    *,
    size: Sequence[Number] | Number,
    random_area: Sequence[float] = (0.08, 1.0),
    random_aspect_ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    num_attempts: int = 10,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    antialias: bool = True,
    dtype: DataType | str | None = None,
    seed: int | None = None,
    min_filter: str | InterpType | None = None,
    mag_filter: str | InterpType | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Crop a random window (area and aspect ratio drawn at random) and resize it to ``size``.

    Args:
        size: ``(height, width)`` of the output.
        random_area: range of the window's area, as a fraction of the image's.
        random_aspect_ratio: range of the window's width / height (drawn log-uniformly).
        num_attempts: draws before falling back to the largest window of a
            clamped aspect ratio.
        interp_type: resampling filter (as ``fn.resize``); default ``INTERP_LINEAR``.
        antialias: widen the filter when downscaling (default on).
        dtype: ``UINT8`` or ``FLOAT`` (default: the input's).
        seed: a fixed seed for this operator (default: derived from the pipeline seed).
        min_filter: the filter when the window is shrunk along an axis (default ``interp_type``).
        mag_filter: the filter when it is enlarged (default ``interp_type``; never antialiased).
        device: ``"cpu"`` (``"gpu"``: not yet).
    """
    params = RandomCropParams.from_args("random_resized_crop", random_area, random_aspect_ratio, num_attempts)
    op = RandomResizedCrop(size, params, interp=min_filter or interp_type, antialias=antialias, dtype=dtype, seed=seed,
                           name=name, mag_interp=mag_filter or interp_type)
    return add_node(op, [data], device=device)[0]
