"""Pixelwise masks of ``readers.coco(pixelwise_masks=True)``: one ``(H, W, 1)`` int32 label map per image.

Polygons are rasterized with COCO's own code (``pycocotools``: ``frPyObjects``,
the reference rasterizer DALI also uses), an RLE segmentation is decoded as
is. Per label, the union of its polygons (or, for a label without polygons,
its RLE mask) is painted in increasing label order, so where objects of two
labels overlap the higher label wins, as in DALI.

Two of DALI's quirks are not reproduced (they lose data): DALI keeps the lower
label on the one run of pixels that ends the image in column-major order,
and returns an all-zero map when the smallest label of an image has no mask
(a box without segmentation). Here the rule above holds everywhere and
labels without a mask are skipped.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...errors import MissingDependencyError
from .coco_annotations import Rle

__all__ = ["pixelwise_mask", "rle_to_mask"]


def _mask_api() -> Any:
    try:
        from pycocotools import mask
    except ImportError:
        raise MissingDependencyError("pycocotools", "coco", "readers.coco(pixelwise_masks=True)") from None
    return mask


def rle_to_mask(rle: Rle) -> np.ndarray:
    """The ``(H, W)`` bool mask of an uncompressed COCO RLE (runs in column-major order, zeros first)."""
    values = np.zeros(len(rle.counts), dtype=bool)
    values[1::2] = True
    flat = np.repeat(values, rle.counts.astype(np.int64))
    return flat.reshape(rle.width, rle.height).T


def pixelwise_mask(polygons: np.ndarray, vertices: np.ndarray, rles: list[tuple[int, Rle]], labels: np.ndarray,
                   height: int, width: int, ratio: bool) -> np.ndarray:
    """The label map of one image from its polygons, vertices, RLE masks and per-object labels."""
    out = np.zeros((height, width), dtype=np.int32)
    if len(labels) == 0:
        return out[:, :, None]
    by_label: dict[int, list[list[float]]] = {}
    scale = np.array([width, height], np.float32)
    for mask_index, start, end in polygons:
        pts = vertices[start:end]
        if ratio:
            pts = (pts * scale).astype(np.float32)
        by_label.setdefault(int(labels[mask_index]), []).append(pts.astype(np.float64).reshape(-1).tolist())
    rle_of: dict[int, Rle] = {}
    for mask_index, rle in rles:
        rle_of[int(labels[mask_index])] = rle  # the last RLE of a label is its mask, as DALI
    api: Any = _mask_api() if by_label else None
    for label in sorted(set(int(v) for v in labels)):
        if label in by_label:
            # polygons of fewer than 3 points would be read as boxes by frPyObjects; pad them to 3
            polys = [p if len(p) >= 6 else (p * 3)[:6] for p in by_label[label] if p]
            if not polys:
                continue
            with warnings.catch_warnings():  # pycocotools' numpy-2 copy= deprecation, not ours
                warnings.simplefilter("ignore", DeprecationWarning)
                merged = api.merge(api.frPyObjects(polys, height, width), intersect=False)
                mask = api.decode(merged).astype(bool)
        elif label in rle_of:
            rle = rle_of[label]
            if (rle.height, rle.width) != (height, width):
                continue  # an RLE of another size cannot be placed on this image
            mask = rle_to_mask(rle)
        else:
            continue
        out[mask] = label
    return out[:, :, None]
