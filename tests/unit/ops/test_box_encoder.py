"""``box_encoder``: SSD matching against DALI 2.4's CPU outputs with SSD300's 8732 anchors.

Tolerance: bit-identical without ``offset``; with ``offset=True`` within 1 ulp
(the ``log`` of the size ratio is rounded correctly here, glibc's ``logf``
that DALI calls is occasionally 1 ulp away).
"""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import ANCHORS, replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError, PipelineError


def test_matches_dali_ssd() -> None:
    got, want = replay("box_encoder_ssd", fn, types, sf.pipeline_def)
    for out in range(2):
        for g, w in zip(got[out], want[out]):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def test_matches_dali_offsets_within_one_ulp() -> None:
    got, want = replay("box_encoder_offset", fn, types, sf.pipeline_def)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(got[0], want[0]):
        np.testing.assert_array_max_ulp(g, w, maxulp=1)


def test_every_box_gets_its_best_anchor() -> None:
    anchors = [0.0, 0.0, 0.5, 0.5, 0.5, 0.0, 1.0, 0.5, 0.0, 0.5, 0.5, 1.0, 0.5, 0.5, 1.0, 1.0]
    # a small box overlapping the first anchor a little (IoU < criteria) still gets it
    boxes = np.array([[0.0, 0.0, 0.1, 0.1], [0.5, 0.5, 1.0, 1.0]], np.float32)
    labels = np.array([7, 3], np.int32)
    out_boxes, out_labels = run_arrays([boxes], lambda b, lab: fn.box_encoder(b, lab, anchors=anchors), lab=[labels])
    np.testing.assert_array_equal(out_labels[0], [7, 0, 0, 3])
    np.testing.assert_allclose(out_boxes[0][0], [0.05, 0.05, 0.1, 0.1], atol=1e-7)
    np.testing.assert_allclose(out_boxes[0][1], [0.75, 0.25, 0.5, 0.5])  # unmatched: the anchor itself
    np.testing.assert_allclose(out_boxes[0][3], [0.75, 0.75, 0.5, 0.5])


def test_no_boxes_gives_the_anchors() -> None:
    out_boxes, out_labels = run_arrays([np.zeros((0, 4), np.float32)],
                                       lambda b, lab: fn.box_encoder(b, lab, anchors=ANCHORS),
                                       lab=[np.zeros(0, np.int32)])
    a = np.asarray(ANCHORS, np.float32).reshape(-1, 4)
    np.testing.assert_allclose(out_boxes[0][:, 2:], a[:, 2:] - a[:, :2])
    assert not out_labels[0].any()


def test_bad_arguments_and_inputs() -> None:
    node = fn.external_source([[np.zeros((1, 4), np.float32)]])
    with pytest.raises(PipelineDefinitionError, match="anchors must be a non-empty list"):
        fn.box_encoder(node, node, anchors=[0.0, 0.0, 1.0])
    with pytest.raises(PipelineDefinitionError, match="criteria must be in"):
        fn.box_encoder(node, node, anchors=[0.0, 0.0, 1.0, 1.0], criteria=1.5)
    with pytest.raises(PipelineError, match="2 boxes but 1 labels"):
        run_arrays([np.zeros((2, 4), np.float32)], lambda b, lab: fn.box_encoder(b, lab, anchors=ANCHORS),
                   lab=[np.zeros(1, np.int32)])
