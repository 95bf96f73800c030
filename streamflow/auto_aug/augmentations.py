"""The augmentations of AutoAugment, RandAugment and TrivialAugment, as DALI's ``auto_aug.augmentations`` defines them.

Same names, default magnitude ranges, signs and parameter mappings as DALI
2.4 (checked against tables recorded from DALI's module), written with
streamflow's operators. Each takes uint8 HWC images (or FHWC sequences) and
is an ``Augmentation``: call it with ``magnitude_bin`` and
``num_magnitude_bins``, or change its setup with ``.augmentation(...)``
(``shear_x.augmentation(mag_range=(0, 0.5))``).

=====================  ====================  ========  ====================================
name                   magnitudes            negated   parameter (mag_to_param)
=====================  ====================  ========  ====================================
shear_x, shear_y       0 .. 0.3              yes       shear ``[m, 0]`` / ``[0, m]``
translate_x, _y        0 .. 1 (of the size)  yes       offset ``[m, 0]`` / ``[0, m]`` * shape
translate_x/_y         0 .. 250 pixels       yes       (``*_no_shape``: offset in pixels)
rotate                 0 .. 30 degrees       yes       angle
brightness, contrast,  0 .. 0.9              yes       ``1 + m``
color
sharpness              0 .. 0.9              yes       3x3 kernel blending a blur and identity
posterize              0 .. 4 bits           no        mask keeping ``8 - round(m)`` bits
solarize               256 .. 0              no        threshold
solarize_add           0 .. 110              no        uint8 shift (for pixels < 128)
invert, equalize,      --                    --        --
auto_contrast,
identity
=====================  ====================  ========  ====================================

The warping augmentations (shear, translate, rotate) take ``fill_value``
(default 128; ``None`` repeats the border) and ``interp_type`` (default
linear); rotations keep the image size (``rotate_keep_size``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import DataNode
from ..ops.cast import cast
from ..ops.color import brightness as _brightness
from ..ops.color import saturation as _saturation
from ..ops.equalize import equalize as _equalize
from ..ops.filter import filter as _filter
from ..ops.reductions import max as _max
from ..ops.reductions import mean as _mean
from ..ops.reductions import min as _min
from ..ops.reductions import sum as _sum
from ..ops.rotate import rotate as _rotate
from ..ops.warp_affine import warp_affine
from .core import augmentation

__all__ = [
    "auto_contrast", "brightness", "color", "contrast", "equalize", "identity", "invert", "posterize",
    "poster_mask_uint8", "rotate", "sharpness", "sharpness_kernel", "sharpness_kernel_shifted", "shear_x",
    "shear_y", "shift_enhance_range", "solarize", "solarize_add", "solarize_add_shift", "translate_x",
    "translate_x_no_shape", "translate_y", "translate_y_no_shape", "warp_x_param", "warp_y_param",
]

F32 = np.float32
_U8_255 = np.uint8(255)
# H, W and C of HWC images and FHWC videos alike (DALI names them; the layout may be unknown here)
_HW, _C = (-3, -2), -1


# --- magnitude -> parameter ------------------------------------------------------------------
def warp_x_param(magnitude: float) -> list[float]:
    """The x component of a 2-D shear or offset: ``[m, 0]``."""
    return [magnitude, 0]


def warp_y_param(magnitude: float) -> list[float]:
    """The y component: ``[0, m]``."""
    return [0, magnitude]


def shift_enhance_range(magnitude: float) -> float:
    """Enhancement factors are neutral at 1: magnitudes in [0, 1] (negated at random) become ``1 + m``."""
    return 1 + magnitude


def sharpness_kernel(magnitude: float) -> np.ndarray:
    """3x3 kernel ``(1 + m) * identity - m * blur`` (PIL's smoothing blur, 5 in the middle, /13); m in [-1, 1]."""
    blur = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=F32) / 13
    identity = np.zeros((3, 3), dtype=F32)
    identity[1, 1] = 1
    return -magnitude * blur + (1 + magnitude) * identity


