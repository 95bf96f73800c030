"""``experimental.dilate`` and ``experimental.erode``: grey-level morphology with a rectangular
structuring element, DALI 2.4's arguments (DALI runs them only on the GPU, with CV-CUDA).

Each output pixel is the maximum (dilate) or minimum (erode) of the input over
a ``mask_size = (width, height)`` window (default 3 x 3) placed with its
``anchor = (x, y)`` on the pixel (default ``(-1, -1)``: the centre,
``size // 2``), per channel. ``iterations = n`` is, as DALI documents, the
mask grown by ``(width - 1, height - 1)`` per extra iteration (the anchor
scaled likewise; OpenCV does the same for rectangles). Outside the image
(``border_mode``): ``constant`` (default) never wins (OpenCV's convention for
morphology), ``replicate``, ``reflect`` (``cba|abcd|dcb``), ``reflect_101``
(``dcb|abcd|cba``), ``wrap``. ``mask_size`` and ``anchor`` may be per sample.

Inputs: ``HW``, ``HWC``, ``CHW`` images or ``FHWC``/``FCHW`` sequences of
uint8, uint16, int16 or float32. The computation is two passes of shifted
maxima over ``xp`` (numpy here, cupy on the GPU), so both devices run this code.
There is no DALI CPU output to compare with; the tests check against OpenCV.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["BORDERS", "Morphology", "dilate", "erode", "morph"]

#: DALI's border names and numpy's ``pad`` modes.
BORDERS = {"constant": "constant", "replicate": "edge", "reflect": "symmetric", "reflect_101": "reflect",
           "wrap": "wrap"}
_SPATIAL = {"HW": (0, 1), "HWC": (0, 1), "CHW": (1, 2), "FHWC": (1, 2), "FCHW": (2, 3)}


def _extreme(dtype: np.dtype, dilate: bool) -> Any:
    """The value that never wins: the type's lowest for a maximum, its highest for a minimum."""
    if dtype.kind == "f":
        return dtype.type(-np.inf if dilate else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if dilate else info.max)


def morph(xp: Any, image: Any, axes: tuple[int, int], size: tuple[int, int], anchor: tuple[int, int],
          iterations: int, border: str, dilate: bool) -> Any:
    """``image`` dilated (or eroded) over its ``axes`` (y, x); ``size`` and ``anchor`` are (x, y)."""
    reduce = xp.maximum if dilate else xp.minimum
    # DALI: each more iteration grows the mask by (width - 1, height - 1) (the anchor scales with it).
    size = ((size[0] - 1) * iterations + 1, (size[1] - 1) * iterations + 1)
    anchor = (anchor[0] * iterations, anchor[1] * iterations)
    out = image
    for axis, k, a in ((axes[0], size[1], anchor[1]), (axes[1], size[0], anchor[0])):
        if k == 1:
            continue
        pad = [(0, 0)] * out.ndim
        pad[axis] = (a, k - 1 - a)
        if border == "constant":
            padded = xp.pad(out, pad, mode="constant", constant_values=_extreme(np.dtype(out.dtype), dilate))
        else:
            padded = xp.pad(out, pad, mode=BORDERS[border])
        n = out.shape[axis]
        index = [slice(None)] * out.ndim
        acc = None
        for d in range(k):
            index[axis] = slice(d, d + n)
            part = padded[tuple(index)]
            acc = part if acc is None else reduce(acc, part)
        out = acc
    return xp.ascontiguousarray(out)


def _pair(value: Any, what: str) -> tuple[int, int]:
    values = [int(v) for v in np.asarray(value).reshape(-1)]
    if len(values) == 1:
        values *= 2
    if len(values) != 2:
        raise SampleError(f"{what} must be 1 or 2 integers, got {values}")
    return values[0], values[1]


