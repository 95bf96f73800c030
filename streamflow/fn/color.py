"""Color operators of ``fn``: color_twist, hue, saturation, hsv, brightness_contrast,
color_space_conversion.

Every scalar argument may be a constant or a per-sample ``DataNode``
(``hue=fn.random.uniform(range=[-30, 30])``). uint8 in gives uint8 out
(rounded half away from zero, clipped), float in gives float out, unless
``dtype`` says otherwise.
"""

from __future__ import annotations

from typing import Any

from ..graph import DataNode, add_node, split_arguments
from ..ops.color import BrightnessContrast, ColorSpaceConversion, ColorTwist
from ..types import DataType, Device, ImageType, parse_device

__all__ = ["brightness_contrast", "color_space_conversion", "color_twist", "hsv", "hue", "saturation"]

Number = float | int


def _twist(op_name: str, data: DataNode, dtype: Any, device: str | Device, name: str | None, **args: Any) -> DataNode:
    constants, per_sample = split_arguments(args)
    op = ColorTwist(op_name, dtype=dtype, name=name, **constants)
    op.device = parse_device(device)
    return add_node(op, [data], per_sample)[0]


def color_twist(
    data: DataNode,
    *,
    brightness: Number | DataNode = 1.0,
    contrast: Number | DataNode = 1.0,
    saturation: Number | DataNode = 1.0,
    hue: Number | DataNode = 0.0,
    dtype: DataType | str | None = None,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Adjust hue, saturation, brightness and contrast of RGB (HWC) images in one pass.

    The RGB pixel goes to YIQ, I/Q are rotated by ``hue`` degrees and scaled by
    ``saturation``, back to RGB, then ``((p - half) * contrast + half) * brightness``
    (``half`` = 128 for integer images, 0.5 for float ones), as in DALI.

    Args:
        brightness: multiplier of the result (0 = black).
        contrast: stretch around mid-gray (0 = flat gray).
        saturation: 0 = grayscale, 1 = unchanged.
        hue: rotation of the hue in degrees.
        dtype: output type (default: the input's).
    """
    return _twist("color_twist", data, dtype, device, name,
                  brightness=brightness, contrast=contrast, saturation=saturation, hue=hue)


def hue(
    data: DataNode, *, hue: Number | DataNode = 0.0, dtype: DataType | str | None = None,
    device: str | Device = "cpu", name: str | None = None,
) -> DataNode:
    """Rotate the hue of RGB images by ``hue`` degrees (``color_twist`` with only ``hue``)."""
    return _twist("hue", data, dtype, device, name, hue=hue)


def saturation(
    data: DataNode, *, saturation: Number | DataNode = 1.0, dtype: DataType | str | None = None,
    device: str | Device = "cpu", name: str | None = None,
) -> DataNode:
    """Scale the saturation of RGB images: 0 = grayscale, 1 = unchanged."""
    return _twist("saturation", data, dtype, device, name, saturation=saturation)


def hsv(
    data: DataNode,
    *,
    hue: Number | DataNode = 0.0,
    saturation: Number | DataNode = 1.0,
    value: Number | DataNode = 1.0,
    dtype: DataType | str | None = None,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Hue rotation (degrees), saturation and value scaling of RGB images (value acts as brightness)."""
    return _twist("hsv", data, dtype, device, name, hue=hue, saturation=saturation, value=value)


def brightness_contrast(
    data: DataNode,
    *,
    brightness: Number | DataNode = 1.0,
    brightness_shift: Number | DataNode = 0.0,
    contrast: Number | DataNode = 1.0,
    contrast_center: Number | None = None,
    dtype: DataType | str | None = None,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """``out = brightness_shift * max + brightness * (center + contrast * (in - center))``.

    Args:
        brightness: multiplier.
        brightness_shift: added, as a fraction of the output type's maximum
            (255 for uint8, 1 for floats).
        contrast: stretch around ``contrast_center``.
        contrast_center: default half the input type's range (128 for uint8,
            0.5 for floats).
        dtype: output type (default: the input's).
    """
    constants, per_sample = split_arguments(dict(brightness=brightness, brightness_shift=brightness_shift, contrast=contrast))
    op = BrightnessContrast(contrast_center=contrast_center, dtype=dtype, name=name, **constants)
    op.device = parse_device(device)
    return add_node(op, [data], per_sample)[0]


def color_space_conversion(
    data: DataNode,
    *,
    image_type: ImageType | str,
    output_type: ImageType | str,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Convert uint8 HWC images between RGB, BGR, GRAY (1 channel) and YCbCr (ITU-R BT.601)."""
    op = ColorSpaceConversion(image_type, output_type, name=name)
    op.device = parse_device(device)
    return add_node(op, [data], {})[0]
