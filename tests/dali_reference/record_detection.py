"""Record DALI 2.4's CPU outputs for the detection operators (boxes, COCO, transforms, masks).

Run with any Python that has ``nvidia-dali-cuda130`` (DALI 2.4; CPU pipelines
need no GPU)::

    python tests/dali_reference/record_detection.py

It writes one ``.npz`` per case to ``tests/data/dali/detection/``: the inputs
(``in<i>_<sample>``) and DALI's outputs (``out<o>_<sample>``). The cases are
defined here once, as functions of an ``fn`` namespace, so the tests
(``tests/unit/ops/test_*.py``) rebuild exactly the same pipelines with
``streamflow.fn`` and compare. Importing this module does not import DALI.

Only deterministic operators, or random ones with their random part fixed,
are recorded: DALI's random streams are not reproduced by streamflow.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DATA = HERE.parent / "data"
OUT = DATA / "dali" / "detection"
COCO_ANNOTATIONS = DATA / "coco" / "instances.json"
COCO_CROWD = DATA / "coco" / "instances_crowd.json"


def coco(fn: Any, annotations: Path = COCO_ANNOTATIONS, **kw: Any) -> Any:
    """``fn.readers.coco`` over the test set, without the encoded images (they are the files' bytes)."""
    return tuple(fn.readers.coco(file_root=str(DATA), annotations_file=str(annotations), **kw))[1:]


def _ltrb_boxes(rng: np.random.Generator, counts: list[int]) -> list[np.ndarray]:
    out = []
    for n in counts:
        lo = rng.random((n, 2)) * 0.8
        wh = rng.random((n, 2)) * 0.5 + 0.01
        out.append(np.concatenate([lo, np.minimum(lo + wh, 1.0)], 1).astype(np.float32))
    return out


_RNG = np.random.default_rng(20240611)
BOXES = _ltrb_boxes(_RNG, [0, 1, 3, 7, 20])
LABELS = [_RNG.integers(1, 80, len(b)).astype(np.int32) for b in BOXES]
REL_BOXES = [np.clip(b, 0.0, 1.0) for b in BOXES]  # ltrb inside [0, 1]
XYWH_BOXES = [np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1) for b in REL_BOXES]
MASK_POLYGONS = [np.array([[0, 0, 3], [1, 3, 7], [2, 7, 10], [3, 10, 13]], np.int32)] * 3
MASK_VERTICES = [np.arange(26, dtype=np.float32).reshape(13, 2), (np.arange(39) % 7).astype(np.float32).reshape(13, 3),
                 np.arange(13, dtype=np.float32).reshape(13, 1)]
MASK_IDS = [np.array(v, np.int32) for v in ([1], [3, 0, 2], [])]
LABEL_MAPS = [np.zeros((8, 10), np.int32), np.zeros((8, 10), np.int32), np.zeros((6, 7), np.int32)]
LABEL_MAPS[0][5:7, 5:9] = 2
LABEL_MAPS[0][0:2, 7:9] = 2
LABEL_MAPS[0][1:5, 1:4] = 1
LABEL_MAPS[0][7, 0] = 3
LABEL_MAPS[1][2:6, 3:9] = 2
LABEL_MAPS[1][0, 9] = 3
LABEL_MAPS[2][1:4, 2:6] = 2
LABEL_MAPS[2][5, 6] = 3
POINTS = [_RNG.random((n, 2)).astype(np.float32) for n in (0, 1, 5, 9)]
POINTS3 = [(_RNG.random((n, 3)) * 100).astype(np.float32) for n in (2, 6)]


@dataclass
class Case:
    """One pipeline to record: ``build(fn, types, *inputs)`` over the per-sample ``inputs``."""

    build: Callable[..., Any]
    inputs: list[list[np.ndarray]] = field(default_factory=list)
    batch_size: int = 0

    @property
    def size(self) -> int:
        return self.batch_size or len(self.inputs[0])