def sharpness_kernel_shifted(magnitude: float) -> np.ndarray:
    """``sharpness_kernel`` for magnitudes in [0, 2] (1 is neutral)."""
    return sharpness_kernel(magnitude - 1)


def poster_mask_uint8(magnitude: float) -> np.ndarray:
    """The uint8 AND mask keeping the ``8 - round(m)`` high bits; ``round(m)`` clamped to [1, 8] (never all)."""
    bits = int(np.round(magnitude))
    bits = min(max(bits, 1), 8)  # 0 would blank the image: the reference implementations use 1
    removed = (1 << (8 - bits)) - 1
    return np.array(0xFF ^ removed, dtype=np.uint8)


def solarize_add_shift(shift: float) -> np.uint8:
    """The uint8 shift of ``solarize_add`` (below 128, so shifted pixels stay below 256)."""
    if shift >= 128:
        raise ValueError(f"solarize_add takes shifts from 0 to 127, got {shift}")
    return np.uint8(shift)


# --- helpers -----------------------------------------------------------------------------------
def _matrix(base: list[list[float]], *terms: tuple[Any, tuple[int, int]]) -> Any:
    """A 2x3 source-to-destination matrix ``base + sum(value * E[row, col])``; per sample when a value is data."""
    matrix: Any = np.array(base, dtype=F32)
    for value, (r, c) in terms:
        unit = np.zeros((2, 3), dtype=F32)
        unit[r, c] = 1
        matrix = matrix + value * unit
    return matrix if isinstance(matrix, DataNode) else np.asarray(matrix, dtype=F32)


def _warp(data: DataNode, matrix: Any, fill_value: Any, interp_type: Any) -> DataNode:
    kw: dict[str, Any] = {"matrix": matrix, "inverse_map": False, "fill_value": fill_value}
    if interp_type is not None:
        kw["interp_type"] = interp_type
    return warp_affine(data, **kw)


def _number(value: Any) -> Any:
    """A constant parameter (a 0-d array) as a Python number for an operator's argument; data unchanged."""
    return value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value


def _like_uint8(values: DataNode) -> DataNode:
    """Back to the images' type (the augmentations take uint8, as in DALI)."""
    return cast(values, dtype="uint8")


# --- the augmentations -----------------------------------------------------------------------------
@augmentation(mag_range=(0, 0.3), randomly_negate=True, mag_to_param=warp_x_param)
def shear_x(data: DataNode, shear: Any, fill_value: Any = 128, interp_type: Any = None) -> DataNode:
    """Shear along x: ``x' = x + s * y``."""
    return _warp(data, _matrix([[1, 0, 0], [0, 1, 0]], (shear[0], (0, 1)), (shear[1], (1, 0))), fill_value, interp_type)


@augmentation(mag_range=(0, 0.3), randomly_negate=True, mag_to_param=warp_y_param)
def shear_y(data: DataNode, shear: Any, fill_value: Any = 128, interp_type: Any = None) -> DataNode:
    """Shear along y: ``y' = y + s * x``."""
    return _warp(data, _matrix([[1, 0, 0], [0, 1, 0]], (shear[0], (0, 1)), (shear[1], (1, 0))), fill_value, interp_type)


def _translate(data: DataNode, offset: Any, fill_value: Any, interp_type: Any) -> DataNode:
    return _warp(data, _matrix([[1, 0, 0], [0, 1, 0]], (offset[0], (0, 2)), (offset[1], (1, 2))), fill_value, interp_type)


@augmentation(mag_range=(0.0, 1.0), randomly_negate=True, mag_to_param=warp_x_param)
def translate_x(data: DataNode, rel_offset: Any, shape: Any, fill_value: Any = 128, interp_type: Any = None) -> DataNode:
    """Shift along x by a fraction of the width (``shape``: the images' (H, W, ...) shape)."""
    return _translate(data, rel_offset * shape[1], fill_value, interp_type)


@augmentation(mag_range=(0, 250), randomly_negate=True, mag_to_param=warp_x_param, name="translate_x")
def translate_x_no_shape(data: DataNode, offset: Any, fill_value: Any = 128, interp_type: Any = None) -> DataNode:
    """Shift along x by ``offset`` pixels."""
    return _translate(data, offset, fill_value, interp_type)