class Morphology(Operator):
    """Dilation or erosion (``dilate``)."""

    name: ClassVar[str] = "experimental.dilate"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"mask_size", "anchor"})
    keeps_channels = True

    def __init__(self, dilate: bool, *, mask_size: tuple[int, int] = (3, 3), anchor: tuple[int, int] = (-1, -1),
                 iterations: int = 1, border_mode: str = "constant", layout: str = "",
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.dilate = dilate
        self.op_name = "experimental.dilate" if dilate else "experimental.erode"
        if border_mode not in BORDERS:
            raise PipelineDefinitionError(f"{self.op_name}: border_mode must be one of {sorted(BORDERS)}, "
                                          f"got {border_mode!r}")
        if iterations < 1:
            raise PipelineDefinitionError(f"{self.op_name}: iterations must be >= 1, got {iterations}")
        self.mask_size, self.anchor, self.iterations, self.border_mode = mask_size, anchor, iterations, border_mode
        self._layout = layout

    def plan(self, chunk: Chunk, row: int, image: Any) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
        """(spatial axes, size (x, y), anchor (x, y)) of one sample."""
        layout = self._layout or {2: "HW", 3: "HWC"}.get(image.ndim, "")
        axes = _SPATIAL.get(layout)
        if axes is None or len(layout) != image.ndim:
            raise SampleError(f"{self.op_name}: expects HW, HWC, CHW, FHWC or FCHW data, got shape "
                              f"{tuple(image.shape)} (layout {layout!r})")
        if np.dtype(image.dtype) not in (np.uint8, np.uint16, np.int16, np.float32):
            raise SampleError(f"{self.op_name}: expects uint8, uint16, int16 or float32 data, got {image.dtype}")
        size = _pair(chunk.arg("mask_size", row, self.mask_size), f"{self.op_name}: mask_size")
        anchor = list(_pair(chunk.arg("anchor", row, self.anchor), f"{self.op_name}: anchor"))
        if min(size) < 1:
            raise SampleError(f"{self.op_name}: mask_size must be positive, got {list(size)}")
        for i in (0, 1):
            anchor[i] = size[i] // 2 if anchor[i] == -1 else anchor[i]
            if not 0 <= anchor[i] < size[i]:
                raise SampleError(f"{self.op_name}: anchor {anchor} is outside the mask {list(size)}")
        return axes, size, (anchor[0], anchor[1])

    def apply(self, xp: Any, chunk: Chunk, row: int, image: Any) -> Any:
        axes, size, anchor = self.plan(chunk, row, image)
        return morph(xp, image, axes, size, anchor, self.iterations, self.border_mode, self.dilate)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, image: self.apply(np, chunk, row, np.asarray(image)))]

    def layout(self, index: int) -> str:
        return self._layout


def _node(dilate: bool, input: DataNode, mask_size: Any, anchor: Any, iterations: int, border_mode: str,
          device: Any, name: str | None) -> DataNode:
    what = "experimental.dilate" if dilate else "experimental.erode"
    constants, per_sample = split_arguments({"mask_size": mask_size, "anchor": anchor})
    layout = input_layout(input, what)
    if layout and layout not in _SPATIAL:
        raise PipelineDefinitionError(f"{what}: expects HW, HWC, CHW, FHWC or FCHW data, got layout {layout!r}")
    try:
        size = _pair(constants.get("mask_size", (3, 3)), f"{what}: mask_size")
        anc = _pair(constants.get("anchor", (-1, -1)), f"{what}: anchor")
    except SampleError as err:
        raise PipelineDefinitionError(str(err)) from None
    op = Morphology(dilate, mask_size=size, anchor=anc, iterations=iterations, border_mode=border_mode,
                    layout=layout, name=name)
    return add_node(op, [input], per_sample, device=device)[0]


@fn_function()
def dilate(
    input: DataNode,
    *,
    mask_size: int | Sequence[int] | DataNode = (3, 3),
    anchor: int | Sequence[int] | DataNode = (-1, -1),
    iterations: int = 1,
    border_mode: str = "constant",
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Grey-level dilation (the maximum over a ``mask_size = (width, height)`` window).

    Args:
        mask_size: the structuring element's (width, height) (default 3 x 3); may be per sample.
        anchor: its (x, y) on the pixel (default (-1, -1): the centre); may be per sample.
        iterations: times to apply it.
        border_mode: ``constant`` (outside never wins), ``replicate``, ``reflect``, ``reflect_101``, ``wrap``.
    """
    return _node(True, input, mask_size, anchor, iterations, border_mode, device, name)


@fn_function()
def erode(
    input: DataNode,
    *,
    mask_size: int | Sequence[int] | DataNode = (3, 3),
    anchor: int | Sequence[int] | DataNode = (-1, -1),
    iterations: int = 1,
    border_mode: str = "constant",
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Grey-level erosion (the minimum over a ``mask_size = (width, height)`` window); see ``dilate``."""
    return _node(False, input, mask_size, anchor, iterations, border_mode, device, name)