CASES: dict[str, Case] = {
    # --- bb_flip -----------------------------------------------------------------------
    "bb_flip_xywh": Case(lambda fn, t, b: fn.bb_flip(b), [BOXES]),
    "bb_flip_ltrb_hv": Case(lambda fn, t, b: fn.bb_flip(b, ltrb=True, horizontal=1, vertical=1), [BOXES]),
    "bb_flip_per_sample": Case(
        lambda fn, t, b, h, v: fn.bb_flip(b, ltrb=True, horizontal=h, vertical=v),
        [BOXES, [np.int32(x) for x in (1, 0, 1, 0, 1)], [np.int32(x) for x in (0, 1, 1, 0, 0)]]),
    # --- bbox_paste --------------------------------------------------------------------
    "bbox_paste_xywh": Case(lambda fn, t, b: fn.bbox_paste(b, ratio=1.7), [BOXES]),
    "bbox_paste_ltrb": Case(lambda fn, t, b: fn.bbox_paste(b, ratio=2.5, paste_x=0.2, paste_y=0.9, ltrb=True), [BOXES]),
    "bbox_paste_corner": Case(lambda fn, t, b: fn.bbox_paste(b, ratio=3.0, paste_x=1.0, paste_y=1.0, ltrb=True), [BOXES]),
    "bbox_paste_per_sample": Case(
        lambda fn, t, b, r, x: fn.bbox_paste(b, ratio=r, paste_x=x, ltrb=True),
        [BOXES, [np.float32(x) for x in (1.0, 1.5, 2.0, 3.3, 4.0)], [np.float32(x) for x in (0, 0.25, 0.5, 0.75, 1)]]),
    # --- box_encoder -------------------------------------------------------------------
    "box_encoder_ssd": Case(lambda fn, t, b, lab: fn.box_encoder(b, lab, anchors=ANCHORS, criteria=0.5),
                            [BOXES, LABELS]),
    "box_encoder_offset": Case(
        lambda fn, t, b, lab: fn.box_encoder(b, lab, anchors=ANCHORS, criteria=0.4, offset=True, scale=300,
                                             means=[0.1, 0.2, 0.3, 0.4], stds=[0.1, 0.1, 0.2, 0.2]),
        [BOXES, LABELS]),
    # --- coord_flip --------------------------------------------------------------------
    "coord_flip_x": Case(lambda fn, t, p: fn.coord_flip(p), [POINTS]),
    "coord_flip_xy_center": Case(lambda fn, t, p: fn.coord_flip(p, flip_y=1, center_x=0.3, center_y=0.7), [POINTS]),
    "coord_flip_yx_layout": Case(lambda fn, t, p: fn.coord_flip(p, flip_y=1, center_x=0.3, layout="yx"), [POINTS]),
    "coord_flip_3d": Case(lambda fn, t, p: fn.coord_flip(p, flip_x=0, flip_z=1, center_z=50.0), [POINTS3]),
    # --- coord_transform ---------------------------------------------------------------
    "coord_transform_m_t": Case(
        lambda fn, t, p: fn.coord_transform(p, M=[1.5, 0.2, -0.3, 0.9, 2.0, 1.0], T=[0.1, 0.2, 0.3]), [POINTS]),
    "coord_transform_mt": Case(
        lambda fn, t, p: fn.coord_transform(p, MT=[1.5, 0.2, 0.5, -0.3, 0.9, 0.25]), [POINTS]),
    "coord_transform_scalar": Case(lambda fn, t, p: fn.coord_transform(p, M=2.5, T=-1.0), [POINTS]),
    "coord_transform_3d_to_2d": Case(
        lambda fn, t, p: fn.coord_transform(p, M=[0.5, 0.25, 1.0, -1.0, 0.75, 0.125]), [POINTS3]),
    "coord_transform_uint8": Case(
        lambda fn, t, p: fn.coord_transform(p, M=[0.299, 0.587, 0.114, -0.169, -0.331, 0.5, 0.5, -0.419, -0.081],
                                            T=[0, 128, 128], dtype=t.UINT8),
        [[_RNG.integers(0, 256, (4, 5, 3), dtype=np.uint8), _RNG.integers(0, 256, (2, 7, 3), dtype=np.uint8)]]),
    "coord_transform_per_sample_mt": Case(
        lambda fn, t, p, mt: fn.coord_transform(p, MT=mt),
        [POINTS, [(_RNG.random((2, 3)) * 2 - 1).astype(np.float32) for _ in POINTS]]),
    # --- transforms.* (each also applied to points through coord_transform) --------------
    **{f"transforms_{k}": Case(lambda fn, t, p, f=f: (lambda m: (m, fn.coord_transform(p, MT=m)))(f(fn)), [POINTS])
       for k, f in {
           "translation": lambda fn: fn.transforms.translation(offset=[3.0, -4.5]),
           "scale_center": lambda fn: fn.transforms.scale(scale=[2.0, 3.0], center=[0.25, 1.0]),
           "rotation": lambda fn: fn.transforms.rotation(angle=30.0),
           "rotation_center": lambda fn: fn.transforms.rotation(angle=-117.5, center=[10.0, 20.0]),
           "shear": lambda fn: fn.transforms.shear(shear=[0.5, -0.25]),
           "shear_angles_center": lambda fn: fn.transforms.shear(angles=[10.0, 20.0], center=[1.0, 2.0]),
           "crop": lambda fn: fn.transforms.crop(from_start=[0.0, 0.0], from_end=[10.0, 20.0],
                                                 to_start=[1.0, 1.0], to_end=[0.0, 0.0]),
           "crop_absolute": lambda fn: fn.transforms.crop(from_start=[5.0, 0.0], from_end=[1.0, 20.0], absolute=True),
           "chain": lambda fn: fn.transforms.rotation(
               fn.transforms.scale(fn.transforms.translation(offset=[3.0, 4.0]), scale=[1.5, 0.5]), angle=33.0),
           "chain_reverse": lambda fn: fn.transforms.shear(
               fn.transforms.translation(offset=[3.0, 4.0]), shear=[0.1, 0.2], reverse_order=True),
           "combine": lambda fn: fn.transforms.combine(
               fn.transforms.translation(offset=[3.0, 4.0]), fn.transforms.rotation(angle=71.0),
               fn.transforms.scale(scale=[2.0, 0.5])),
           "combine_reverse": lambda fn: fn.transforms.combine(
               fn.transforms.translation(offset=[3.0, 4.0]), fn.transforms.rotation(angle=71.0), reverse_order=True),
       }.items()},
    **{f"transforms3d_{k}": Case(lambda fn, t, p, f=f: (lambda m: (m, fn.coord_transform(p, MT=m)))(f(fn)), [POINTS3])
       for k, f in {
           "rotation_axis": lambda fn: fn.transforms.rotation(angle=30.0, axis=[1.0, 1.0, 1.0]),
           "rotation_axis_center": lambda fn: fn.transforms.rotation(angle=-63.0, axis=[0.2, -1.0, 3.0],
                                                                     center=[1.0, 2.0, 3.0]),
           "scale_ndim": lambda fn: fn.transforms.scale(scale=2.5, ndim=3),
           "shear3d": lambda fn: fn.transforms.shear(shear=[0.1, 0.2, 0.3, -0.1, -0.2, -0.3]),
           "translation_scale": lambda fn: fn.transforms.scale(fn.transforms.translation(offset=[1.0, 2.0, 3.0]),
                                                               scale=[0.5, 2.0, 4.0], center=[1.0, 1.0, 1.0]),
       }.items()},
    "transforms_per_sample_angle": Case(
        lambda fn, t, p, a: (lambda m: (m, fn.coord_transform(p, MT=m)))(
            fn.transforms.rotation(fn.transforms.translation(offset=[0.5, 0.5]), angle=a, center=[0.5, 0.5])),
        [POINTS, [np.float32(x) for x in (0.0, 45.0, -90.0, 179.5)]]),
    "transforms_warp_affine": Case(
        lambda fn, t, img: fn.warp_affine(
            img, matrix=fn.transforms.rotation(fn.transforms.scale(scale=[1.25, 0.8], center=[16.0, 12.0]),
                                               angle=20.0, center=[16.0, 12.0]), fill_value=0),
        [[(np.arange(24 * 32 * 3) % 251).astype(np.uint8).reshape(24, 32, 3),
          (np.arange(17 * 9 * 3) % 13 * 19).astype(np.uint8).reshape(17, 9, 3)]]),
    # --- random_bbox_crop with its random part fixed (the window is the whole image) -------
    "random_bbox_crop_whole": Case(
        lambda fn, t, b, lab: fn.random_bbox_crop(b, lab, output_bbox_indices=True), [REL_BOXES, LABELS]),
    "random_bbox_crop_xywh_labels_n1": Case(
        lambda fn, t, b, lab: fn.random_bbox_crop(b, fn.reshape(lab, shape=[-1, 1]), bbox_layout="xyWH",
                                                  thresholds=[0.0], scaling=[1.0, 1.0], allow_no_crop=False),
        [XYWH_BOXES, LABELS]),
    "random_bbox_crop_crop_shape_equal": Case(
        lambda fn, t, b: fn.random_bbox_crop(b, crop_shape=[64, 48], input_shape=[64, 48]), [REL_BOXES]),
    # --- segmentation.select_masks (one polygon per mask: DALI keeps only a mask's last polygon) --
    "select_masks": Case(
        lambda fn, t, m, p, v: fn.segmentation.select_masks(m, p, v), [MASK_IDS, MASK_POLYGONS, MASK_VERTICES]),
    "select_masks_reindex": Case(
        lambda fn, t, m, p, v: fn.segmentation.select_masks(m, p, v, reindex_masks=True),
        [MASK_IDS, MASK_POLYGONS, MASK_VERTICES]),
    # --- segmentation.random_object_bbox / random_mask_pixel with their draw fixed ------------
    "random_object_bbox_background": Case(
        lambda fn, t, m: fn.segmentation.random_object_bbox(m, foreground_prob=0.0, output_class=True), [LABEL_MAPS]),
    "random_object_bbox_largest": Case(
        lambda fn, t, m: fn.segmentation.random_object_bbox(m, format="box", classes=[2], k_largest=1,
                                                           output_class=True), [LABEL_MAPS]),
    "random_object_bbox_threshold": Case(
        lambda fn, t, m: fn.segmentation.random_object_bbox(m, format="start_end", threshold=[3, 4],
                                                           output_class=True), [LABEL_MAPS]),
    "random_mask_pixel_single": Case(
        lambda fn, t, m: fn.segmentation.random_mask_pixel(m, foreground=1, value=3), [LABEL_MAPS]),
    "random_object_bbox_hwc": Case(
        lambda fn, t, m: fn.segmentation.random_object_bbox(fn.expand_dims(m, axes=[2]), classes=[3], output_class=True),
        [LABEL_MAPS]),
    "random_mask_pixel_hwc_threshold": Case(
        lambda fn, t, m: fn.segmentation.random_mask_pixel(fn.expand_dims(m, axes=[2]) * 1.0, foreground=1, threshold=2.5),
        [LABEL_MAPS]),
    # --- one_hot, lookup_table ----------------------------------------------------------------
    "one_hot_scalars": Case(lambda fn, t, x: fn.one_hot(x, num_classes=5), [[np.int32(v) for v in (0, 4, 7, -1)]]),
    "one_hot_axis0_int16": Case(
        lambda fn, t, x: fn.one_hot(x, num_classes=4, axis=0, dtype=t.INT16, on_value=5, off_value=-1),
        [[np.array([2, 0, 1, 5], np.int32), np.array([3], np.int32)]]),
    "one_hot_mixed_batch": Case(lambda fn, t, x: fn.one_hot(x, num_classes=3),
                                [[np.array([1], np.int32), np.array([0, 2], np.int32)]]),
    "one_hot_single_elements": Case(lambda fn, t, x: fn.one_hot(x, num_classes=3),
                                    [[np.array([1], np.int32), np.array([2], np.int32), np.array([7], np.int32)]]),
    "one_hot_2d_axis1": Case(lambda fn, t, x: fn.one_hot(x, num_classes=3, axis=1),
                             [[np.array([[2, 0], [1, 1]], np.int64), np.array([[0, 9, 2]], np.int64)]]),
    "one_hot_float_input": Case(lambda fn, t, x: fn.one_hot(x, num_classes=3),
                                [[np.array([1.7, 0.2, 2.0, -0.5], np.float32), np.array([2.9, 3.0], np.float32)]]),
    "lookup_table": Case(
        lambda fn, t, x: fn.lookup_table(x, keys=[0, 2, 3, 4, 5, 3], values=[0.2, 0.4, 0.5, 0.6, 0.7, 0.10],
                                         default_value=0.99),
        [[np.array([1, 4, 1, 0, 100, 2, 3, 4, -1], np.int32), np.array([5, 6, 70000, 3], np.int32)]]),
    "lookup_table_uint8": Case(
        lambda fn, t, x: fn.lookup_table(x, keys=[1, 2, 7], values=[10.4, 300.0, -3.5], dtype=t.UINT8,
                                         default_value=2.5),
        [[np.array([[1, 2], [7, 0]], np.uint8), np.arange(10, dtype=np.uint8).reshape(2, 5)]]),
    # --- bbox_rotate --------------------------------------------------------------------------
    **{f"bbox_rotate_{k}": Case(f, [REL_BOXES, LABELS]) for k, f in {
        "expand": lambda fn, t, b, lab: fn.bbox_rotate(b, lab, angle=30.0, input_shape=[480, 640]),
        "keep_size": lambda fn, t, b, lab: fn.bbox_rotate(b, lab, angle=-75.0, input_shape=[300, 200],
                                                          keep_size=True),
        "fixed_xywh": lambda fn, t, b, lab: fn.bbox_rotate(
            fn.cat(b[:, 0:2], b[:, 2:4] - b[:, 0:2], axis=1), lab, angle=120.0, input_shape=[101, 57],
            bbox_layout="xyWH", mode="fixed"),
        "halfway_size": lambda fn, t, b, lab: fn.bbox_rotate(b, lab, angle=45.0, input_shape=[64, 64, 3],
                                                             shape_layout="HWC", size=[80.7, 90.2], mode="halfway",
                                                             remove_threshold=0.5),
        "pixels": lambda fn, t, b, lab: fn.bbox_rotate(b * 100.0, lab, angle=10.0, input_shape=[100, 100],
                                                       bbox_normalized=False),
    }.items()},
    # --- readers.coco (one batch: the whole set) -----------------------------------------
    "coco_default": Case(lambda fn, t: coco(fn), batch_size=5),
    "coco_polygons_ids": Case(lambda fn, t: coco(fn, polygon_masks=True, image_ids=True), batch_size=5),
    "coco_ratio_ltrb_skip_empty": Case(
        lambda fn, t: coco(fn, ratio=True, ltrb=True, skip_empty=True, polygon_masks=True), batch_size=4),
    "coco_no_remapping": Case(lambda fn, t: coco(fn, avoid_class_remapping=True), batch_size=5),
    "coco_images_list": Case(
        lambda fn, t: coco(fn, images=["photos/chelsea.png", "jpeg-quirks/hopper.jpg", "photos/chelsea.png",
                                       "not/listed.jpg"], image_ids=True), batch_size=3),
    "coco_size_threshold": Case(lambda fn, t: coco(fn, size_threshold=60.0), batch_size=5),
    "coco_legacy_masks": Case(lambda fn, t: coco(fn, masks=True), batch_size=5),
    "coco_crowd": Case(lambda fn, t: coco(fn, COCO_CROWD, polygon_masks=True), batch_size=5),
    "coco_crowd_excluded": Case(lambda fn, t: coco(fn, COCO_CROWD, include_iscrowd=False, image_ids=True),
                                batch_size=5),
    # (DALI 2.4 crashes on chelsea's box without segmentation in COCO_CROWD: left out with `images`)
    "coco_pixelwise": Case(
        lambda fn, t: coco(fn, COCO_CROWD, pixelwise_masks=True, images=[
            "jpeg-quirks/pil_sample_rgb.jpg", "jpeg-quirks/flower2.jpg", "jpeg-quirks/hopper.jpg", "photos/rocket.jpg"]),
        batch_size=4),
    "coco_pixelwise_ratio": Case(lambda fn, t: coco(fn, pixelwise_masks=True, ratio=True, ltrb=True), batch_size=5),
}