@augmentation(mag_range=(0.0, 1.0), randomly_negate=True, mag_to_param=warp_y_param)
def translate_y(data: DataNode, rel_offset: Any, shape: Any, fill_value: Any = 128, interp_type: Any = None) -> DataNode:
    """Shift along y by a fraction of the height."""
    return _translate(data, rel_offset * shape[0], fill_value, interp_type)


@augmentation(mag_range=(0, 250), randomly_negate=True, mag_to_param=warp_y_param, name="translate_y")
def translate_y_no_shape(data: DataNode, offset: Any, fill_value: Any = 128, interp_type: Any = None) -> DataNode:
    """Shift along y by ``offset`` pixels."""
    return _translate(data, offset, fill_value, interp_type)


@augmentation(mag_range=(0, 30), randomly_negate=True)
def rotate(data: DataNode, angle: Any, fill_value: Any = 128, interp_type: Any = None,
           rotate_keep_size: bool = True) -> DataNode:
    """Rotate by ``angle`` degrees (counter-clockwise), keeping the size by default."""
    kw: dict[str, Any] = {"angle": _number(angle), "fill_value": fill_value, "keep_size": rotate_keep_size}
    if interp_type is not None:
        kw["interp_type"] = interp_type
    return _rotate(data, **kw)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def brightness(data: DataNode, parameter: Any) -> DataNode:
    """Multiply by ``1 + m``."""
    return _brightness(data, brightness=_number(parameter))


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def contrast(data: DataNode, parameter: Any) -> DataNode:
    """Stretch around the image's mean luma (PIL's ``ImageEnhance.Contrast`` centre)."""
    channel_means = _mean(data, axes=_HW, keep_dims=True)
    center = _sum(channel_means * np.array([0.299, 0.587, 0.114], dtype=F32), axes=_C, keep_dims=True)
    return _like_uint8(center + (data - center) * parameter)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def color(data: DataNode, parameter: Any) -> DataNode:
    """Scale the saturation by ``1 + m``."""
    return _saturation(data, saturation=_number(parameter))


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=sharpness_kernel)
def sharpness(data: DataNode, kernel: Any) -> DataNode:
    """Blend with a blur (PIL's ``ImageEnhance.Sharpness``, except the 1-pixel border)."""
    return _filter(data, kernel)


@augmentation(mag_range=(0, 4), mag_to_param=poster_mask_uint8)
def posterize(data: DataNode, mask: Any) -> DataNode:
    """Keep only the high bits of every value."""
    return data & mask


@augmentation(mag_range=(256, 0))
def solarize(data: DataNode, threshold: Any) -> DataNode:
    """Invert the values at or above ``threshold``."""
    keep = data < threshold
    return keep * data + (keep ^ True) * (_U8_255 - data)


@augmentation(mag_range=(0, 110), mag_to_param=solarize_add_shift)
def solarize_add(data: DataNode, shift: Any) -> DataNode:
    """Add ``shift`` to the values below 128."""
    shifted = data < np.uint8(128)
    return shifted * (data + shift) + (shifted ^ True) * data


@augmentation
def invert(data: DataNode, _: Any) -> DataNode:
    """``255 - x``."""
    return _U8_255 - data


@augmentation
def equalize(data: DataNode, _: Any) -> DataNode:
    """Histogram equalization per channel (OpenCV's formula; PIL's differs slightly)."""
    return _equalize(data)


@augmentation
def auto_contrast(data: DataNode, _: Any) -> DataNode:
    """Stretch each channel to the full 0..255 range (channels with one value are left alone)."""
    lo = _min(data, axes=_HW, keep_dims=True)
    hi = _max(data, axes=_HW, keep_dims=True)
    span = hi - lo
    stretch = span > 0
    divisor = span * stretch + _U8_255 * (stretch ^ True)  # 255 / divisor is 1 where nothing is stretched
    return _like_uint8((data - lo * stretch) * (255 / divisor))


@augmentation
def identity(data: DataNode, _: Any) -> DataNode:
    """The data unchanged."""
    return data
