"""``bbox_rotate``: DALI 2.4's outputs (exact float32) and boxes that follow fn.rotate's pixels."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import assert_equal_outputs, replay
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError


@pytest.mark.parametrize("case", ["bbox_rotate_expand", "bbox_rotate_keep_size", "bbox_rotate_fixed_xywh",
                                  "bbox_rotate_halfway_size", "bbox_rotate_pixels"])
def test_matches_dali(case: str) -> None:
    assert_equal_outputs(*replay(case, fn, types, sf.pipeline_def))


def test_box_follows_the_rotated_image() -> None:
    # A bright square in an image; after fn.rotate the rotated box must enclose the square's pixels.
    img = np.zeros((60, 80, 1), np.uint8)
    img[10:20, 50:70] = 255
    box = np.array([[50 / 80, 10 / 60, 70 / 80, 20 / 60]], np.float32)
    for angle in (30.0, 90.0, -135.0):
        rotated, boxes = run_arrays([img], lambda x, b: (fn.rotate(x, angle=angle, fill_value=0),
                                                         fn.bbox_rotate(b, angle=angle, input_shape=[60, 80, 1],
                                                                        shape_layout="HWC")), b=[box])
        h, w = rotated[0].shape[:2]
        ys, xs = np.nonzero(rotated[0][:, :, 0] > 128)
        x0, y0, x1, y1 = boxes[0][0] * np.array([w, h, w, h])
        assert xs.min() >= x0 - 1 and xs.max() + 1 <= x1 + 1 and ys.min() >= y0 - 1 and ys.max() + 1 <= y1 + 1


def test_boxes_outside_the_kept_canvas_are_removed_with_their_labels() -> None:
    boxes = np.array([[0.0, 0.0, 0.1, 0.1], [0.4, 0.4, 0.6, 0.6]], np.float32)
    out, labels = run_arrays([boxes], lambda b, lab: fn.bbox_rotate(b, lab, angle=45.0, input_shape=[100, 300],
                                                                    keep_size=True, remove_threshold=0.5),
                             lab=[np.array([7, 8], np.int32)])
    np.testing.assert_array_equal(labels[0], [8])
    assert out[0].shape == (1, 4)


def test_errors() -> None:
    node = fn.external_source([[np.zeros((1, 4), np.float32)]])
    with pytest.raises(PipelineDefinitionError, match="keep_size and size are mutually exclusive"):
        fn.bbox_rotate(node, angle=1.0, input_shape=[10, 10], keep_size=True, size=[5, 5])
    with pytest.raises(PipelineDefinitionError, match="mode must be one of"):
        fn.bbox_rotate(node, angle=1.0, input_shape=[10, 10], mode="grow")
    with pytest.raises(PipelineDefinitionError, match="bbox_layout must be 'xyXY' or 'xyWH'"):
        fn.bbox_rotate(node, angle=1.0, input_shape=[10, 10], bbox_layout="xyzXYZ")
