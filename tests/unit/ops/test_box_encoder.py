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


# --- the GPU implementation (the whole batch at once over cupy; numpy in CI) ----------------------
from detection_gpu import check_recorded_on_gpu
from helpers import make_chunk, run_gpu_outputs

from streamflow.gpu.ops import box_encoder as gpu_box_encoder
from streamflow.ops.box_encoder import BoxEncoder


def test_gpu_matches_cpu_and_dali_ssd(kernel_ctx) -> None:
    check_recorded_on_gpu(kernel_ctx, "box_encoder_ssd")


def test_gpu_offsets_match_cpu_and_dali(kernel_ctx) -> None:
    """As the CPU: DALI within 1 ulp (its logf); the CPU bit for bit here, 1 ulp on a GPU (its log)."""
    check_recorded_on_gpu(kernel_ctx, "box_encoder_offset", dali_ulp=1, gpu_ulp=1)


def test_gpu_ties_empty_samples_split_batches_and_errors(kernel_ctx, monkeypatch) -> None:
    """Duplicate boxes (ties to the last box and anchor), samples without boxes, a batch split in
    parts, per-sample label types; bad samples fail alone."""
    anchors = np.array([[0, 0, 0.5, 0.5], [0.5, 0, 1, 0.5], [0, 0.5, 0.5, 1], [0.5, 0.5, 1, 1],
                        [0, 0, 0.5, 0.5], [0.25, 0.25, 0.75, 0.75]], np.float32)
    rng = np.random.default_rng(1)
    boxes = [np.array([[0, 0, 0.5, 0.5], [0, 0, 0.5, 0.5], [0.3, 0.3, 0.9, 0.8]], np.float32),
             np.zeros((0, 4), np.float32), np.sort(rng.random((7, 2, 2)), axis=1).reshape(7, 4).astype(np.float32),
             np.array([0.1, 0.1, 0.6, 0.6], np.float32), np.zeros((2, 3), np.float32)]
    labels = [np.array([1, 2, 3], np.int32), np.zeros(0, np.int32), np.arange(7, dtype=np.int64),
              np.array([9], np.int32), np.array([1, 2], np.int32)]
    monkeypatch.setattr(gpu_box_encoder, "MAX_IOU", 6 * 7 * 2)  # parts of two samples
    for op in (BoxEncoder(anchors=anchors.reshape(-1), criteria=0.3),
               BoxEncoder(anchors=anchors.reshape(-1), criteria=0.2, offset=True, scale=2.0, means=[0.1, 0, 0, 0.2])):
        gpu, gf = run_gpu_outputs(kernel_ctx, op, [boxes, labels])
        chunk = make_chunk(boxes, None)
        chunk.inputs.append(labels)
        cpu = op.run(chunk)
        assert sorted(gf) == sorted(chunk.failures) == [4]
        for g_out, c_out in zip(gpu, cpu):
            for i, (g, c) in enumerate(zip(g_out, c_out)):
                if i == 4:
                    assert g is None
                    continue
                assert g.dtype == c.dtype and g.shape == c.shape
                if kernel_ctx.xp is np:
                    np.testing.assert_array_equal(g, c)
                else:
                    np.testing.assert_array_max_ulp(g, c, maxulp=1)