# --- the example pipelines (examples/*.py), with their random operators fixed ---------------------
_EXAMPLE_IMPORT = "from streamflow import fn, pipeline_def, types"


class _FixedRandom:
    """``fn.random`` with every draw fixed: coins land on 1, uniform draws give their range's middle."""

    def __init__(self, random: Any) -> None:
        self._random = random

    def __getattr__(self, name: str) -> Any:
        return getattr(self._random, name)

    def coin_flip(self, **kw: Any) -> Any:
        kw["probability"] = 1.0
        return self._random.coin_flip(**kw)

    def uniform(self, **kw: Any) -> Any:
        lo, hi = kw.pop("range", (-1.0, 1.0))
        return self._random.uniform(values=[(lo + hi) / 2.0], **kw)


class _FixedReaders:
    """``fn.readers`` reading in the stored order (no shuffling)."""

    def __init__(self, readers: Any) -> None:
        self._readers = readers

    def __getattr__(self, name: str) -> Any:
        return getattr(self._readers, name)

    def coco(self, **kw: Any) -> Any:
        kw.update(random_shuffle=False, shuffle_after_epoch=False)
        return self._readers.coco(**kw)


class FixedFn:
    """An ``fn`` namespace whose random parts are fixed: ``random_bbox_crop`` keeps the whole image."""

    def __init__(self, fn: Any) -> None:
        self._fn = fn
        self.random = _FixedRandom(fn.random)
        self.readers = _FixedReaders(fn.readers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fn, name)

    def random_bbox_crop(self, *args: Any, **kw: Any) -> Any:
        kw.update(scaling=[1.0, 1.0], aspect_ratio=[1.0, 1.0])
        return self._fn.random_bbox_crop(*args, **kw)


