"""``segmentation.select_masks``: keep the polygons of some masks (e.g. the objects a crop kept).

Inputs as ``readers.coco(polygon_masks=True)`` gives them: ``polygons``
``(P, 3)`` int32 ``[mask_id, first_vertex, end_vertex]`` and ``vertices``
``(V, D)`` of any type; plus ``mask_ids`` (1-D int32, no duplicates). The
outputs hold the polygons of the selected masks in ``mask_ids`` order (a
mask's polygons in their input order), their vertices copied one after the
other, and the polygons' vertex ranges renumbered; with ``reindex_masks`` a
mask id becomes its position in ``mask_ids``.

One difference from DALI 2.4, which keeps only the last polygon of a mask:
every polygon of a selected mask is kept (COCO objects are often made of
several polygons). Masks of one polygon give DALI's outputs exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...graph import DataNode, add_node
from ...operator import Chunk, Operator
from ...types import Device
from ..arguments import fn_function

__all__ = ["SelectMasks", "select_masks", "select_polygons"]


def select_polygons(mask_ids: np.ndarray, polygons: np.ndarray, vertices: np.ndarray,
                    reindex: bool) -> tuple[np.ndarray, np.ndarray]:
    """The polygons of ``mask_ids`` and their vertices (see the module doc); raises ``SampleError``."""
    ids = [int(m) for m in mask_ids]
    seen: set[int] = set()
    for m in ids:
        if m in seen:
            raise SampleError(f"segmentation.select_masks: mask_ids should not have duplicated values, got {m} repeated")
        seen.add(m)
    nv = len(vertices)
    bad = np.nonzero((polygons[:, 1] < 0) | (polygons[:, 2] > nv) | (polygons[:, 2] < polygons[:, 1]))[0]
    if len(bad):
        mid, start, end = (int(v) for v in polygons[bad[0]])
        raise SampleError(f"segmentation.select_masks: the vertex range [{start}, {end}) of mask id {mid} is not "
                          f"within the {nv} vertices (or its start is after its end)")
    out_polys: list[list[int]] = []
    pieces: list[np.ndarray] = []
    count = 0
    for new_id, m in enumerate(ids):
        rows = np.nonzero(polygons[:, 0] == m)[0]
        if len(rows) == 0:
            raise SampleError(f"segmentation.select_masks: selected mask_id {m} is not present in the input polygons")
        for r in rows:
            start, end = int(polygons[r, 1]), int(polygons[r, 2])
            out_polys.append([new_id if reindex else m, count, count + end - start])
            pieces.append(vertices[start:end])
            count += end - start
    out_vertices = np.concatenate(pieces) if pieces else vertices[:0]
    return np.asarray(out_polys, dtype=np.int32).reshape(-1, 3), np.ascontiguousarray(out_vertices)


class SelectMasks(Operator):
    """Inputs ``(mask_ids, polygons, vertices)``; outputs ``(polygons, vertices)``."""

    name = "segmentation.select_masks"
    num_outputs = 2

    def __init__(self, *, reindex_masks: bool = False, name: str | None = None) -> None:
        super().__init__(name=name)
        self.reindex_masks = bool(reindex_masks)

    def _one(self, mask_ids: Any, polygons: Any, vertices: Any) -> tuple[np.ndarray, np.ndarray]:
        ids, polys, verts = np.asarray(mask_ids), np.asarray(polygons), np.asarray(vertices)
        if ids.dtype.kind not in "iu" or ids.ndim != 1:
            raise SampleError(f"segmentation.select_masks: mask_ids must be a 1-D integer array, got {ids.dtype} {ids.shape}")
        if polys.dtype.kind not in "iu" or polys.ndim != 2 or polys.shape[1] != 3:
            raise SampleError("segmentation.select_masks: polygons must be a 2-D int32 array with 3 columns "
                              f"(mask_id, start_vertex, end_vertex), got {polys.dtype} {polys.shape}")
        if verts.ndim != 2:
            raise SampleError(f"segmentation.select_masks: vertices must be a 2-D array, got shape {verts.shape}")
        return select_polygons(ids, polys.astype(np.int64), verts, self.reindex_masks)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        polygons, vertices = chunk.inputs[1], chunk.inputs[2]
        return chunk.each_sample(lambda row, ids: self._one(ids, polygons[row], vertices[row]), outputs=2)



@fn_function()
def select_masks(
    mask_ids: DataNode,
    polygons: DataNode,
    vertices: DataNode,
    *,
    reindex_masks: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> tuple[DataNode, DataNode]:
    """Keep the polygons (and vertices) of the masks in ``mask_ids``.

    Args:
        mask_ids: 1-D int32 ids of the masks to keep (e.g. ``random_bbox_crop``'s bbox indices).
        polygons: ``(P, 3)`` int32 ``[mask_id, first_vertex, end_vertex]`` per sample.
        vertices: ``(V, D)`` vertices per sample (any type).
        reindex_masks: replace each mask id by its position in ``mask_ids``.

    Returns:
        ``(polygons, vertices)`` of the selected masks.
    """
    op = SelectMasks(reindex_masks=reindex_masks, name=name)
    return add_node(op, [mask_ids, polygons, vertices], device=device)  # type: ignore[return-value]
