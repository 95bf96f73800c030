"""``filter``: 2-D correlation of images with a given kernel (DALI's ``fn.filter`` / ``fn.experimental.filter``).

DALI 2.4's rules, checked on its CPU operator:

* ``out[y, x] = sum k[dy, dx] * in[y + dy - ay, x + dx - ax]`` (a correlation:
  the kernel is not flipped), per channel, for the two spatial axes of HW,
  HWC, CHW and sequences (FHWC, FCHW); ``(ay, ax)`` is ``anchor``, default
  the kernel's middle ``(kh // 2, kw // 2)``.
* ``border``: ``reflect_101`` (default), ``reflect_1001``, ``wrap``,
  ``clamp`` or ``constant`` (the ``fill_value`` input, default 0); reflections
  repeat when the kernel is larger than the image.
* ``mode="valid"`` computes only the positions where the kernel lies inside
  the image (the output is ``kh - 1`` rows and ``kw - 1`` columns smaller;
  ``anchor`` is ignored).
* float32 arithmetic; the output is the input's type (integers round half
  away from zero, saturate) or float32 (``dtype=FLOAT``).

The kernel is the second input: pipeline data (one 2-D float32 kernel per
sample) or, unlike DALI, a constant array given directly
(``fn.filter(images, np.ones((3, 3)) / 9)``), which DALI spells
``types.Constant(kernel)``.

Against DALI's recorded outputs (``tests/unit/ops/test_filter.py``): float32
outputs of integer inputs bit-identical, of float32 inputs within 1e-6 (a few
ulps); uint8 outputs equal except 2 of ~45 000 values (off by one, at x.5
ties where the two sums differ in the last bit).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._native import filters as native
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device, parse_dtype
from .arguments import fn_function
from .spatial import map_planes, sample_layout

__all__ = ["Filter", "filter"]

MODES = ("same", "valid")


def _kernel(value: Any, where: str) -> np.ndarray:
    try:
        k = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise SampleError(f"filter: {where} must be a 2-D array of numbers, got {type(value).__name__}") from None
    if k.ndim != 2 or 0 in k.shape:
        raise SampleError(f"filter: {where} must be a non-empty 2-D array (kh, kw), got shape {k.shape}")
    if not np.isfinite(k).all():
        raise SampleError(f"filter: {where} must be finite")
    return np.ascontiguousarray(k)


class Filter(Operator):
    """Correlation of each sample with its kernel (see the module docstring).

    Inputs: the images, then the kernels when they are pipeline data, then the
    fill values when they are pipeline data.
    """

    name = "filter"
    per_sample_args = frozenset({"anchor"})
    keeps_channels = True

    def __init__(self, kernel: Any = None, fill_value: Any = None, *, fill_input: bool = False, anchor: Any = (-1, -1),
                 border: str = "reflect_101", mode: str = "same", dtype: Any = None, layout: str = "",
                 name: str | None = None) -> None:
        super().__init__(name=name)
        try:
            self.kernel = None if kernel is None else _kernel(kernel, "the filter")
        except SampleError as err:
            raise PipelineDefinitionError(str(err)) from None
        self.fill_value, self.fill_input = fill_value, fill_input
        if border not in native.BORDERS:
            raise PipelineDefinitionError(f"filter: border must be one of {', '.join(native.BORDERS)}; got {border!r}")
        if mode not in MODES:
            raise PipelineDefinitionError(f"filter: mode must be 'same' or 'valid'; got {mode!r}")
        self.border, self.mode, self.anchor = border, mode, anchor
        self.out_dtype = None if dtype is None else parse_dtype(dtype).numpy
        self._layout = layout

    def _anchor(self, chunk: Chunk, row: int, kh: int, kw: int) -> tuple[int, int]:
        given = np.asarray(chunk.arg("anchor", row, self.anchor)).reshape(-1)
        if given.size == 1:
            given = np.repeat(given, 2)
        if given.size != 2:
            raise SampleError(f"filter: anchor must have 1 or 2 values, got {given.size}")
        ay, ax = (int(v) for v in given)
        ay, ax = (kh // 2 if ay == -1 else ay), (kw // 2 if ax == -1 else ax)
        if not (0 <= ay < kh and 0 <= ax < kw):
            raise SampleError(f"filter: anchor {(ay, ax)} must lie within the {kh}x{kw} filter (or be -1)")
        return ay, ax

    def _one(self, chunk: Chunk, row: int, image: Any) -> np.ndarray:
        image = np.asarray(image)
        layout = sample_layout(self._layout, image.ndim, self.name)
        extra = 1
        if self.kernel is None:
            kernel = _kernel(chunk.inputs[extra][row], f"the filter of sample {row}")
            extra += 1
        else:
            kernel = self.kernel
        fill = chunk.inputs[extra][row] if self.fill_input else self.fill_value
        fill_arr = np.asarray(0 if fill is None else fill).reshape(-1)
        if fill_arr.size != 1:
            raise SampleError(f"filter: fill_value must be one scalar per sample, got {fill_arr.size} values")
        if self.out_dtype is not None and self.out_dtype not in (image.dtype, np.dtype(np.float32)):
            raise SampleError(f"filter: dtype must be FLOAT or the input's type ({image.dtype}), "
                              f"got {self.out_dtype.name}")
        ay, ax = self._anchor(chunk, row, *kernel.shape)
        # one plane of the sample's own shape: written straight into the batch row
        slot = (chunk.output_buffer(row, image.shape, self.out_dtype or image.dtype)
                if layout in ("HW", "HWC") and self.mode == "same" else None)
        try:
            return map_planes(image, layout, lambda p: native.filter2d(
                p, kernel, anchor=(ay, ax), border=self.border, fill=float(fill_arr[0]),
                valid=self.mode == "valid", out_dtype=self.out_dtype, out=slot))
        except ValueError as err:
            raise SampleError(f"filter: {err}") from None

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, image: self._one(chunk, row, image))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def filter(
    data: DataNode,
    filter: Any,
    fill_value: Any = None,
    *,
    anchor: int | tuple[int, int] | list[int] | DataNode = (-1, -1),
    border: str = "reflect_101",
    mode: str = "same",
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Correlate images with ``filter`` (a 2-D float32 kernel, per sample or constant).

    Args:
        filter: the kernel: pipeline data (one per sample) or an array.
        fill_value: the value outside the image with ``border="constant"``
            (pipeline data or a number; default 0).
        anchor: the kernel element placed over each output pixel, ``(ay, ax)``;
            -1 means the middle.
        border: ``reflect_101``, ``reflect_1001``, ``wrap``, ``clamp`` or ``constant``.
        mode: ``same`` (output of the input's size) or ``valid`` (only full overlaps).
        dtype: ``FLOAT`` or the input's type (default).
    """
    inputs = [data]
    kernel = None
    if isinstance(filter, DataNode):
        inputs.append(filter)
    elif filter is None:
        raise PipelineDefinitionError("filter: the filter (input 1) is required")
    else:
        kernel = filter
    fill = None
    if isinstance(fill_value, DataNode):
        inputs.append(fill_value)
    elif fill_value is not None:
        fill = fill_value
        if np.asarray(fill).size != 1:
            raise PipelineDefinitionError(f"filter: fill_value must be one number, got {fill_value!r}")
    constants, per_sample = split_arguments({"anchor": anchor})
    layout = input_layout(data, "filter")
    op = Filter(kernel, fill, fill_input=isinstance(fill_value, DataNode), anchor=constants.get("anchor", (-1, -1)), border=border, mode=mode, dtype=dtype,
                layout=layout, name=name)
    return add_node(op, inputs, per_sample, device=device)[0]