def load_example(name: str, fn: Any, types: Any, pipeline_def: Callable[..., Any], cpu_only: bool,
                 edits: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``examples/<name>`` with the given ``fn``/``types``/``pipeline_def`` in place of its streamflow import.

    The source is used as it is, so DALI runs the very pipeline streamflow runs; ``cpu_only``
    drops the ``.gpu()`` copies (DALI without a GPU refuses them); ``edits`` replaces each
    key's text (which must be there) by its value.
    """
    path = REPO / "examples" / name
    source = path.read_text()
    for old, new in {_EXAMPLE_IMPORT: "", **(edits or {})}.items():
        if old not in source:
            raise RuntimeError(f"{path}: expected the text {old!r}")
        source = source.replace(old, new)
    if cpu_only:
        source = source.replace(".gpu()", "")
    namespace: dict[str, Any] = {"fn": fn, "types": types, "pipeline_def": pipeline_def, "__name__": "example",
                                 "__file__": str(path)}
    exec(compile(source, str(path), "exec"), namespace)  # our own example file
    return namespace


#: The 8732 ``ltrb`` default boxes of SSD300 on COCO, flattened: the SSD example's own (``dboxes300_coco``).
ANCHORS: list[float] = load_example("ssd_coco.py", None, None, lambda f: f, cpu_only=True)["dboxes300_coco"]() \
    .reshape(-1).tolist()


def _blocks(image: np.ndarray, block: int) -> np.ndarray:
    """Block means of a CHW image (what the recorded image outputs keep of a pipeline's images)."""
    c, h, w = image.shape
    h2, w2 = h // block * block, w // block * block
    return image[:, :h2, :w2].astype(np.float64).reshape(c, h2 // block, block, w2 // block, block).mean((2, 4))


def ssd_fixed(fn: Any, types: Any, pipeline_def: Callable[..., Any], cpu_only: bool, **pipe_kw: Any
              ) -> list[list[np.ndarray]]:
    """The SSD example's outputs with its random parts fixed; images as 10x10 block means."""
    ns = load_example("ssd_coco.py", FixedFn(fn), types, pipeline_def, cpu_only)
    args = ns["parse_args"](["--root", str(DATA), "--annotations", str(COCO_ANNOTATIONS)])
    pipe = ns["create_coco_pipeline"](ns["DefaultBoxes"](), args, batch_size=4, num_threads=1, seed=1, **pipe_kw)
    if hasattr(pipe, "build"):
        pipe.build()
    images, bboxes, labels = pipe.run()
    images = images.as_cpu() if hasattr(images, "as_cpu") else images
    return [[_blocks(np.array(images.at(i)), 10) for i in range(4)],
            [np.array(bboxes.at(i)) for i in range(4)], [np.array(labels.at(i)) for i in range(4)]]


def mask_rcnn_fixed(fn: Any, types: Any, pipeline_def: Callable[..., Any], **pipe_kw: Any) -> list[list[np.ndarray]]:
    """The Mask R-CNN-style example's outputs with its random parts fixed; images as 8x8 block means."""
    ns = load_example("mask_rcnn_coco.py", FixedFn(fn), types, pipeline_def, cpu_only=True)
    pipe = ns["coco_mask_pipeline"](str(DATA), str(COCO_ANNOTATIONS), batch_size=4, num_threads=1, seed=1, **pipe_kw)
    if hasattr(pipe, "build"):
        pipe.build()
    outs = pipe.run()
    images = [np.array(outs[0].at(i)) for i in range(4)]
    return [[_blocks(im, 8) for im in images], [np.array(im.shape) for im in images]] + \
        [[np.array(t.at(i)) for i in range(4)] for t in outs[1:]]


def _save(name: str, case: Case, outputs: list[list[np.ndarray]]) -> None:
    arrays: dict[str, np.ndarray] = {}
    for i, samples in enumerate(case.inputs):
        for s, value in enumerate(samples):
            arrays[f"in{i}_{s}"] = np.asarray(value)
    for o, samples in enumerate(outputs):
        for s, value in enumerate(samples):
            arrays[f"out{o}_{s}"] = np.asarray(value)
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / f"{name}.npz", **arrays)


def load(name: str) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
    """(inputs, outputs) of a recorded case, per input/output, per sample."""
    with np.load(OUT / f"{name}.npz") as z:
        keys = list(z.keys())
        def group(prefix: str) -> list[list[np.ndarray]]:
            count = 1 + max((int(k[len(prefix):].split("_")[0]) for k in keys if k.startswith(prefix)), default=-1)
            return [[z[k] for k in sorted((k for k in keys if k.startswith(f"{prefix}{i}_")),
                                         key=lambda k: int(k.rsplit("_", 1)[1]))] for i in range(count)]
        return group("in"), group("out")


def run_case(fn: Any, types: Any, pipeline_def: Callable[..., Any], case: Case, **pipe_kw: Any) -> list[list[np.ndarray]]:
    """Run ``case`` with the given ``fn`` namespace; per output, the samples as numpy arrays."""

    @pipeline_def(batch_size=case.size, num_threads=1, seed=1234, **pipe_kw)
    def pipe():  # type: ignore[no-untyped-def]
        nodes = [fn.external_source(source=[list(samples)], batch=True, cycle=False) for samples in case.inputs]
        out = case.build(fn, types, *nodes)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    p = pipe()
    if hasattr(p, "build"):
        p.build()
    return [[np.array(t.at(i)) for i in range(case.size)] for t in p.run()]


def replay(name: str, fn: Any, types: Any, pipeline_def: Callable[..., Any]) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
    """Run the recorded case ``name`` on its recorded inputs with ``fn``: (outputs, DALI's outputs)."""
    inputs, want = load(name)
    case = CASES[name]
    return run_case(fn, types, pipeline_def, Case(case.build, inputs, case.batch_size)), want


def assert_equal_outputs(got: list[list[np.ndarray]], want: list[list[np.ndarray]]) -> None:
    """``got`` is ``want`` exactly: as many outputs and samples, each with the same dtype, shape and values."""
    assert len(got) == len(want), f"{len(got)} outputs, DALI {len(want)}"
    for out, (g_samples, w_samples) in enumerate(zip(got, want)):
        assert len(g_samples) == len(w_samples), f"output {out}: {len(g_samples)} samples, DALI {len(w_samples)}"
        for i, (g, w) in enumerate(zip(g_samples, w_samples)):
            what = f"output {out}, sample {i}"
            assert g.dtype == w.dtype and g.shape == w.shape, f"{what}: {g.dtype} {g.shape}, DALI {w.dtype} {w.shape}"
            np.testing.assert_array_equal(g, w, err_msg=what)


#: random_bbox_crop statistics: DALI's windows for one fixed set of boxes over many samples.
STATS_BOXES = np.array([[0.1, 0.1, 0.3, 0.4], [0.5, 0.5, 0.9, 0.8], [0.2, 0.6, 0.35, 0.95]], np.float32)
STATS_SAMPLES = 2000
STATS_CONFIGS = {
    "ssd": dict(aspect_ratio=[0.5, 2.0], thresholds=[0.0, 0.1, 0.3, 0.5, 0.7, 0.9], scaling=[0.3, 1.0],
                bbox_layout="xyXY", allow_no_crop=True, num_attempts=50),
    "overlap_any": dict(aspect_ratio=[0.75, 1.5], thresholds=[0.5], threshold_type="overlap", scaling=[0.2, 0.8],
                        all_boxes_above_threshold=False, allow_no_crop=False, num_attempts=10),
    "prune": dict(thresholds=[0.0], scaling=[0.3, 0.6], aspect_ratio=[0.5, 2.0], allow_no_crop=False,
                  bbox_prune_threshold=0.5),
}


def random_bbox_crop_stats(fn: Any, pipeline_def: Callable[..., Any], config: str, samples: int = STATS_SAMPLES,
                           **pipe_kw: Any) -> dict[str, np.ndarray]:
    """Windows and kept-box counts of ``samples`` draws for ``STATS_BOXES``."""
    batch = 500
    labels = np.arange(1, len(STATS_BOXES) + 1, dtype=np.int32)

    @pipeline_def(batch_size=batch, num_threads=1, seed=99, **pipe_kw)
    def pipe():  # type: ignore[no-untyped-def]
        b = fn.external_source(source=lambda: [STATS_BOXES] * batch, batch=True)
        lab = fn.external_source(source=lambda: [labels] * batch, batch=True)
        anchor, shape, boxes, _ = fn.random_bbox_crop(b, lab, **STATS_CONFIGS[config])
        return anchor, shape, fn.shapes(boxes)

    p = pipe()
    if hasattr(p, "build"):
        p.build()
    anchors, shapes, counts = [], [], []
    for _ in range(samples // batch):
        a, sh, c = p.run()
        anchors += [np.array(a.at(i)) for i in range(batch)]
        shapes += [np.array(sh.at(i)) for i in range(batch)]
        counts += [int(np.array(c.at(i))[0]) for i in range(batch)]
    return {"anchor": np.array(anchors), "shape": np.array(shapes), "count": np.array(counts)}


#: Folders of DALI's ``save_preprocessed_annotations`` files: name -> readers.coco arguments.
PREPROCESSED = {
    "preprocessed_polygons": dict(annotations=COCO_ANNOTATIONS, polygon_masks=True, image_ids=True, ratio=True,
                                  ltrb=True),
    "preprocessed_pixelwise": dict(annotations=COCO_CROWD, pixelwise_masks=True, images=[
        "jpeg-quirks/flower2.jpg", "jpeg-quirks/hopper.jpg", "photos/rocket.jpg"]),
}


def _record_preprocessed(fn: Any, pipeline_def: Callable[..., Any]) -> None:
    import shutil

    for folder, kw in PREPROCESSED.items():
        kw = dict(kw)
        annotations = kw.pop("annotations")
        target = OUT / folder
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)

        @pipeline_def(batch_size=1, num_threads=1, device_id=None)
        def pipe():  # type: ignore[no-untyped-def]
            return coco(fn, annotations, save_preprocessed_annotations=True,
                        save_preprocessed_annotations_dir=str(target), **kw)

        pipe().build()
        print(f"{folder}: {sorted(p.name for p in target.iterdir())}")


def main(names: list[str]) -> None:
    from nvidia.dali import fn, pipeline_def, types

    if not names or "preprocessed" in names:
        _record_preprocessed(fn, pipeline_def)
    if not names or "examples" in names:
        for name, outputs in (("example_ssd_fixed", ssd_fixed(fn, types, pipeline_def, True, device_id=None)),
                              ("example_mask_rcnn_fixed", mask_rcnn_fixed(fn, types, pipeline_def, device_id=None))):
            _save(name, Case(lambda *a: None), outputs)
            print(f"{name}: {len(outputs)} outputs")
    if not names or "stats" in names:
        for config in STATS_CONFIGS:
            np.savez_compressed(OUT / f"random_bbox_crop_stats_{config}.npz",
                                **random_bbox_crop_stats(fn, pipeline_def, config, device_id=None))
            print(f"random_bbox_crop_stats_{config}: {STATS_SAMPLES} windows")

    for name, case in CASES.items():
        if names and name not in names:
            continue
        outputs = run_case(fn, types, pipeline_def, case, device_id=None)
        _save(name, case, outputs)
        print(f"{name}: {len(outputs)} outputs x {case.size} samples")


if __name__ == "__main__":
    main(sys.argv[1:])
