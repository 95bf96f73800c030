"""``random_bbox_crop``: a random crop window that respects the bounding boxes (SSD's sampling).

The operator does not touch images: it draws a window and returns its
``anchor`` and ``shape`` (for ``fn.slice`` / ``fn.decoders.image_slice``), the
boxes mapped into the window, their labels and (``output_bbox_indices``) their
indices in the input. The draw is DALI's ``RandomBBoxCrop`` (CPU):

1. Pick one option uniformly: one of ``thresholds``, or "no crop" with
   ``allow_no_crop``. No crop: the whole image, every box unchanged.
2. Up to ``num_attempts`` candidates for the option, each: the extents drawn
   uniformly in ``scaling`` (relative to the image); with a fixed
   ``aspect_ratio`` range (``min == max``) the extents are made to have that
   ratio (dimensions fixed in random order, then rescaled to the largest drawn
   extent); a candidate whose ratios ``w / h`` (and ``w / d``, ``h / d`` in 3D)
   are outside ``aspect_ratio`` is dropped (ratios of pixels when
   ``input_shape`` is given, else of relative extents); the anchor is uniform
   in ``[0, 1 - extent]``. With ``crop_shape`` (pixels, with ``input_shape``)
   the extent is fixed and the anchor an integer uniform in ``[0, in - crop]``.
3. The candidate's overlap with the boxes: IoU (``threshold_type="iou"``) or
   the fraction of each box inside it (``"overlap"``); the minimum over the
   boxes (``all_boxes_above_threshold``, default) or the maximum must reach
   the option's threshold. The boxes kept are those whose centre lies in the
   window (``lo <= c < hi``), or with ``bbox_prune_threshold`` those with at
   least that fraction of their area inside; a candidate that keeps no box
   (of a non-empty input) fails. Kept boxes are clipped to the window and
   expressed relative to it.
4. Until a candidate succeeds a new option is drawn; after
   ``total_num_attempts`` candidates (if given) the best one so far is used.

Randomness comes from ``(seed, operator, epoch, sample)`` (``streamflow.rng``),
so the windows are distributed like DALI's and satisfy the same constraints,
but are not DALI's windows. Two differences, both where DALI misbehaves:
without ``total_num_attempts`` DALI loops forever on impossible constraints,
here the best candidate is taken after 10 000 candidates (``MAX_CANDIDATES``);
with ``input_shape`` and a fixed aspect ratio DALI can return windows larger
than the image (negative anchors), here such candidates are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import rng
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import Device, Number
from .arguments import fn_function
from .boxes import (
    F32,
    BoxLayout,
    as_box_array,
    box_volume,
    each_box_sample,
    intersection_volume,
    iou,
    kept_labels,
    parse_box_layout,
    read_boxes,
    write_boxes,
)

__all__ = ["MAX_CANDIDATES", "BBoxCropParams", "CropResult", "RandomBBoxCrop", "find_crop", "random_bbox_crop"]

#: Candidates tried before the best one is taken when ``total_num_attempts`` is not given.
MAX_CANDIDATES = 10_000


@dataclass(frozen=True)
class BBoxCropParams:
    """Validated constant arguments of the draw."""

    thresholds: tuple[float, ...] = (0.0,)
    allow_no_crop: bool = True
    num_attempts: int = 1
    total_num_attempts: int = -1
    scaling: tuple[float, float] = (1.0, 1.0)
    aspect_ratio: tuple[tuple[float, float], ...] = ((1.0, 1.0),)
    overlap_metric: str = "iou"
    all_boxes_above_threshold: bool = True
    bbox_prune_threshold: float | None = None


@dataclass
class CropResult:
    """The chosen window and the boxes kept (relative coordinates unless ``absolute``)."""

    anchor: np.ndarray  # (ndim,) float32
    shape: np.ndarray  # (ndim,) float32
    lo: np.ndarray  # kept boxes, remapped (M, ndim)
    hi: np.ndarray
    indices: np.ndarray  # (M,) int32
    success: bool


def _pairs(ndim: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(ndim) for j in range(i + 1, ndim)]


def _ranges(params: BBoxCropParams, ndim: int) -> list[tuple[float, float]]:
    """The aspect ratio range of each dimension pair (x/y, x/z, y/z), cycling the given ranges."""
    given = params.aspect_ratio
    return [given[k % len(given)] for k in range(len(_pairs(ndim)))]


def _fix_aspect(extent: np.ndarray, ranges: list[tuple[float, float]], gen: np.random.Generator,
                scale: np.ndarray) -> np.ndarray:
    """Give ``(K, ndim)`` extents the fixed ratios (``min == max`` ranges), dimensions in a random order."""
    k, ndim = extent.shape
    fixed = np.zeros((ndim, ndim), dtype=F32)
    for (i, j), (lo, hi) in zip(_pairs(ndim), ranges):
        if lo == hi:
            fixed[i, j] = F32(lo)
            fixed[j, i] = F32(F32(1) / F32(lo))
    if not fixed.any():
        return extent
    ext = (extent * scale).astype(F32)  # pixels when input_shape is given
    largest = ext.max(axis=1, keepdims=True)
    order = np.argsort(gen.random((k, ndim)), axis=1)
    rows = np.arange(k)
    for a in range(ndim):
        for b in range(a + 1, ndim):
            d0, d1 = order[:, a], order[:, b]
            factor = fixed[d1, d0]
            fix = factor > 0
            ext[rows[fix], d1[fix]] = (ext[rows[fix], d0[fix]] * factor[fix]).astype(F32)
    ext = (largest * ext / ext.max(axis=1, keepdims=True)).astype(F32)
    return (ext / scale).astype(F32)


def _aspect_ok(extent: np.ndarray, ranges: list[tuple[float, float]], scale: np.ndarray) -> np.ndarray:
    """Which of the ``(K, ndim)`` extents have their ratios in range."""
    ext = (extent * scale).astype(F32)
    ok = np.all(ext > 0, axis=1) & np.all(extent <= 1, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for (i, j), (lo, hi) in zip(_pairs(extent.shape[1]), ranges):
            ratio = (ext[:, i] / ext[:, j]).astype(F32)
            ok &= (ratio >= F32(lo)) & (ratio <= F32(hi))
    return ok


def _metrics(crop_lo: np.ndarray, crop_hi: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             params: BBoxCropParams) -> np.ndarray:
    """The overlap metric of ``(K, ndim)`` windows with the ``(N, ndim)`` boxes: ``(K,)``."""
    c_lo, c_hi = crop_lo[:, None, :], crop_hi[:, None, :]
    if params.overlap_metric == "overlap":
        inter = intersection_volume(c_lo, c_hi, lo[None], hi[None])
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.where(inter > 0, inter / box_volume(lo, hi)[None], F32(0)).astype(F32)
    else:
        values = iou(c_lo, c_hi, lo[None], hi[None])
    return values.min(axis=1) if params.all_boxes_above_threshold else values.max(axis=1)


def _keep(crop_lo: np.ndarray, crop_hi: np.ndarray, lo: np.ndarray, hi: np.ndarray,
          prune: float | None) -> np.ndarray:
    if prune is None:
        centre = ((lo + hi) * F32(0.5)).astype(F32)
        return np.all((centre >= crop_lo) & (centre < crop_hi), axis=1)
    inter = intersection_volume(crop_lo, crop_hi, lo, hi)
    vol = box_volume(lo, hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = np.where(vol > 0, inter / vol, F32(0)).astype(F32)
    return (inter > 0) & (fraction >= F32(prune))


def _remap(crop_lo: np.ndarray, crop_hi: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    extent = (crop_hi - crop_lo).astype(F32)
    start = ((np.maximum(crop_lo, lo) - crop_lo) / extent).astype(F32)
    end = ((np.minimum(crop_hi, hi) - crop_lo) / extent).astype(F32)
    return np.clip(start, 0, 1).astype(F32), np.clip(end, 0, 1).astype(F32)


def _whole(lo: np.ndarray, hi: np.ndarray, scale: np.ndarray, absolute: bool, success: bool) -> CropResult:
    ndim = lo.shape[1]
    extent = scale.copy() if absolute else np.ones(ndim, F32)
    return CropResult(np.zeros(ndim, F32), extent, lo.copy(), hi.copy(), np.arange(len(lo), dtype=np.int32), success)


def _candidates(k: int, ndim: int, params: BBoxCropParams, gen: np.random.Generator, ranges: list[tuple[float, float]],
                scale: np.ndarray, input_shape: np.ndarray | None, crop_shape: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``k`` candidate windows: relative corners, output anchor and shape, and which are usable."""
    if crop_shape is not None:
        assert input_shape is not None
        room = np.maximum(input_shape - crop_shape, 0)
        anchor_px = np.floor(gen.random((k, ndim)) * (room + 1)).astype(F32)
        crop_lo = (anchor_px / scale).astype(F32)
        crop_hi = (crop_lo + (crop_shape.astype(F32) / scale).astype(F32)).astype(F32)
        shape = np.broadcast_to(crop_shape.astype(F32), (k, ndim))
        return crop_lo, crop_hi, anchor_px, shape, np.ones(k, dtype=bool)
    lo_s, hi_s = params.scaling
    extent = (F32(lo_s) + gen.random((k, ndim)).astype(F32) * F32(hi_s - lo_s)).astype(F32)
    extent = _fix_aspect(extent, ranges, gen, scale)
    usable = _aspect_ok(extent, ranges, scale)
    crop_lo = (gen.random((k, ndim)).astype(F32) * np.maximum(F32(1) - extent, F32(0))).astype(F32)
    crop_hi = (crop_lo + extent).astype(F32)
    return crop_lo, crop_hi, crop_lo, (crop_hi - crop_lo).astype(F32), usable


