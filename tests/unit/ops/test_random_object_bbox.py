"""``segmentation.random_object_bbox``: DALI 2.4's outputs where the draw is fixed, its rules and distributions."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import LABEL_MAPS, assert_equal_outputs, replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError


@pytest.mark.parametrize("case", ["random_object_bbox_background", "random_object_bbox_largest",
                                  "random_object_bbox_threshold", "random_object_bbox_hwc"])
def test_matches_dali_where_the_draw_is_fixed(case: str) -> None:
    assert_equal_outputs(*replay(case, fn, types, sf.pipeline_def))


def _boxes(mask: np.ndarray, n: int, seed: int = 1, **kw):  # type: ignore[no-untyped-def]
    return run_arrays([mask] * n, lambda m: fn.segmentation.random_object_bbox(m, format="box", output_class=True,
                                                                              **kw), seed=seed)


def test_blobs_are_axis_connected_and_drawn_uniformly() -> None:
    m = np.zeros((8, 10), np.int32)
    m[1, 1] = m[2, 2] = 1  # diagonal: two blobs, as DALI
    m[1:3, 5:7] = 1
    boxes, classes = _boxes(m, 300)
    found = [tuple(b.tolist()) for b in boxes]
    assert set(found) == {(1, 1, 2, 2), (2, 2, 3, 3), (1, 5, 3, 7)}
    counts = np.array([found.count(b) for b in sorted(set(found))])
    assert np.all(np.abs(counts - 100) < 4.5 * np.sqrt(300 * (1 / 3) * (2 / 3)))
    assert all(int(c) == 1 for c in classes)


def test_class_weights_and_foreground_prob() -> None:
    m = LABEL_MAPS[0]  # classes 1, 2, 3
    _, classes = _boxes(m, 400, classes=[1, 2, 3], class_weights=[0.0, 3.0, 1.0])
    c = np.array([int(x) for x in classes])
    assert not np.any(c == 1) and abs(np.mean(c == 2) - 0.75) < 4.5 * np.sqrt(0.75 * 0.25 / 400)
    boxes, classes = _boxes(m, 400, foreground_prob=0.25)
    background = np.array([int(x) == 0 for x in classes])
    assert abs(background.mean() - 0.75) < 4.5 * np.sqrt(0.75 * 0.25 / 400)
    for b, bg in zip(boxes, background):
        if bg:
            np.testing.assert_array_equal(b, [0, 0, 8, 10])


def test_deterministic_per_seed() -> None:
    a = _boxes(LABEL_MAPS[0], 20, seed=4)
    b = _boxes(LABEL_MAPS[0], 20, seed=4)
    c = _boxes(LABEL_MAPS[0], 20, seed=5)
    assert all(np.array_equal(x, y) for x, y in zip(a[0], b[0]))
    assert any(not np.array_equal(x, y) for x, y in zip(a[0], c[0]))


def test_ignore_class_and_formats() -> None:
    m = LABEL_MAPS[0]
    anchor, shape = run_arrays([m] * 50, lambda x: fn.segmentation.random_object_bbox(x, ignore_class=True,
                                                                                     k_largest=2))
    assert {(tuple(a), tuple(s)) for a, s in zip(anchor, shape)} == {((1, 1), (4, 3)), ((5, 5), (2, 4))}


def test_errors() -> None:
    node = fn.external_source([[np.zeros((2, 2), np.int32)]])
    with pytest.raises(PipelineDefinitionError, match="format must be one of"):
        fn.segmentation.random_object_bbox(node, format="xywh")
    with pytest.raises(PipelineDefinitionError, match="ignore_class cannot be combined"):
        fn.segmentation.random_object_bbox(node, ignore_class=True, output_class=True)


def test_missing_scipy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from streamflow.errors import MissingDependencyError
    from streamflow.ops.segmentation.random_object_bbox import find_blobs

    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(MissingDependencyError, match=r"streamflow\[segmentation\]"):
        find_blobs(np.ones((2, 2), np.int32), 1)
