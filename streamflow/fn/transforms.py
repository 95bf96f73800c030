"""``fn.transforms``: affine transform matrices for ``coord_transform`` and ``warp_affine`` (``streamflow/ops/transforms.py``)."""

from ..ops.transforms import combine, crop, rotation, scale, shear, translation

__all__ = ["combine", "crop", "rotation", "scale", "shear", "translation"]
