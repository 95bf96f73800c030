"""The operators: one module per operator (or per tight family), each holding
the ``fn`` function that adds it to a graph, the validation of its arguments
and its CPU implementation. Their GPU implementations live in
``streamflow/gpu/ops/`` under the same names.

    resize.py  crop.py  flip.py  crop_mirror_normalize.py  normalize.py  cast.py
    color.py (color_twist, hue, saturation, hsv, brightness_contrast)
    color_space_conversion.py  rotate.py  warp_affine.py  transpose.py
    random_resized_crop.py  random_crop_window.py (the window draw it shares)
    random.py (uniform, coin_flip, normal, choice)  external_source.py
    decoders/ (image, image_crop, image_random_crop, image_slice)
    readers/  (file, numpy, and list_source: what both share)
    resize_crop_mirror_normalize.py: the fused pair the planner makes
    slice.py  paste.py (paste, multi_paste)  resize_crop_mirror.py  roi_random_crop.py
    peek_image_shape.py  warp_perspective.py (experimental warp_perspective, remap)
    volume.py: the DHWC parts of resize, crop, rotate and warp_affine
    boxes.py (box layouts, IoU: shared)  bb_flip.py  bbox_paste.py  bbox_rotate.py  box_encoder.py
    random_bbox_crop.py  coord_flip.py  coord_transform.py  transforms.py (fn.transforms.*)
    one_hot.py  lookup_table.py  segmentation/ (select_masks, random_object_bbox, random_mask_pixel)
    readers/coco.py (coco_annotations.py, coco_masks.py)
    constant.py (constant, full, full_like, zeros, ones, *_like)  copy.py  cast_like.py  reinterpret.py
    get_property.py  batch_permutation.py  random_crop_generator.py  tensor_resize.py
    displacement.py (water, sphere, jitter)  debayer.py  clahe.py  opencv.py (their cv2)  morphology.py (dilate, erode)
    power_spectrum.py  dump_image.py  decoders/numpy.py  decoders/inflate.py  readers/sequence.py  readers/fits.py
"""

from typing import Any as _Any

#: Makes DALI's legacy operator classes (``ops.Resize(...)``): registered by ``streamflow.fn.legacy``.
_legacy_factory: _Any = None


def register_legacy_ops(factory: _Any) -> None:
    """Set what ``ops.<CamelCase>`` gives: ``factory(namespace, name)`` -> a class."""
    global _legacy_factory
    _legacy_factory = factory


def legacy_op(namespace: str, name: str) -> _Any:
    """DALI's legacy class API: ``ops.WarpAffine(**args)(images)`` is ``fn.warp_affine(images, **args)``."""
    if _legacy_factory is None or not name[:1].isupper():
        where = f"streamflow.ops.{namespace}" if namespace else "streamflow.ops"
        raise AttributeError(f"module {where!r} has no attribute {name!r}")
    return _legacy_factory(namespace, name)


def __getattr__(name: str) -> _Any:
    return legacy_op("", name)
