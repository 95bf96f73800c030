"""``box_encoder``: SSD's matching of ground-truth boxes to anchors (default boxes).

As DALI's ``BoxEncoder`` (CPU), in float32:

1. IoU of every box (``ltrb``) with every anchor (``ltrb``). The best anchor
   of each box gets IoU 2 (ties: the last anchor), so every box is matched.
2. Each anchor takes the box of highest IoU with it (ties: the last box); the
   match holds when that IoU is above ``criteria``.
3. Output boxes, one per anchor, as ``[cx, cy, w, h]``: the matched box, or the
   anchor itself when unmatched (zeros with ``offset=True``); labels: the
   matched box's label, or 0 (background).
4. ``offset=True`` writes SSD's regression targets instead:
   ``((c_box - c_anchor) / wh_anchor - means[:2]) / stds[:2]`` and
   ``(log(wh_box / wh_anchor) - means[2:]) / stds[2:]``, after multiplying
   boxes and anchors by ``scale``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node
from ..operator import Chunk, Operator
from ..types import Device, Number
from .arguments import fn_function
from .boxes import F32, as_box_array, each_box_sample

__all__ = ["BoxEncoder", "box_encoder", "centre_extent", "logf"]


def logf(x: Any, xp: Any = np) -> Any:
    """C's ``logf``: the float32 logarithm correctly rounded (numpy's float32 log may be 1 ulp off)."""
    return xp.log(x.astype(np.float64)).astype(F32)


def centre_extent(lo: Any, hi: Any) -> tuple[Any, Any]:
    """Box centres and extents from corners, float32 as DALI."""
    return ((lo + hi) * F32(0.5)).astype(F32), (hi - lo).astype(F32)


class BoxEncoder(Operator):
    """Encodes ``(N, 4)`` ``ltrb`` boxes and ``(N,)`` labels against the anchors."""

    name = "box_encoder"
    devices = frozenset({Device.CPU, Device.GPU})
    num_outputs = 2

    def __init__(self, *, anchors: Sequence[float], criteria: float = 0.5, offset: bool = False, scale: float = 1.0,
                 means: Sequence[float] = (0.0, 0.0, 0.0, 0.0), stds: Sequence[float] = (1.0, 1.0, 1.0, 1.0),
                 name: str | None = None) -> None:
        super().__init__(name=name)
        flat = np.asarray(anchors, dtype=F32).reshape(-1)
        if flat.size == 0 or flat.size % 4:
            raise PipelineDefinitionError(
                f"box_encoder: anchors must be a non-empty list of ltrb boxes (a multiple of 4 values), got {flat.size} values")
        self.anchors = flat.reshape(-1, 4)
        if not 0.0 <= float(criteria) <= 1.0:
            raise PipelineDefinitionError(f"box_encoder: criteria must be in [0, 1], got {criteria}")
        self.criteria = F32(criteria)
        self.offset = bool(offset)
        self.scale = F32(scale)
        self.means = np.asarray(means, dtype=F32).reshape(-1)
        self.stds = np.asarray(stds, dtype=F32).reshape(-1)
        if self.means.size != 4 or self.stds.size != 4:
            raise PipelineDefinitionError(
                f"box_encoder: means and stds must have 4 values ([x, y, w, h]), got {self.means.size} and {self.stds.size}")
        if np.any(self.stds == 0):
            raise PipelineDefinitionError(f"box_encoder: stds must not be 0, got {self.stds.tolist()}")
        a_lo, a_hi = self.anchors[:, :2], self.anchors[:, 2:]
        self._anchor_centre, self._anchor_extent = centre_extent(a_lo, a_hi)
        self._a = [np.ascontiguousarray(self.anchors[:, k]) for k in range(4)]  # x0 y0 x1 y1
        self._a_area = (self._a[2] - self._a[0]) * (self._a[3] - self._a[1])

    def _ious(self, boxes: np.ndarray) -> np.ndarray:
        """``(boxes, anchors)`` IoU, float32 in DALI's order (``boxes.iou`` specialised to 2D, one pass per axis)."""
        x0, y0, x1, y1 = (boxes[:, k : k + 1] for k in range(4))
        iw = np.minimum(x1, self._a[2]) - np.maximum(x0, self._a[0])
        ih = np.minimum(y1, self._a[3]) - np.maximum(y0, self._a[1])
        inter = np.maximum(iw, F32(0)) * np.maximum(ih, F32(0))  # 0 where disjoint, else w * h
        union = ((x1 - x0) * (y1 - y0) + self._a_area) - inter
        with np.errstate(divide="ignore", invalid="ignore"):
            ious = inter / union
        ious[inter == 0] = 0
        return ious

    def encode(self, boxes: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(num_anchors, 4)`` float32 encoded boxes and ``(num_anchors,)`` labels (``labels``' type)."""
        n_anchors = len(self.anchors)
        out_labels = np.zeros(n_anchors, dtype=labels.dtype)
        if self.offset:
            out = np.zeros((n_anchors, 4), dtype=F32)
        else:
            out = np.concatenate([self._anchor_centre, self._anchor_extent], axis=1)
        if len(boxes) == 0:
            return out, out_labels
        ious = self._ious(boxes)  # (boxes, anchors)
        # best anchor of each box (last of equals) gets IoU 2
        best_anchor = n_anchors - 1 - np.argmax(ious[:, ::-1], axis=1)
        ious[np.arange(len(boxes)), best_anchor] = F32(2)
        # best box of each anchor (last of equals)
        best_box = len(boxes) - 1 - np.argmax(ious[::-1, :], axis=0)
        best_iou = ious[best_box, np.arange(n_anchors)]
        matched = np.nonzero(best_iou > self.criteria)[0]
        if matched.size == 0:
            return out, out_labels
        src = best_box[matched]
        centre, extent = centre_extent(boxes[src, :2], boxes[src, 2:])
        if self.offset:
            s = self.scale
            centre, extent = (centre * s).astype(F32), (extent * s).astype(F32)
            a_c = (self._anchor_centre[matched] * s).astype(F32)
            a_e = (self._anchor_extent[matched] * s).astype(F32)
            with np.errstate(divide="ignore", invalid="ignore"):
                xy = ((((centre - a_c) / a_e).astype(F32) - self.means[:2]) / self.stds[:2]).astype(F32)
                wh = ((logf((extent / a_e).astype(F32)) - self.means[2:]) / self.stds[2:]).astype(F32)
            centre, extent = xy, wh
        out[matched, :2] = centre
        out[matched, 2:] = extent
        out_labels[matched] = labels[src]
        return out, out_labels

    def check_sample(self, boxes: Any, labels: Any, xp: Any = np) -> tuple[Any, Any]:
        """A sample's boxes as ``(N, 4)`` float32 and its ``(N,)`` integer labels, or a ``SampleError``."""
        rows = as_box_array(boxes, 4, self.name, xp=xp)
        lab = xp.asarray(labels)
        if lab.dtype.kind not in "iu":
            raise SampleError(f"box_encoder: labels must be integers, got dtype {lab.dtype}")
        lab = lab.reshape(-1)
        if lab.size != len(rows):
            raise SampleError(f"box_encoder: {len(rows)} boxes but {lab.size} labels; give one label per box")
        return rows, lab

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return each_box_sample(chunk, True, 2, lambda row, boxes, labels: self.encode(*self.check_sample(boxes, labels)))


@fn_function()
def box_encoder(
    boxes: DataNode,
    labels: DataNode,
    *,
    anchors: Sequence[Number],
    criteria: Number = 0.5,
    offset: bool = False,
    scale: Number = 1.0,
    means: Sequence[Number] = (0.0, 0.0, 0.0, 0.0),
    stds: Sequence[Number] = (1.0, 1.0, 1.0, 1.0),
    device: str | Device | None = None,
    name: str | None = None,
) -> tuple[DataNode, DataNode]:
    """Match boxes to SSD anchors: one ``[cx, cy, w, h]`` box and one label per anchor.

    Args:
        boxes: ``(N, 4)`` ``ltrb`` float32 boxes per sample.
        labels: ``(N,)`` integer labels per sample.
        anchors: the anchors as a flat list of ``ltrb`` values.
        criteria: IoU above which an anchor is matched to a box.
        offset: output SSD's normalized offsets instead of the boxes.
        scale: multiplies boxes and anchors before the offsets are computed.
        means, stds: ``[x, y, w, h]`` normalization of the offsets.

    Returns:
        ``(encoded_boxes, encoded_labels)``: ``(num_anchors, 4)`` float32 and ``(num_anchors,)``.
    """
    op = BoxEncoder(anchors=anchors, criteria=criteria, offset=offset, scale=scale, means=means, stds=stds, name=name)
    return add_node(op, [boxes, labels], device=device)  # type: ignore[return-value]
