"""``bbox_rotate``: move boxes along with an image rotated by ``fn.rotate``.

As DALI's ``BBoxRotate`` (CPU), in float32. Give it the boxes *before* the
image is rotated, with the image's shape (``input_shape``, ``shape_layout``
default ``"HW"``) and the same ``angle``, ``keep_size`` / ``size`` as
``fn.rotate``:

1. the four corners of each box, in pixels about the image centre (boxes are
   normalized unless ``bbox_normalized=False``), are rotated by ``angle``
   degrees counter-clockwise on the screen (``x' = x cos + y sin``,
   ``y' = -x sin + y cos``, y pointing down) and moved to the centre of the
   output canvas (``fn.rotate``'s canvas: the input's size with
   ``keep_size``, ``size`` if given, else the smallest canvas holding the
   rotated image);
2. the new box encloses the corners (``mode="expand"``), or is shrunk back by
   the growth of its sides (``"fixed"``, keeping the original width and
   height, swapped when the rotation turned the box's long side), or by half
   of it (``"halfway"``);
3. boxes are clipped to the canvas; a box left with less than
   ``remove_threshold`` of its area is removed, with its label;
4. boxes are written back as given (``bbox_layout`` ``"xyXY"`` or ``"xyWH"``),
   normalized to the canvas when the input was.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import Device, Number
from .arguments import fn_function
from .boxes import F32, as_box_array, each_box_sample, kept_labels
from .rotate import rotated_canvas_size

__all__ = ["BBoxRotate", "bbox_rotate", "rotate_boxes"]

_MODES = ("expand", "fixed", "halfway")
_D2R = F32(math.pi / 180)


def rotate_boxes(rows: np.ndarray, angle_deg: float, in_wh: tuple[float, float], out_wh: tuple[float, float], *,
                 ltrb: bool, normalized: bool, mode: str, remove_threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """``(boxes, kept indices)`` of ``(N, 4)`` float32 ``rows`` rotated as the module doc says."""
    box = rows.astype(F32, copy=True)
    if not ltrb:
        box[:, 2] = box[:, 2] + box[:, 0]
        box[:, 3] = box[:, 3] + box[:, 1]
    xs = box[:, [0, 2, 0, 2]]
    ys = box[:, [1, 1, 3, 3]]
    iw, ih = F32(in_wh[0]), F32(in_wh[1])
    if normalized:
        xs = ((xs - F32(0.5)) * iw).astype(F32)
        ys = ((ys - F32(0.5)) * ih).astype(F32)
    else:
        xs = (xs - F32(iw / F32(2))).astype(F32)
        ys = (ys - F32(ih / F32(2))).astype(F32)
    old_w, old_h = (xs[:, 1] - xs[:, 0]).astype(F32), (ys[:, 2] - ys[:, 0]).astype(F32)
    angle = F32(F32(angle_deg) * _D2R)
    c, s = F32(math.cos(float(angle))), F32(math.sin(float(angle)))  # correctly rounded, as glibc's cosf/sinf
    rx = ((xs * c).astype(F32) + (ys * s).astype(F32)).astype(F32)
    ry = ((-xs * s).astype(F32) + (ys * c).astype(F32)).astype(F32)
    ow, oh = F32(out_wh[0]), F32(out_wh[1])
    rx = (rx + F32(ow / F32(2))).astype(F32)
    ry = (ry + F32(oh / F32(2))).astype(F32)
    out = np.stack([rx.min(1), ry.min(1), rx.max(1), ry.max(1)], axis=1).astype(F32)
    if mode != "expand":
        new_w, new_h = (out[:, 2] - out[:, 0]).astype(F32), (out[:, 3] - out[:, 1]).astype(F32)
        turned = (old_w < old_h) ^ (new_w < new_h)
        dw = ((new_w - np.where(turned, old_h, old_w)) * F32(0.5)).astype(F32)
        dh = ((new_h - np.where(turned, old_w, old_h)) * F32(0.5)).astype(F32)
        if mode == "halfway":
            dw, dh = (dw * F32(0.5)).astype(F32), (dh * F32(0.5)).astype(F32)
        out = (out + np.stack([dw, dh, -dw, -dh], axis=1)).astype(F32)
    old_area = ((out[:, 2] - out[:, 0]) * (out[:, 3] - out[:, 1])).astype(F32)
    clipped = np.stack([np.clip(out[:, 0], 0, ow), np.clip(out[:, 1], 0, oh),
                        np.clip(out[:, 2], 0, ow), np.clip(out[:, 3], 0, oh)], axis=1).astype(F32)
    new_area = ((clipped[:, 2] - clipped[:, 0]) * (clipped[:, 3] - clipped[:, 1])).astype(F32)
    with np.errstate(divide="ignore", invalid="ignore"):
        remain = (new_area / old_area).astype(F32)
    kept = np.nonzero(remain >= F32(remove_threshold))[0]
    out = clipped[kept]
    if not ltrb:
        out[:, 2] = out[:, 2] - out[:, 0]
        out[:, 3] = out[:, 3] - out[:, 1]
    if normalized:
        out = (out * np.array([F32(1) / ow, F32(1) / oh, F32(1) / ow, F32(1) / oh], F32)).astype(F32)
    return out.astype(F32), kept.astype(np.int64)


class BBoxRotate(Operator):
    """Rotates ``(N, 4)`` boxes (and filters their labels) like ``fn.rotate`` rotates the image."""

    name = "bbox_rotate"
    per_sample_args = frozenset({"angle", "input_shape", "size"})

    def __init__(self, *, angle: float | None, input_shape: Any, shape_layout: str, bbox_layout: str,
                 bbox_normalized: bool, keep_size: bool, size: Any, mode: str, remove_threshold: float,
                 has_labels: bool, name: str | None = None) -> None:
        super().__init__(name=name)
        self.angle = angle
        self.input_shape = input_shape
        if "H" not in shape_layout or "W" not in shape_layout or len(set(shape_layout)) != len(shape_layout):
            raise PipelineDefinitionError(f"bbox_rotate: shape_layout must name the H and W axes (e.g. 'HW', 'HWC'), "
                                          f"got {shape_layout!r}")
        self.wh_index = (shape_layout.index("W"), shape_layout.index("H"))
        if bbox_layout not in ("xyXY", "xyWH"):
            raise PipelineDefinitionError(f"bbox_rotate: bbox_layout must be 'xyXY' or 'xyWH', got {bbox_layout!r}")
        self.ltrb = bbox_layout == "xyXY"
        self.normalized = bool(bbox_normalized)
        self.keep_size = bool(keep_size)
        self.size = size
        if mode not in _MODES:
            raise PipelineDefinitionError(f"bbox_rotate: mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
        self.mode = mode
        self.remove_threshold = float(remove_threshold)
        self.has_labels = has_labels
        self.num_outputs = 1 + int(has_labels)

    def _geometry(self, chunk: Chunk, row: int) -> tuple[float, tuple[float, float], tuple[float, float]]:
        angle = np.asarray(chunk.arg("angle", row, self.angle), dtype=np.float64).reshape(-1)
        if angle.size != 1:
            raise SampleError(f"bbox_rotate: angle must be one number per sample, got {angle.size}")
        shape = np.asarray(chunk.arg("input_shape", row, self.input_shape)).reshape(-1)
        if shape.dtype.kind not in "iu" or shape.size <= max(self.wh_index):
            raise SampleError(f"bbox_rotate: input_shape must hold integer sizes for the shape_layout axes, "
                              f"got {shape.tolist()}")
        w, h = int(shape[self.wh_index[0]]), int(shape[self.wh_index[1]])
        if w <= 0 or h <= 0:
            raise SampleError(f"bbox_rotate: the image size must be positive, got width {w}, height {h}")
        size = chunk.arg("size", row, self.size)
        if self.keep_size:
            out = (float(w), float(h))
        elif size is not None:
            hw = np.asarray(size, dtype=np.float64).reshape(-1)
            if hw.size != 2:
                raise SampleError(f"bbox_rotate: size must be (height, width), got {hw.tolist()}")
            out = (math.floor(hw[1]), math.floor(hw[0]))
        else:
            out_h, out_w = rotated_canvas_size(h, w, float(angle[0]))
            out = (float(out_w), float(out_h))
        return float(angle[0]), (float(w), float(h)), out

    def _one(self, chunk: Chunk, row: int, boxes: Any, labels: Any) -> list[Any]:
        rows = as_box_array(boxes, 4, self.name)
        angle, in_wh, out_wh = self._geometry(chunk, row)
        out, kept = rotate_boxes(rows, angle, in_wh, out_wh, ltrb=self.ltrb, normalized=self.normalized,
                                 mode=self.mode, remove_threshold=self.remove_threshold)
        values: list[Any] = [out]
        if self.has_labels:
            lab = np.asarray(labels)
            if lab.dtype.kind not in "iu" or lab.ndim not in (1, 2) or lab.shape[0] != len(rows):
                raise SampleError(f"bbox_rotate: labels must be integers, [N] or [N, 1] for {len(rows)} boxes, "
                                  f"got {lab.dtype} {lab.shape}")
            values.append(kept_labels(lab, kept))
        return values

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return each_box_sample(chunk, self.has_labels, self.num_outputs,
                               lambda row, boxes, labels: self._one(chunk, row, boxes, labels))


@fn_function()
def bbox_rotate(
    boxes: DataNode,
    labels: DataNode | None = None,
    *,
    angle: Number | DataNode,
    input_shape: Sequence[int] | DataNode,
    shape_layout: str = "HW",
    bbox_layout: str = "xyXY",
    bbox_normalized: bool = True,
    keep_size: bool = False,
    size: Sequence[Number] | DataNode | None = None,
    mode: str = "expand",
    remove_threshold: Number = 0.1,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode | tuple[DataNode, ...]:
    """Rotate boxes with their image (call it with the image's shape before ``fn.rotate``).

    Args:
        boxes: ``(N, 4)`` float32 boxes per sample.
        labels: optional ``(N,)`` or ``(N, 1)`` integer labels, removed with their boxes.
        angle: degrees, counter-clockwise (per sample allowed), as given to ``fn.rotate``.
        input_shape: the image's shape (e.g. ``image.shape()``), ordered as ``shape_layout``.
        shape_layout: names of ``input_shape``'s axes (``"HW"``, also fine for ``"HWC"`` shapes).
        bbox_layout: ``"xyXY"`` (default) or ``"xyWH"``.
        bbox_normalized: the boxes are relative to the image (default) or in pixels.
        keep_size: the canvas keeps the input size (as ``fn.rotate(keep_size=True)``).
        size: the canvas ``(height, width)`` given to ``fn.rotate``.
        mode: ``"expand"`` (enclose the rotated box), ``"fixed"`` or ``"halfway"``.
        remove_threshold: remove boxes left with less than this fraction of their area.

    Returns:
        The boxes, and the labels when given.
    """
    if keep_size and size is not None:
        raise PipelineDefinitionError("bbox_rotate: keep_size and size are mutually exclusive")
    if not 0.0 <= float(remove_threshold) <= 1.0:
        raise PipelineDefinitionError(f"bbox_rotate: remove_threshold must be in [0, 1], got {remove_threshold}")
    constants, per_sample = split_arguments(dict(angle=angle, input_shape=input_shape, size=size))
    op = BBoxRotate(angle=constants.get("angle"), input_shape=constants.get("input_shape"),
                    shape_layout=shape_layout, bbox_layout=bbox_layout, bbox_normalized=bbox_normalized,
                    keep_size=keep_size, size=constants.get("size"), mode=mode, remove_threshold=remove_threshold,
                    has_labels=labels is not None, name=name)
    out = add_node(op, [boxes] if labels is None else [boxes, labels], per_sample, device=device)
    return out[0] if len(out) == 1 else out
