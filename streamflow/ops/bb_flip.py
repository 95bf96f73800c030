"""``bb_flip``: mirror bounding boxes in normalized ``[0, 1]`` coordinates, per sample.

As DALI's ``BbFlip`` (CPU): the boxes are read as ``xywh`` (default) or ``ltrb``
(``ltrb=True``), flipped (``lo' = 1 - hi``, ``hi' = 1 - lo`` on the flipped axis)
and written back in the same format, in float32. Coordinates are not checked
against ``[0, 1]`` (DALI does not either). The output has the input's shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function
from .boxes import F32, as_box_array, parse_box_layout, read_boxes, write_boxes

__all__ = ["BbFlip", "bb_flip", "flip_boxes"]


_LAYOUTS = {True: parse_box_layout("xyXY", 2, "bb_flip"), False: parse_box_layout("xyWH", 2, "bb_flip")}


def flip_boxes(rows: Any, ltrb: bool, horizontal: bool, vertical: bool, xp: Any = np) -> Any:
    """Flip ``(N, 4)`` float32 box rows (``ltrb`` or ``xywh``) about the centre of the unit square.

    ``xp``: the rows' array module (numpy, or cupy on the GPU: the same float32 operations).
    """
    layout = _LAYOUTS[bool(ltrb)]
    lo, hi = read_boxes(rows, layout, xp)
    one = F32(1)
    for axis, flip in ((0, horizontal), (1, vertical)):
        if flip:
            new_lo = (one - hi[:, axis]).astype(F32)
            new_hi = (one - lo[:, axis]).astype(F32)
            lo[:, axis], hi[:, axis] = new_lo, new_hi
    return write_boxes(lo, hi, layout, xp)


class BbFlip(Operator):
    """Flips ``(N, 4)`` boxes; ``horizontal`` / ``vertical`` are 1 (flip) or 0, per sample."""

    name = "bb_flip"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"horizontal", "vertical"})

    def __init__(self, *, ltrb: bool = False, horizontal: int = 1, vertical: int = 0, name: str | None = None) -> None:
        super().__init__(name=name)
        self.ltrb = bool(ltrb)
        self.horizontal, self.vertical = int(horizontal), int(vertical)

    def flip_sample(self, chunk: Chunk, row: int, sample: Any, xp: Any = np) -> Any:
        """One sample's boxes, flipped; ``xp`` is its array module (numpy, or cupy on the GPU)."""
        sample = xp.asarray(sample)
        shape = tuple(sample.shape)
        if sample.size % 4:
            raise SampleError(f"bb_flip: boxes must have 4 coordinates each, got shape {shape}")
        rows = as_box_array(sample.reshape(-1), 4, self.name, xp=xp)
        h = bool(int(np.asarray(chunk.arg("horizontal", row, self.horizontal)).reshape(-1)[0]))
        v = bool(int(np.asarray(chunk.arg("vertical", row, self.vertical)).reshape(-1)[0]))
        return flip_boxes(rows, self.ltrb, h, v, xp).reshape(shape)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, sample: self.flip_sample(chunk, row, sample))]


@fn_function()
def bb_flip(
    data: DataNode,
    *,
    ltrb: bool = False,
    horizontal: int | DataNode = 1,
    vertical: int | DataNode = 0,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Flip bounding boxes horizontally and/or vertically (mirror), in normalized coordinates.

    Args:
        data: boxes, ``(N, 4)`` float32 per sample.
        ltrb: ``True`` for ``[left, top, right, bottom]``, ``False`` for ``[x, y, w, h]``.
        horizontal: 1 flips left-right (per sample allowed, e.g. ``fn.random.coin_flip()``).
        vertical: 1 flips top-bottom (per sample allowed).
    """
    constants, per_sample = split_arguments(dict(horizontal=horizontal, vertical=vertical))
    op = BbFlip(ltrb=ltrb, horizontal=constants.get("horizontal", 1), vertical=constants.get("vertical", 0), name=name)
    return add_node(op, [data], per_sample, device=device)[0]