def find_crop(lo: np.ndarray, hi: np.ndarray, params: BBoxCropParams, gen: np.random.Generator,
              input_shape: np.ndarray | None = None, crop_shape: np.ndarray | None = None) -> CropResult:
    """Draw a window for boxes ``lo``/``hi`` (relative ``(N, ndim)`` corners); see the module doc.

    The ``num_attempts`` candidates of a picked threshold are drawn and scored
    at once, then walked in order as DALI walks them one by one.
    """
    ndim = lo.shape[1]
    n = len(lo)
    ranges = _ranges(params, ndim)
    scale = np.ones(ndim, F32) if input_shape is None else input_shape.astype(F32)
    options = len(params.thresholds) + (1 if params.allow_no_crop else 0)
    limit = params.total_num_attempts if params.total_num_attempts > 0 else MAX_CANDIDATES
    best_metric = -1.0
    best: CropResult | None = None
    count = 0
    while count < limit:
        choice = int(gen.integers(options))
        if choice == len(params.thresholds):  # no crop
            return _whole(lo, hi, scale, crop_shape is not None, True)
        threshold = params.thresholds[choice]
        k = min(params.num_attempts, limit - count)
        count += k
        crop_lo, crop_hi, anchors, shapes, usable = _candidates(k, ndim, params, gen, ranges, scale,
                                                                input_shape, crop_shape)
        metrics = _metrics(crop_lo, crop_hi, lo, hi, params) if n else np.ones(k, F32)
        # DALI walks every candidate: one that is valid, or better than the best so far,
        # becomes the window; the block succeeds if its last such window is valid and keeps a box.
        last = -1
        for c in np.nonzero(usable)[0]:
            metric = float(metrics[c])
            if metric >= threshold or metric > best_metric:
                best_metric, last = metric, int(c)
        if last < 0:
            continue
        kept = np.nonzero(_keep(crop_lo[last], crop_hi[last], lo, hi, params.bbox_prune_threshold))[0]
        new_lo, new_hi = _remap(crop_lo[last], crop_hi[last], lo[kept], hi[kept])
        best = CropResult(anchors[last].astype(F32), shapes[last].astype(F32), new_lo, new_hi, kept.astype(np.int32),
                          float(metrics[last]) >= threshold and (len(kept) > 0 or n == 0))
        if best.success:
            return best
    if best is None:  # every candidate was dropped (aspect ratio): the whole image
        return _whole(lo, hi, scale, crop_shape is not None, False)
    return best


