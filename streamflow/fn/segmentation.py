"""``fn.segmentation``: polygon masks and label maps (``streamflow/ops/segmentation/``)."""

from ..ops.segmentation.random_mask_pixel import random_mask_pixel
from ..ops.segmentation.random_object_bbox import random_object_bbox
from ..ops.segmentation.select_masks import select_masks

__all__ = ["random_mask_pixel", "random_object_bbox", "select_masks"]
