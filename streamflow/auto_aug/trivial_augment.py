"""TrivialAugment Wide (https://arxiv.org/abs/2103.10158): one random operation of random strength per sample.

As DALI's ``auto_aug.trivial_augment``: per sample, one operation of the
14-operation wide suite and one magnitude bin, both uniform (and a random
sign for the signed operations). Each sample computes only its operation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import PipelineDefinitionError
from ..graph import DataNode
from ..ops.random import uniform
from . import augmentations as a
from .core import (
    Augmentation,
    forbid_unused_kwargs,
    pretty_select,
    signed_bin,
    suite_kwargs,
    without,
)
from .seeds import sub_seed
from .translations import get_translations

__all__ = ["apply_trivial_augment", "get_trivial_augment_wide_suite", "trivial_augment_wide"]


def trivial_augment_wide(data: DataNode, num_magnitude_bins: int = 31, shape: DataNode | Sequence[int] | None = None,
                         fill_value: int | None = 128, interp_type: Any = None, max_translate_abs: Any = None,
                         max_translate_rel: Any = None, seed: int | None = None,
                         excluded: Sequence[str] | None = None) -> DataNode:
    """Apply TrivialAugment Wide to uint8 HWC images (or FHWC videos).

    Args:
        num_magnitude_bins: bins of the magnitude ranges (the bin is drawn per sample).
        shape: the images' (H, W, ...) shape: translations then move by up to
            ``max_translate_rel`` of the size (default 1), otherwise by up to
            ``max_translate_abs`` pixels (default 32).
        fill_value, interp_type: padding and interpolation of the warps.
        seed: seed of the random choices.
        excluded: names of suite operations to leave out.
    """
    suite = get_trivial_augment_wide_suite(shape is not None, max_translate_abs, max_translate_rel)
    chosen = without(suite, excluded, "trivial_augment_wide")
    return apply_trivial_augment(chosen, data, num_magnitude_bins=num_magnitude_bins, seed=seed,
                                 **suite_kwargs(shape, fill_value, interp_type))


def apply_trivial_augment(augmentations: Sequence[Augmentation], data: DataNode, num_magnitude_bins: int = 31,
                          seed: int | None = None, **kwargs: Any) -> DataNode:
    """Apply one operation of ``augmentations`` per sample, with a random magnitude bin."""
    if isinstance(num_magnitude_bins, bool) or not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
        raise PipelineDefinitionError(
            f"trivial_augment: num_magnitude_bins must be a positive integer, got {num_magnitude_bins!r}")
    if not augmentations:
        raise PipelineDefinitionError("trivial_augment: the list of augmentations is empty")
    forbid_unused_kwargs(augmentations, kwargs, "apply_trivial_augment")
    magnitude: Any = uniform(values=list(range(num_magnitude_bins)), dtype="int32", seed=sub_seed(seed, 0))
    if any(x.randomly_negate for x in augmentations):
        magnitude = signed_bin(magnitude, seed=sub_seed(seed, 1))
    op_index = uniform(values=list(range(len(augmentations))), dtype="int32", seed=sub_seed(seed, 2))
    return pretty_select(augmentations, op_index,
                         dict(data=data, magnitude_bin=magnitude, num_magnitude_bins=num_magnitude_bins, **kwargs),
                         "trivial_augment_wide", "get_trivial_augment_wide_suite")


def get_trivial_augment_wide_suite(use_shape: bool = False, max_translate_abs: Any = None,
                                   max_translate_rel: Any = None) -> list[Augmentation]:
    """The wide augmentation space: 14 operations with TrivialAugment's wide ranges."""
    return get_translations(use_shape, 32, 1.0, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.99), True),
        a.shear_y.augmentation((0, 0.99), True),
        a.rotate.augmentation((0, 135), True),
        a.brightness.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.contrast.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.color.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.sharpness.augmentation((0.01, 0.99), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 2), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