def _range(value: Any, what: str, count: int | None = 2) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in np.asarray(value, dtype=np.float64).reshape(-1))
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"random_bbox_crop: {what} must be numbers, got {value!r}") from None
    if count is not None and len(values) != count:
        raise PipelineDefinitionError(f"random_bbox_crop: {what} must be a range [min, max], got {value!r}")
    return values


def _shape_order(layout: str | None, ndim: int, what: str) -> list[int]:
    """Indices that take a ``shape_layout``-ordered vector to ``W H (D)`` order."""
    canonical = "WHD"[:ndim]
    if not layout:
        return list(range(ndim))
    if sorted(layout) != sorted(canonical):
        raise SampleError(f"random_bbox_crop: shape_layout {layout!r} must be a permutation of {canonical!r} "
                          f"for {ndim}D boxes ({what})")
    return [layout.index(c) for c in canonical]


class RandomBBoxCrop(Operator):
    """Draws crop windows for ``(N, 2*ndim)`` boxes (and optional labels)."""

    name = "random_bbox_crop"
    per_sample_args = frozenset({"input_shape", "crop_shape"})

    def __init__(self, params: BBoxCropParams, *, bbox_layout: str | None, has_labels: bool,
                 output_bbox_indices: bool, shape_layout: str | None, input_shape: Any, crop_shape: Any,
                 seed: int | None, name: str | None = None) -> None:
        super().__init__(name=name)
        self.params = params
        self.bbox_layout = bbox_layout
        self.has_labels = has_labels
        self.output_bbox_indices = output_bbox_indices
        self.shape_layout = shape_layout
        self.input_shape = input_shape
        self.crop_shape = crop_shape
        self.seed = seed
        self.num_outputs = 3 + int(has_labels) + int(output_bbox_indices)

    def _layout(self, ncoords: int) -> BoxLayout:
        ndim = ncoords // 2
        name = self.bbox_layout or ("xyzXYZ" if ndim == 3 else "xyXY")
        try:
            return parse_box_layout(name, ndim, self.name)
        except PipelineDefinitionError as err:
            raise SampleError(str(err)) from None

    def _shapes(self, chunk: Chunk, row: int, ndim: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        values: list[np.ndarray | None] = []
        for key, const in (("input_shape", self.input_shape), ("crop_shape", self.crop_shape)):
            value = chunk.arg(key, row, const)
            if value is None:
                values.append(None)
                continue
            arr = np.asarray(value).reshape(-1)
            if arr.size != ndim:
                raise SampleError(f"random_bbox_crop: {key} must have {ndim} values for {ndim}D boxes, got {arr.tolist()}")
            arr = arr[_shape_order(self.shape_layout, ndim, key)].astype(np.int64)
            if np.any(arr <= 0):
                raise SampleError(f"random_bbox_crop: {key} must be positive, got {arr.tolist()}")
            values.append(arr)
        input_shape, crop_shape = values
        if crop_shape is not None and input_shape is not None and np.any(crop_shape > input_shape):
            raise SampleError(f"random_bbox_crop: crop_shape {crop_shape.tolist()} exceeds input_shape "
                              f"{input_shape.tolist()} (in {'WHD'[:ndim]} order)")
        return input_shape, crop_shape

    def _key(self, chunk: Chunk) -> rng.RandomKey:
        return chunk.key if self.seed is None else rng.RandomKey(int(self.seed), 0xB0C5)

    def _one(self, chunk: Chunk, row: int, boxes: Any, labels: Any) -> list[Any]:
        arr = np.asarray(boxes)
        if arr.ndim != 2 or arr.shape[1] not in (4, 6):
            raise SampleError(f"random_bbox_crop: boxes must be a 2D array (N, 4) or (N, 6), got shape {arr.shape}")
        rows = as_box_array(arr, arr.shape[1], self.name)
        layout = self._layout(rows.shape[1])
        lo, hi = read_boxes(rows, layout)
        if len(lo) and (np.any(lo < 0) or np.any(hi > 1) or np.any(lo > hi)):
            bad = int(np.nonzero(np.any(lo < 0, 1) | np.any(hi > 1, 1) | np.any(lo > hi, 1))[0][0])
            raise SampleError(f"random_bbox_crop: box {bad} {np.round(rows[bad].astype(float), 6).tolist()} ({layout.name}) is not inside "
                              "[0, 1]: boxes must be relative to the image, with start <= end")
        lab = None
        if self.has_labels:
            lab = np.asarray(labels)
            if lab.dtype.kind not in "iu" or lab.ndim == 0 or lab.shape[0] != len(rows):
                raise SampleError(f"random_bbox_crop: labels must be integers, one per box ({len(rows)}), "
                                  f"got {lab.dtype} {lab.shape}")
        input_shape, crop_shape = self._shapes(chunk, row, layout.ndim)
        gen = rng.sample_generator(self._key(chunk), chunk.epoch, int(chunk.sample_ids[row]))
        result = find_crop(lo, hi, self.params, gen, input_shape, crop_shape)
        out: list[Any] = [result.anchor, result.shape, write_boxes(result.lo, result.hi, layout)]
        if lab is not None:
            out.append(kept_labels(lab, result.indices))
        if self.output_bbox_indices:
            out.append(result.indices)
        return out

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return each_box_sample(chunk, self.has_labels, self.num_outputs,
                               lambda row, boxes, labels: self._one(chunk, row, boxes, labels))


def _params(thresholds: Any, allow_no_crop: bool, num_attempts: int, total_num_attempts: int, scaling: Any,
            aspect_ratio: Any, threshold_type: str, all_boxes_above_threshold: bool,
            bbox_prune_threshold: float | None) -> BBoxCropParams:
    ths = _range(thresholds, "thresholds", None)
    if not ths:
        raise PipelineDefinitionError("random_bbox_crop: at least one threshold value must be provided")
    if any(not 0.0 <= t <= 1.0 for t in ths):
        raise PipelineDefinitionError(f"random_bbox_crop: thresholds must be in [0, 1], got {list(ths)}")
    if int(num_attempts) < 1:
        raise PipelineDefinitionError(f"random_bbox_crop: num_attempts must be at least 1, got {num_attempts}")
    if total_num_attempts != -1 and int(total_num_attempts) < 1:
        raise PipelineDefinitionError(
            f"random_bbox_crop: total_num_attempts must be at least 1 (or -1: unlimited), got {total_num_attempts}")
    lo, hi = _range(scaling, "scaling")
    if not 0.0 <= lo <= hi:
        raise PipelineDefinitionError(f"random_bbox_crop: scaling must be a range [min, max] with 0 <= min <= max, "
                                      f"got {[lo, hi]}")
    if hi <= 0:
        raise PipelineDefinitionError(f"random_bbox_crop: scaling's max must be positive, got {hi}")
    ar = _range(aspect_ratio, "aspect_ratio", None)
    if len(ar) not in (2, 6):
        raise PipelineDefinitionError(
            f"random_bbox_crop: aspect_ratio must have 2 values (or 6 for 3D boxes), got {len(ar)}")
    pairs = tuple((ar[k], ar[k + 1]) for k in range(0, len(ar), 2))
    if any(not 0.0 < a <= b for a, b in pairs):
        raise PipelineDefinitionError(f"random_bbox_crop: aspect_ratio ranges must have 0 < min <= max, got {list(ar)}")
    if threshold_type not in ("iou", "overlap"):
        raise PipelineDefinitionError(
            f"random_bbox_crop: threshold_type must be 'iou' or 'overlap', got {threshold_type!r}")
    if bbox_prune_threshold is not None and not 0.0 <= float(bbox_prune_threshold) <= 1.0:
        raise PipelineDefinitionError(
            f"random_bbox_crop: bbox_prune_threshold must be in [0, 1], got {bbox_prune_threshold}")
    return BBoxCropParams(ths, bool(allow_no_crop), int(num_attempts), int(total_num_attempts), (lo, hi), pairs,
                          threshold_type, bool(all_boxes_above_threshold),
                          None if bbox_prune_threshold is None else float(bbox_prune_threshold))


@fn_function()
def random_bbox_crop(
    boxes: DataNode,
    labels: DataNode | None = None,
    *,
    thresholds: Number | Sequence[Number] = (0.0,),
    threshold_type: str = "iou",
    aspect_ratio: Number | Sequence[Number] | None = None,
    scaling: Sequence[Number] | None = None,
    num_attempts: int = 1,
    total_num_attempts: int = -1,
    allow_no_crop: bool | None = None,
    all_boxes_above_threshold: bool = True,
    bbox_layout: str | None = None,
    ltrb: bool | None = None,
    bbox_prune_threshold: Number | None = None,
    crop_shape: Sequence[int] | DataNode | None = None,
    input_shape: Sequence[int] | DataNode | None = None,
    shape_layout: str | None = None,
    output_bbox_indices: bool = False,
    quiet: bool = False,
    seed: int | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> tuple[DataNode, ...]:
    """Draw a crop window that keeps the boxes (SSD-style), and map the boxes into it.

    Args:
        boxes: relative boxes, ``(N, 4)`` (or ``(N, 6)`` for 3D) float32 per sample.
        labels: optional integer labels, one per box (filtered with the boxes).
        thresholds: minimum overlap of the boxes with the window; one is picked per try.
        threshold_type: ``"iou"`` or ``"overlap"`` (fraction of each box inside the window).
        aspect_ratio: ``[min, max]`` of the window's width / height (default ``[1, 1]``).
        scaling: ``[min, max]`` of the window's extents relative to the image (default ``[1, 1]``).
        num_attempts: tries per picked threshold.
        total_num_attempts: tries in all before the best window is taken (-1: until one succeeds).
        allow_no_crop: "no crop" is one more option to pick (default True, False with ``crop_shape``).
        all_boxes_above_threshold: every box must reach the threshold (else one is enough).
        bbox_layout: coordinates of a box row, e.g. ``"xyXY"`` (default) or ``"xyWH"``.
        ltrb: deprecated: ``True`` is ``bbox_layout="xyXY"``, ``False`` is ``"xyWH"``.
        bbox_prune_threshold: keep boxes with at least this fraction inside (default: centre inside).
        crop_shape: a fixed window size in pixels (with ``input_shape``); per sample allowed.
        input_shape: the image size in pixels; per sample allowed (e.g. ``fn.peek_image_shape``).
        shape_layout: order of ``crop_shape`` / ``input_shape`` (default ``"WH"`` / ``"WHD"``).
        output_bbox_indices: add an output with the kept boxes' input indices.
        quiet: accepted (streamflow does not warn when the best window is used).
        seed: a fixed random stream for this operator (default: the pipeline's).

    Returns:
        ``anchor, shape, boxes`` (then ``labels`` if given, then ``bbox_indices``); ``anchor`` and
        ``shape`` are relative, or pixels with ``crop_shape``.
    """
    del quiet
    if ltrb is not None and bbox_layout is not None:
        raise PipelineDefinitionError("random_bbox_crop: give bbox_layout or the deprecated ltrb, not both")
    layout = bbox_layout if bbox_layout is not None else (None if ltrb is None or ltrb else "xyWH")
    if layout is not None:
        parse_box_layout(layout, None, "random_bbox_crop")
    if (crop_shape is None) != (input_shape is None) and crop_shape is not None:
        raise PipelineDefinitionError("random_bbox_crop: crop_shape needs input_shape (the image size) too")
    if crop_shape is not None:
        if aspect_ratio is not None or scaling is not None:
            raise PipelineDefinitionError("random_bbox_crop: aspect_ratio and scaling cannot be combined with crop_shape")
        if allow_no_crop:
            raise PipelineDefinitionError("random_bbox_crop: allow_no_crop cannot be combined with crop_shape")
        allow_no_crop = False
    params = _params(thresholds, True if allow_no_crop is None else allow_no_crop, num_attempts, total_num_attempts,
                     (1.0, 1.0) if scaling is None else scaling, (1.0, 1.0) if aspect_ratio is None else aspect_ratio,
                     threshold_type, all_boxes_above_threshold, bbox_prune_threshold)
    constants, per_sample = split_arguments(dict(input_shape=input_shape, crop_shape=crop_shape))
    op = RandomBBoxCrop(params, bbox_layout=layout, has_labels=labels is not None,
                        output_bbox_indices=output_bbox_indices, shape_layout=shape_layout,
                        input_shape=constants.get("input_shape"), crop_shape=constants.get("crop_shape"),
                        seed=seed, name=name)
    inputs = [boxes] if labels is None else [boxes, labels]
    return add_node(op, inputs, per_sample, device=device)
