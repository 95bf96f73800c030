"""``bbox_paste``: move boxes along with an image pasted on a larger canvas (``fn.paste``).

As DALI's ``BBoxPaste`` (CPU), in float32: with ``scale = 1 / ratio`` and
``offset = paste * (ratio - 1) / ratio`` (nudged down, if needed, so that
``scale + offset <= 1``), a corner ``c`` becomes ``c * scale + offset`` and an
extent ``w`` becomes ``w * scale``. ``paste_x = paste_y = 0`` aligns the image
to the canvas's top-left corner, ``1`` to its bottom-right one.

Unlike DALI, a ``ratio`` below 1 (a canvas smaller than the image) is refused:
the boxes would leave ``[0, 1]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import Device, Number
from .arguments import fn_function
from .boxes import F32, as_box_array

__all__ = ["BboxPaste", "bbox_paste", "paste_boxes"]


def _offset(paste: float, ratio: np.float32, scale: np.float32) -> np.float32:
    ofs = F32(F32(paste) * F32(F32(ratio - F32(1)) / ratio))
    if F32(scale + ofs) > 1:
        ofs = F32(F32(1) - scale)
        while F32(scale + ofs) > 1:
            ofs = np.nextafter(ofs, F32(-1))
    return ofs


def paste_boxes(rows: np.ndarray, ratio: float, paste_x: float, paste_y: float, ltrb: bool) -> np.ndarray:
    """``(N, 4)`` float32 boxes after pasting their image at ``(paste_x, paste_y)`` on a canvas ``ratio`` times larger."""
    r = F32(ratio)
    scale = F32(F32(1) / r)
    ox, oy = _offset(paste_x, r, scale), _offset(paste_y, r, scale)
    out = (rows * scale).astype(F32)
    out[:, 0] += ox
    out[:, 1] += oy
    if ltrb:
        out[:, 2] += ox
        out[:, 3] += oy
    return out


def _check_ratio(value: Any, where: str) -> float:
    ratio = float(np.asarray(value, dtype=np.float64).reshape(-1)[0])
    if not ratio >= 1.0 or not np.isfinite(ratio):
        raise PipelineDefinitionError(f"bbox_paste: ratio must be a finite number >= 1 (canvas size / image size), got {ratio}{where}")
    return ratio


class BboxPaste(Operator):
    """Maps ``(N, 4)`` boxes (``xywh`` or ``ltrb``) into the canvas's normalized coordinates."""

    name = "bbox_paste"
    per_sample_args = frozenset({"ratio", "paste_x", "paste_y"})

    def __init__(self, *, ratio: float | None, paste_x: float = 0.5, paste_y: float = 0.5, ltrb: bool = False,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.ratio = None if ratio is None else _check_ratio(ratio, "")
        self.paste_x, self.paste_y = float(paste_x), float(paste_y)
        self.ltrb = bool(ltrb)

    def _one(self, chunk: Chunk, row: int, sample: Any) -> np.ndarray:
        shape = np.shape(sample)
        if np.size(sample) % 4:
            raise SampleError(f"bbox_paste: boxes must have 4 coordinates each, got shape {shape}")
        rows = as_box_array(np.reshape(sample, -1), 4, self.name)
        value = chunk.arg("ratio", row, self.ratio)
        try:
            ratio = _check_ratio(value, " for this sample")
        except PipelineDefinitionError as err:
            raise SampleError(str(err)) from None
        px = float(np.asarray(chunk.arg("paste_x", row, self.paste_x)).reshape(-1)[0])
        py = float(np.asarray(chunk.arg("paste_y", row, self.paste_y)).reshape(-1)[0])
        return paste_boxes(rows, ratio, px, py, self.ltrb).reshape(shape)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, sample: self._one(chunk, row, sample))]


@fn_function()
def bbox_paste(
    data: DataNode,
    *,
    ratio: Number | DataNode,
    paste_x: Number | DataNode = 0.5,
    paste_y: Number | DataNode = 0.5,
    ltrb: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Transform boxes so they stay on their objects after the image is pasted on a larger canvas.

    Args:
        data: boxes, ``(N, 4)`` float32 per sample, normalized to the image.
        ratio: canvas size / image size (at least 1); per sample allowed.
        paste_x: horizontal position of the paste, 0 (left) to 1 (right); per sample allowed.
        paste_y: vertical position of the paste, 0 (top) to 1 (bottom); per sample allowed.
        ltrb: ``True`` for ``[left, top, right, bottom]``, ``False`` for ``[x, y, w, h]``.
    """
    constants, per_sample = split_arguments(dict(ratio=ratio, paste_x=paste_x, paste_y=paste_y))
    op = BboxPaste(ratio=constants.get("ratio"), paste_x=constants.get("paste_x", 0.5),
                   paste_y=constants.get("paste_y", 0.5), ltrb=ltrb, name=name)
    return add_node(op, [data], per_sample, device=device)[0]
