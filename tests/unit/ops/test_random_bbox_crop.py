"""``random_bbox_crop``: DALI's invariants on every window, DALI's distributions, determinism.

DALI's random stream is not reproduced, so the random windows are checked by
what DALI guarantees (aspect ratio and extents in range, the threshold met,
kept boxes' centres inside and their coordinates remapped) and against
DALI 2.4's recorded windows statistically (2000 DALI windows, 1000 here, per config:
no-crop rate, kept-box counts and window extents within 4.5 standard errors,
two-sample Kolmogorov-Smirnov on the extents at the 0.1% level). With the
random part fixed (the whole image) the outputs equal DALI's exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.record_detection import (
    OUT,
    STATS_BOXES,
    STATS_CONFIGS,
    assert_equal_outputs,
    random_bbox_crop_stats,
    replay,
)
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError, PipelineError
from streamflow.ops import random_bbox_crop as rbc
from streamflow.ops.boxes import iou


@pytest.mark.parametrize("case", ["random_bbox_crop_whole", "random_bbox_crop_xywh_labels_n1",
                                  "random_bbox_crop_crop_shape_equal"])
def test_fixed_windows_match_dali(case: str) -> None:
    assert_equal_outputs(*replay(case, fn, types, sf.pipeline_def))


def _boxes(n_samples: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_samples):
        n = int(rng.integers(1, 6))
        lo = rng.random((n, 2)) * 0.7
        hi = np.minimum(lo + rng.random((n, 2)) * 0.5 + 0.02, 1.0)
        out.append(np.concatenate([lo, hi], 1).astype(np.float32))
    return out


def _crop(boxes, labels=None, seed=3, **kw):  # type: ignore[no-untyped-def]
    extra = {} if labels is None else {"lab": labels}
    if labels is None:
        return run_arrays(boxes, lambda b: fn.random_bbox_crop(b, output_bbox_indices=True, **kw), seed=seed)
    return run_arrays(boxes, lambda b, lab: fn.random_bbox_crop(b, lab, output_bbox_indices=True, **kw), seed=seed,
                      **extra)


def test_every_window_satisfies_dalis_constraints() -> None:
    boxes = _boxes(32)
    labels = [np.arange(10, 10 + len(b), dtype=np.int32) for b in boxes]
    anchor, shape, out, out_labels, indices = _crop(boxes, labels, aspect_ratio=[0.5, 2.0], thresholds=[0.3],
                                                    scaling=[0.3, 1.0], allow_no_crop=False, num_attempts=50,
                                                    total_num_attempts=5000)
    for b, lab, a, s, o, ol, idx in zip(boxes, labels, anchor, shape, out, out_labels, indices):
        assert a.dtype == s.dtype == o.dtype == np.float32 and ol.dtype == idx.dtype == np.int32
        assert np.all(s >= 0.3 - 1e-6) and np.all(s <= 1.0) and np.all(a >= 0) and np.all(a + s <= 1 + 1e-6)
        assert 0.5 - 1e-6 <= s[0] / s[1] <= 2.0 + 1e-6
        lo, hi = a, a + s
        ious = iou(lo[None], hi[None], b[:, :2], b[:, 2:])
        if ious.min() >= 0.3:  # a window that met the threshold (not the best-effort fallback)
            centre = (b[:, :2] + b[:, 2:]) / 2
            inside = np.nonzero(np.all((centre >= lo) & (centre < hi), 1))[0]
            np.testing.assert_array_equal(idx, inside)
            np.testing.assert_array_equal(ol, lab[idx])
            expect_lo = np.clip((np.maximum(b[idx, :2], lo) - lo) / s, 0, 1)
            expect_hi = np.clip((np.minimum(b[idx, 2:], hi) - lo) / s, 0, 1)
            np.testing.assert_allclose(o, np.concatenate([expect_lo, expect_hi], 1), atol=1e-6)
        assert len(o) >= 1 and np.all((o >= 0) & (o <= 1))


def test_no_crop_keeps_every_box() -> None:
    boxes = _boxes(40, seed=1)
    anchor, shape, out, indices = _crop(boxes, thresholds=[0.9], aspect_ratio=[0.5, 2.0], scaling=[0.1, 0.2],
                                        num_attempts=2)
    whole = [i for i, s in enumerate(shape) if np.all(s == 1)]
    assert len(whole) > 10  # small windows rarely reach IoU 0.9: "no crop" wins most samples
    for i in whole:
        assert np.all(anchor[i] == 0)
        np.testing.assert_array_equal(out[i], boxes[i])
        np.testing.assert_array_equal(indices[i], np.arange(len(boxes[i])))


@pytest.mark.parametrize("config", list(STATS_CONFIGS))
def test_distribution_matches_dali(config: str) -> None:
    dali = dict(np.load(OUT / f"random_bbox_crop_stats_{config}.npz"))
    ours = random_bbox_crop_stats(fn, sf.pipeline_def, config, samples=1000)
    n, m = len(dali["count"]), len(ours["count"])

    def close(p: float, q: float) -> bool:
        pooled = (p * n + q * m) / (n + m)
        se = np.sqrt(max(pooled * (1 - pooled), 1e-4) * (1 / n + 1 / m))
        return abs(p - q) <= 4.5 * se

    no_crop = [np.mean(np.all(r["shape"] == 1, 1)) for r in (dali, ours)]
    assert close(*no_crop), no_crop
    for k in range(len(STATS_BOXES) + 1):
        fractions = [np.mean(r["count"] == k) for r in (dali, ours)]
        assert close(*fractions), (k, fractions)
    for axis in range(2):
        a, b = np.sort(dali["shape"][:, axis]), np.sort(ours["shape"][:, axis])
        grid = np.concatenate([a, b])
        ks = np.max(np.abs(np.searchsorted(a, grid, "right") / n - np.searchsorted(b, grid, "right") / m))
        assert ks < 1.95 * np.sqrt((n + m) / (n * m)), (axis, ks)  # alpha = 0.001


def test_deterministic_per_seed_epoch_and_sample() -> None:
    boxes = _boxes(12, seed=2)
    kw = dict(aspect_ratio=[0.5, 2.0], thresholds=[0.0, 0.5], scaling=[0.3, 1.0], num_attempts=5)
    a1 = _crop(boxes, seed=7, **kw)
    a2 = _crop(boxes, seed=7, **kw)
    b = _crop(boxes, seed=8, **kw)
    for x, y in zip(a1, a2):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)
    assert any(not np.array_equal(u, v) for u, v in zip(a1[0], b[0]))

    @sf.pipeline_def(batch_size=4, num_threads=2, seed=7)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.random_bbox_crop(fn.external_source(lambda: boxes[:4], batch=True), **kw)[0]

    with pipe() as p:  # the same sample in the next epoch gets a new window
        e0 = [np.asarray(p.run()[0].at(i)) for i in range(4)]
        e1 = [np.asarray(p.run()[0].at(i)) for i in range(4)]
    assert any(not np.array_equal(u, v) for u, v in zip(e0, e1))


def test_fixed_crop_shape_in_pixels() -> None:
    boxes = _boxes(30, seed=4)
    anchor, shape, _, _ = _crop(boxes, crop_shape=[40, 30], input_shape=[100, 60], thresholds=[0.0])
    for a, s in zip(anchor, shape):
        np.testing.assert_array_equal(s, [40, 30])
        assert a[0] == int(a[0]) and 0 <= a[0] <= 60 and a[1] == int(a[1]) and 0 <= a[1] <= 30
    # shape_layout="HW": the same sizes given height first
    anchor, shape, _, _ = _crop(boxes[:4], crop_shape=[30, 40], input_shape=[60, 100], shape_layout="HW")
    np.testing.assert_array_equal(shape[0], [40, 30])


def test_input_shape_makes_aspect_ratio_in_pixels() -> None:
    boxes = _boxes(40, seed=5)
    _, shape, _, _ = _crop(boxes, input_shape=[400, 200], aspect_ratio=[0.9, 1.1], scaling=[0.2, 0.5],
                           thresholds=[0.0], allow_no_crop=False)
    ratios = np.array([s[0] * 400 / (s[1] * 200) for s in shape])
    assert np.all((ratios >= 0.9 - 1e-5) & (ratios <= 1.1 + 1e-5))


def test_bbox_prune_threshold_keeps_boxes_mostly_inside() -> None:
    boxes = _boxes(40, seed=6)
    anchor, shape, _, indices = _crop(boxes, thresholds=[0.0], scaling=[0.3, 0.6], aspect_ratio=[0.5, 2.0],
                                      allow_no_crop=False, bbox_prune_threshold=0.6)
    for b, a, s, idx in zip(boxes, anchor, shape, indices):
        lo, hi = np.maximum(b[:, :2], a), np.minimum(b[:, 2:], a + s)
        inside = np.prod(np.clip(hi - lo, 0, None), 1) / np.prod(b[:, 2:] - b[:, :2], 1)
        np.testing.assert_array_equal(idx, np.nonzero(inside >= 0.6 - 1e-6)[0])


def test_empty_input_boxes() -> None:
    empty = [np.zeros((0, 4), np.float32)] * 8
    anchor, shape, out, indices = _crop(empty, thresholds=[0.5], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0])
    assert all(len(o) == 0 and len(i) == 0 for o, i in zip(out, indices))
    assert any(np.any(s < 1) for s in shape)  # crops succeed without boxes, as DALI's


def test_impossible_constraints_end_with_the_best_window(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every box at IoU >= 0.95 with one window cannot hold: DALI loops forever, streamflow gives up.
    monkeypatch.setattr(rbc, "MAX_CANDIDATES", 300)
    boxes = [np.array([[0.0, 0.0, 0.2, 0.2], [0.8, 0.8, 1.0, 1.0]], np.float32)]
    anchor, shape, out, _ = _crop(boxes, thresholds=[0.95], allow_no_crop=False, scaling=[0.1, 1.0],
                                  aspect_ratio=[0.5, 2.0])
    assert shape[0].shape == (2,) and len(out[0]) >= 1


def test_errors() -> None:
    node = fn.external_source([[np.zeros((1, 4), np.float32)]])
    with pytest.raises(PipelineDefinitionError, match="thresholds must be in"):
        fn.random_bbox_crop(node, thresholds=[1.5])
    with pytest.raises(PipelineDefinitionError, match="crop_shape needs input_shape"):
        fn.random_bbox_crop(node, crop_shape=[10, 10])
    with pytest.raises(PipelineDefinitionError, match="cannot be combined with crop_shape"):
        fn.random_bbox_crop(node, crop_shape=[10, 10], input_shape=[20, 20], scaling=[0.5, 1.0])
    with pytest.raises(PipelineDefinitionError, match="bbox_layout or the deprecated ltrb"):
        fn.random_bbox_crop(node, ltrb=True, bbox_layout="xyXY")
    with pytest.raises(PipelineDefinitionError, match="should be a permutation"):
        fn.random_bbox_crop(node, bbox_layout="xyXZ")
    with pytest.raises(PipelineError, match=r"box 0 \[0.5, 0.5, 1.5, 0.7\] \(xyXY\) is not inside \[0, 1\]"):
        _crop([np.array([[0.5, 0.5, 1.5, 0.7]], np.float32)])
    with pytest.raises(PipelineError, match="one per box"):
        _crop([np.zeros((2, 4), np.float32) + 0.1], [np.zeros(3, np.int32)])


def test_3d_boxes() -> None:
    rng = np.random.default_rng(9)
    boxes = []
    for _ in range(16):
        lo = rng.random((3, 3)) * 0.6
        boxes.append(np.concatenate([lo, lo + 0.3], 1).astype(np.float32))
    anchor, shape, out, idx = _crop(boxes, thresholds=[0.0], scaling=[0.4, 0.9], allow_no_crop=False,
                                    aspect_ratio=[0.5, 2.0, 0.5, 2.0, 0.5, 2.0])
    for b, a, s, o, i in zip(boxes, anchor, shape, out, idx):
        assert a.shape == s.shape == (3,) and o.shape[1] == 6 and np.all(a + s <= 1 + 1e-6)
        for p, q in ((0, 1), (0, 2), (1, 2)):
            assert 0.5 - 1e-6 <= s[p] / s[q] <= 2.0 + 1e-6
        centre = (b[:, :3] + b[:, 3:]) / 2
        np.testing.assert_array_equal(i, np.nonzero(np.all((centre >= a) & (centre < a + s), 1))[0])
