"""``coord_flip``: reflect points (or vectors) about a centre, per axis, per sample.

As DALI's ``CoordFlip`` (CPU): the input is a float32 ``(N, ndim)`` array of
points, ``ndim`` in 1..3, with coordinates in ``layout`` order (default
``"x"``, ``"xy"`` or ``"xyz"``). A flipped coordinate becomes
``2 * center - value`` (float32: ``mirrored_origin - value`` with
``mirrored_origin = 2 * center``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import Device, Number
from .arguments import fn_function
from .boxes import F32

__all__ = ["CoordFlip", "coord_flip"]

_AXES = "xyz"


def _scalar(value: Any) -> float:
    return float(np.asarray(value, dtype=np.float64).reshape(-1)[0])


class CoordFlip(Operator):
    """Flips the coordinates of ``(N, ndim)`` points about ``center_*`` where ``flip_*`` is 1."""

    name = "coord_flip"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"flip_x", "flip_y", "flip_z", "center_x", "center_y", "center_z"})

    def __init__(self, *, layout: str = "", flip: dict[str, int], center: dict[str, float], name: str | None = None) -> None:
        super().__init__(name=name)
        if layout and (len(set(layout)) != len(layout) or any(c not in _AXES for c in layout) or len(layout) > 3):
            raise PipelineDefinitionError(
                f"coord_flip: layout must be made of distinct 'x', 'y', 'z' (e.g. 'xy', 'yx'), got {layout!r}")
        self._layout = layout
        self.flip = flip
        self.center = center

    def flip_sample(self, chunk: Chunk, row: int, sample: Any, xp: Any = np) -> Any:
        """One sample's points, flipped; ``xp`` is its array module (numpy, or cupy on the GPU)."""
        arr = xp.asarray(sample)
        if arr.dtype != np.float32:
            raise SampleError(f"coord_flip: points must be float32, got dtype {arr.dtype}")
        if arr.ndim != 2 or not 1 <= arr.shape[1] <= 3:
            raise SampleError(f"coord_flip: points must be a 2D array (N, ndim) with ndim 1..3, got shape {arr.shape}")
        ndim = arr.shape[1]
        layout = self._layout or _AXES[:ndim]
        if len(layout) != ndim:
            raise SampleError(f"coord_flip: layout {layout!r} names {len(layout)} coordinates but the points have {ndim}")
        out = arr.copy()
        for col, axis in enumerate(layout):
            if int(_scalar(chunk.arg(f"flip_{axis}", row, self.flip[axis]))):
                origin = F32(F32(2) * F32(_scalar(chunk.arg(f"center_{axis}", row, self.center[axis]))))
                out[:, col] = origin - arr[:, col]
        return out

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, sample: self.flip_sample(chunk, row, sample))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def coord_flip(
    data: DataNode,
    *,
    flip_x: int | DataNode = 1,
    flip_y: int | DataNode = 0,
    flip_z: int | DataNode = 0,
    center_x: Number | DataNode = 0.5,
    center_y: Number | DataNode = 0.5,
    center_z: Number | DataNode = 0.5,
    layout: str = "",
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Flip (reflect) point coordinates about a centre: ``v -> 2 * center - v`` on the flipped axes.

    Args:
        data: float32 points, ``(N, ndim)`` per sample (``ndim`` 1, 2 or 3).
        flip_x, flip_y, flip_z: 1 flips that coordinate (per sample allowed).
        center_x, center_y, center_z: the flip centre on each axis (per sample allowed).
        layout: order of the coordinates in a point (default ``"x"``, ``"xy"``, ``"xyz"``).
    """
    args = dict(flip_x=flip_x, flip_y=flip_y, flip_z=flip_z, center_x=center_x, center_y=center_y, center_z=center_z)
    constants, per_sample = split_arguments(args)
    flip = {a: int(constants.get(f"flip_{a}", 0)) for a in _AXES}
    center = {a: float(constants.get(f"center_{a}", 0.5)) for a in _AXES}
    op = CoordFlip(layout=layout, flip=flip, center=center, name=name)
    return add_node(op, [data], per_sample, device=device)[0]
