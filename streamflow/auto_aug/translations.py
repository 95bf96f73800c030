"""The translations of a suite: bounded in pixels, or in fractions of the image shape (``use_shape``)."""

from __future__ import annotations

from typing import Any

from ..errors import PipelineDefinitionError
from . import augmentations as a
from .core import Augmentation

__all__ = ["get_translations", "max_translate_hw"]


def max_translate_hw(value: Any) -> tuple[Any, Any]:
    """``(height, width)`` limits from one value or a pair."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise PipelineDefinitionError(f"the translation limit must be one value or (height, width), got {value!r}")
        return value[0], value[1]
    return value, value


def get_translations(use_shape: bool, default_abs: float, default_rel: float, max_translate_abs: Any = None,
                     max_translate_rel: Any = None) -> list[Augmentation]:
    """``[translate_x, translate_y]`` with magnitudes up to the limits (DALI's rules for the two limits)."""
    if not isinstance(use_shape, bool):
        raise PipelineDefinitionError(f"use_shape must be True or False, got {use_shape!r}")
    if use_shape:
        if max_translate_abs is not None:
            raise PipelineDefinitionError("max_translate_abs cannot be used with image shapes; use max_translate_rel")
        height, width = max_translate_hw(default_rel if max_translate_rel is None else max_translate_rel)
        return [a.translate_x.augmentation((0, width), True), a.translate_y.augmentation((0, height), True)]
    if max_translate_rel is not None:
        raise PipelineDefinitionError("max_translate_rel needs image shapes (shape=...); use max_translate_abs")
    height, width = max_translate_hw(default_abs if max_translate_abs is None else max_translate_abs)
    return [a.translate_x_no_shape.augmentation((0, width), True), a.translate_y_no_shape.augmentation((0, height), True)]
