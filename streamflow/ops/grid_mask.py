"""``grid_mask``: zero out a (rotated, shifted) grid of squares (DALI's ``fn.grid_mask``, GridMask paper).

DALI 2.4's CPU kernel, repeated in the same float32 operations so the mask is
identical: with ``ca = cos(angle) / tile``, ``sa = sin(angle) / tile``,
pixel ``(y, x)`` has grid coordinates ``fx = -shift_x / tile - y * sa + x * ca``
and ``fy = -shift_y / tile + y * ca + x * sa``; it is kept when the
fractional part of ``fx`` or of ``fy`` is at least ``ratio``, zeroed
otherwise. So the black squares are ``ratio * tile`` wide, one per tile.

Inputs: HWC (or HW) images of uint8, int16, int32 or float32; all arguments
may be per sample. Against DALI's recorded outputs
(``tests/unit/ops/test_grid_mask.py``): identical.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._native import filters as native
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["GridMask", "grid_coefficients", "grid_keep_mask", "grid_mask"]

F32 = np.float32
_TYPES = tuple(np.dtype(t) for t in (np.uint8, np.int16, np.int32, np.float32))


def grid_coefficients(tile: int, angle: float, shift_x: float, shift_y: float) -> tuple[F32, F32, F32, F32]:
    """DALI's float32 ``cos(angle) / tile``, ``sin(angle) / tile``, ``shift_x / tile``, ``shift_y / tile``."""
    ang = F32(angle)
    ca = F32(F32(math.cos(ang)) / F32(tile))  # cos/sin of the float32 angle, rounded to float32
    sa = F32(F32(math.sin(ang)) / F32(tile))
    return ca, sa, F32(F32(shift_x) / F32(tile)), F32(F32(shift_y) / F32(tile))


def grid_keep_mask(height: int, width: int, tile: int, ratio: float, angle: float,
                   shift_x: float, shift_y: float) -> np.ndarray:
    """Boolean (height, width): True where the pixel is kept (numpy; the operator runs the C kernel)."""
    ca, sa, sx, sy = grid_coefficients(tile, angle, shift_x, shift_y)
    ys = np.arange(height, dtype=F32)[:, None]
    xs = np.arange(width, dtype=F32)[None, :]
    fxy = -sx + ys * -sa
    fyy = -sy + ys * ca
    fx = fxy + xs * ca
    fy = fyy + xs * sa
    r = F32(ratio)
    return ((fx - np.floor(fx)) >= r) | ((fy - np.floor(fy)) >= r)


class GridMask(Operator):
    """GridMask (see the module docstring)."""

    name = "grid_mask"
    per_sample_args = frozenset({"tile", "ratio", "angle", "shift_x", "shift_y"})
    keeps_channels = True

    def __init__(self, tile: int = 100, ratio: float = 0.5, angle: float = 0.0, shift_x: float = 0.0,
                 shift_y: float = 0.0, *, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        self.args = {"tile": tile, "ratio": ratio, "angle": angle, "shift_x": shift_x, "shift_y": shift_y}
        try:
            self._values(self.args)
        except SampleError as err:
            raise PipelineDefinitionError(str(err)) from None
        self._layout = layout

    @staticmethod
    def _values(args: dict[str, Any]) -> dict[str, float]:
        out = {}
        for key, value in args.items():
            arr = np.asarray(value, dtype=np.float64).reshape(-1)
            if arr.size != 1 or not math.isfinite(float(arr[0])):
                raise SampleError(f"grid_mask: {key} must be one finite number, got {value!r}")
            out[key] = float(arr[0])
        if out["tile"] < 1 or out["tile"] != int(out["tile"]):
            raise SampleError(f"grid_mask: tile must be a positive integer, got {args['tile']!r}")
        return out

    def _one(self, chunk: Chunk, row: int, image: Any) -> np.ndarray:
        image = np.asarray(image)
        if image.dtype not in _TYPES:
            raise SampleError(f"grid_mask: unsupported type {image.dtype}; expected uint8, int16, int32 or float32")
        if image.ndim not in (2, 3):
            raise SampleError(f"grid_mask: expected an HWC or HW image, got shape {image.shape}")
        v = self._values({k: chunk.arg(k, row, d) for k, d in self.args.items()})
        ca, sa, sx, sy = grid_coefficients(int(v["tile"]), v["angle"], v["shift_x"], v["shift_y"])
        return native.grid_mask(image, float(ca), float(sa), float(sx), float(sy), float(F32(v["ratio"])))

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, image: self._one(chunk, row, image))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def grid_mask(
    data: DataNode,
    *,
    tile: int | DataNode = 100,
    ratio: float | DataNode = 0.5,
    angle: float | DataNode = 0.0,
    shift_x: float | DataNode = 0.0,
    shift_y: float | DataNode = 0.0,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Zero out a grid of squares (GridMask).

    Args:
        tile: the grid's period [pixels]: a black square plus the gap after it.
        ratio: the black square's side as a fraction of ``tile``.
        angle: rotation of the grid about the origin [radians].
        shift_x, shift_y: translation of the grid, after the rotation [pixels].
    """
    constants, per_sample = split_arguments(dict(tile=tile, ratio=ratio, angle=angle, shift_x=shift_x,
                                                 shift_y=shift_y))
    op = GridMask(**constants, layout=input_layout(data, "grid_mask"), name=name)
    return add_node(op, [data], per_sample, device=device)[0]
