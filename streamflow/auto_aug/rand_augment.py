"""RandAugment (https://arxiv.org/abs/1909.13719): ``n`` random operations of strength ``m`` per sample.

As DALI's ``auto_aug.rand_augment``: per sample, ``n`` operations are drawn
uniformly (with repetition) from the suite and applied in sequence, each with
magnitude bin ``m`` of ``num_magnitude_bins`` and, for the signed ones, a
random sign. Each sample computes only its own operations.
"""

from __future__ import annotations

import warnings
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

__all__ = ["apply_rand_augment", "get_rand_augment_non_monotonic_suite", "get_rand_augment_suite", "rand_augment"]


def rand_augment(data: DataNode, n: int, m: int, num_magnitude_bins: int = 31, shape: DataNode | Sequence[int] | None = None,
                 fill_value: int | None = 128, interp_type: Any = None, max_translate_abs: Any = None,
                 max_translate_rel: Any = None, seed: int | None = None, monotonic_mag: bool = True,
                 excluded: Sequence[str] | None = None) -> DataNode:
    """Apply RandAugment to uint8 HWC images (or FHWC videos).

    Args:
        data: the images.
        n: operations per sample.
        m: magnitude bin of every operation, in ``[0, num_magnitude_bins)``.
        num_magnitude_bins: bins of the magnitude ranges.
        shape: the images' (H, W, ...) shape: translations then move by up to
            ``max_translate_rel`` of the size (default 100/224), otherwise by up
            to ``max_translate_abs`` pixels (default 100).
        fill_value: padding of the warps (None repeats the border).
        interp_type: interpolation of the warps (default linear).
        seed: seed of the random choices (default: from the pipeline's seed).
        monotonic_mag: False uses AutoAugment's ranges for the color operations
            (``get_rand_augment_non_monotonic_suite``).
        excluded: names of suite operations to leave out.
    """
    make = get_rand_augment_suite if monotonic_mag else get_rand_augment_non_monotonic_suite
    chosen = without(make(shape is not None, max_translate_abs, max_translate_rel), excluded, "rand_augment")
    return apply_rand_augment(chosen, data, n, m, num_magnitude_bins=num_magnitude_bins, seed=seed,
                              **suite_kwargs(shape, fill_value, interp_type))


def apply_rand_augment(augmentations: Sequence[Augmentation], data: DataNode, n: int, m: int,
                       num_magnitude_bins: int = 31, seed: int | None = None, **kwargs: Any) -> DataNode:
    """Apply ``n`` operations drawn per sample from ``augmentations``, all with magnitude bin ``m``.

    ``kwargs`` go to the augmentations that take them (``fill_value``,
    ``interp_type``, ``shape``); one that none takes is an error.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise PipelineDefinitionError(f"rand_augment: n must be a non-negative integer, got {n!r}")
    if isinstance(num_magnitude_bins, bool) or not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
        raise PipelineDefinitionError(f"rand_augment: num_magnitude_bins must be a positive integer, got {num_magnitude_bins!r}")
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m < num_magnitude_bins:
        raise PipelineDefinitionError(f"rand_augment: m must be an integer in [0, {num_magnitude_bins - 1}], got {m!r}")
    if n == 0:
        warnings.warn("apply_rand_augment with n=0 applies no augmentation", stacklevel=2)
        return data
    if not augmentations:
        raise PipelineDefinitionError("rand_augment: the list of augmentations is empty")
    forbid_unused_kwargs(augmentations, kwargs, "apply_rand_augment")
    shape = None if n == 1 else (n,)
    op_index = uniform(values=list(range(len(augmentations))), dtype="int32", seed=sub_seed(seed, 0), shape=shape)
    signed = any(x.randomly_negate for x in augmentations)
    magnitude = signed_bin(m, seed=sub_seed(seed, 1), shape=shape) if signed else m
    for level in range(n):
        level_bin = magnitude[level] if signed and n > 1 else magnitude  # type: ignore[index]
        level_op = op_index if n == 1 else op_index[level]
        data = pretty_select(augmentations, level_op,
                             dict(data=data, magnitude_bin=level_bin, num_magnitude_bins=num_magnitude_bins, **kwargs),
                             "rand_augment", "get_rand_augment_suite")
    return data


def get_rand_augment_suite(use_shape: bool = False, max_translate_abs: Any = None,
                           max_translate_rel: Any = None) -> list[Augmentation]:
    """RandAugment's 14 operations: magnitudes grow with the bin."""
    return get_translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.contrast.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.color.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.sharpness.augmentation((0, 0.9), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),  # a lower threshold solarizes more
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]


def get_rand_augment_non_monotonic_suite(use_shape: bool = False, max_translate_abs: Any = None,
                                         max_translate_rel: Any = None) -> list[Augmentation]:
    """The same operations with AutoAugment's ranges for the color ones (strength not monotonic in the bin)."""
    return get_translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0.1, 1.9), False, None),
        a.contrast.augmentation((0.1, 1.9), False, None),
        a.color.augmentation((0.1, 1.9), False, None),
        a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
        a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((0, 256), False, None),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
