"""``segmentation.select_masks``: DALI 2.4's outputs on one-polygon masks, and every polygon of a mask kept."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import assert_equal_outputs, replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineError


@pytest.mark.parametrize("case", ["select_masks", "select_masks_reindex"])
def test_matches_dali(case: str) -> None:
    assert_equal_outputs(*replay(case, fn, types, sf.pipeline_def))


def _select(ids, polys, verts, **kw):  # type: ignore[no-untyped-def]
    return run_arrays([np.array(ids, np.int32)], lambda m, p, v: fn.segmentation.select_masks(m, p, v, **kw),
                      p=[np.array(polys, np.int32)], v=[np.asarray(verts)])


def test_every_polygon_of_a_mask_is_kept() -> None:
    # mask 1 has two polygons (DALI 2.4 would keep only the last one)
    polys = [[0, 0, 3], [1, 3, 7], [2, 7, 10], [1, 10, 13]]
    verts = np.arange(26, dtype=np.float32).reshape(13, 2)
    out_polys, out_verts = _select([2, 1], polys, verts, reindex_masks=True)
    np.testing.assert_array_equal(out_polys[0], [[0, 0, 3], [1, 3, 7], [1, 7, 10]])
    np.testing.assert_array_equal(out_verts[0], np.concatenate([verts[7:10], verts[3:7], verts[10:13]]))


def test_errors_name_the_problem() -> None:
    polys = [[0, 0, 3], [1, 3, 5]]
    verts = np.zeros((5, 2), np.float32)
    with pytest.raises(PipelineError, match="selected mask_id 7 is not present"):
        _select([7], polys, verts)
    with pytest.raises(PipelineError, match="should not have duplicated values, got 1 repeated"):
        _select([1, 1], polys, verts)
    with pytest.raises(PipelineError, match=r"the vertex range \[3, 9\) of mask id 1 is not within the 5 vertices"):
        _select([0], [[0, 0, 3], [1, 3, 9]], verts)
