"""``box_encoder`` on the GPU: the whole batch matched at once with cupy (a fixed number of launches).

The samples' boxes are padded to the batch's largest count into one
``(B, N, 4)`` array; the IoU with every anchor is ``(B, N, A)`` (padding rows
hold -1, so they never win), and DALI's matching (the best anchor of each box
gets IoU 2, ties to the last anchor; each anchor takes its best box, ties to
the last box) and the encoding run batched. Every step is the CPU operator's
float32 operation (``ops/box_encoder.py``), so the host build gives the same
bits as the per-sample CPU code; on a GPU the float64 ``log`` of the offsets
is within an ulp of float64, which can reach the float32 result only at a
rounding tie. Batches are split to keep the IoU array under ``MAX_IOU``
values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.box_encoder import BoxEncoder, centre_extent, logf
from ...ops.boxes import F32
from ..context import GpuContext
from .registry import register

__all__ = ["MAX_IOU", "box_encoder_gpu", "encode_batch"]

#: Most IoU values one part of a batch computes at once (float32; a few temporaries of this size).
MAX_IOU = 1 << 24


def _anchors(op: BoxEncoder, xp: Any) -> dict[str, Any]:
    anchors = xp.asarray(op.anchors)
    a = [xp.ascontiguousarray(anchors[:, k]) for k in range(4)]
    centre, extent = centre_extent(anchors[:, :2], anchors[:, 2:])
    return {"a": a, "area": (a[2] - a[0]) * (a[3] - a[1]), "centre": centre, "extent": extent,
            "means": xp.asarray(op.means), "stds": xp.asarray(op.stds)}


def encode_batch(op: BoxEncoder, xp: Any, anchors: dict[str, Any], boxes: list[Any], labels: list[Any]) -> tuple[Any, Any]:
    """``(B, A, 4)`` float32 encoded boxes and ``(B, A)`` int64 labels of checked samples (``check_sample``)."""
    B, A = len(boxes), len(op.anchors)
    lengths = [int(b.shape[0]) for b in boxes]
    nmax = max(lengths, default=0)
    default = xp.zeros((A, 4), F32) if op.offset else xp.concatenate([anchors["centre"], anchors["extent"]], axis=1)
    if nmax == 0:
        return xp.broadcast_to(default, (B, A, 4)).copy(), xp.zeros((B, A), np.int64)
    bi = xp.asarray(np.repeat(np.arange(B), lengths))
    ni = xp.asarray(np.concatenate([np.arange(n) for n in lengths]))
    padded = xp.zeros((B, nmax, 4), F32)
    padded[bi, ni] = xp.concatenate(boxes)
    lab = xp.zeros((B, nmax), np.int64)
    lab[bi, ni] = xp.concatenate([v.astype(np.int64) for v in labels])
    valid = xp.zeros((B, nmax), bool)
    valid[bi, ni] = True
    # IoU (B, N, A) in the CPU's float32 order
    x0, y0, x1, y1 = (padded[:, :, k : k + 1] for k in range(4))
    a = anchors["a"]
    iw = xp.minimum(x1, a[2]) - xp.maximum(x0, a[0])
    ih = xp.minimum(y1, a[3]) - xp.maximum(y0, a[1])
    inter = xp.maximum(iw, F32(0)) * xp.maximum(ih, F32(0))
    union = ((x1 - x0) * (y1 - y0) + anchors["area"]) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        ious = inter / union
    ious = xp.where(inter == 0, F32(0), ious)
    ious = xp.where(valid[:, :, None], ious, F32(-1))
    # the best anchor of each box (the last of equals) gets IoU 2
    best_anchor = A - 1 - xp.argmax(ious[:, :, ::-1], axis=2)
    ious[bi, ni, best_anchor[bi, ni]] = F32(2)
    # the best box of each anchor (the last of equals; padding rows, at -1, never win)
    best_box = nmax - 1 - xp.argmax(ious[:, ::-1, :], axis=1)
    best_iou = xp.take_along_axis(ious, best_box[:, None, :], axis=1)[:, 0, :]
    matched = best_iou > op.criteria
    src = xp.take_along_axis(padded, best_box[:, :, None], axis=1)  # (B, A, 4)
    centre, extent = centre_extent(src[:, :, :2], src[:, :, 2:])
    if op.offset:
        s = op.scale
        centre, extent = (centre * s).astype(F32), (extent * s).astype(F32)
        a_c = (anchors["centre"] * s).astype(F32)
        a_e = (anchors["extent"] * s).astype(F32)
        with np.errstate(divide="ignore", invalid="ignore"):
            means, stds = anchors["means"], anchors["stds"]
            centre = ((((centre - a_c) / a_e).astype(F32) - means[:2]) / stds[:2]).astype(F32)
            extent = ((logf((extent / a_e).astype(F32), xp) - means[2:]) / stds[2:]).astype(F32)
    encoded = xp.where(matched[:, :, None], xp.concatenate([centre, extent], axis=2), default)
    out_labels = xp.where(matched, xp.take_along_axis(lab, best_box, axis=1), 0)
    return encoded, out_labels


@register(BoxEncoder)
def box_encoder_gpu(op: BoxEncoder, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    n = len(chunk)
    boxes_out: list[Any] = [None] * n
    labels_out: list[Any] = [None] * n
    rows, boxes, labels = [], [], []
    for row, (b, lab) in enumerate(zip(chunk.inputs[0], chunk.inputs[1])):
        try:
            if not (ctx.is_array(b) and ctx.is_array(lab)):
                raise SampleError("box_encoder: boxes and labels must both be on the device (call .gpu() on both)")
            r, lb = op.check_sample(b, lab, xp)
        except SampleError as err:
            chunk.fail(row, err)
            continue
        rows.append(row)
        boxes.append(r)
        labels.append(lb)
    anchors = ctx.shared(("box_encoder", id(op)), lambda: _anchors(op, xp))
    per_part = max(1, MAX_IOU // max(1, len(op.anchors) * max((len(b) for b in boxes), default=1)))
    for start in range(0, len(rows), per_part):
        part = slice(start, start + per_part)
        encoded, enc_labels = encode_batch(op, xp, anchors, boxes[part], labels[part])
        dtypes = {np.dtype(v.dtype) for v in labels[part]}
        if len(dtypes) == 1:  # one conversion for the part
            enc_labels = enc_labels.astype(dtypes.pop(), copy=False)
        for k, row in enumerate(rows[part]):
            boxes_out[row] = encoded[k]
            labels_out[row] = enc_labels[k].astype(labels[start + k].dtype, copy=False)
    return [boxes_out, labels_out]
