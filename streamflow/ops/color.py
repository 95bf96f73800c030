"""Color adjustments: ``color_twist`` (and ``hue``, ``saturation``, ``hsv``) and
``brightness_contrast`` (and ``brightness``, ``contrast``). CPU paths: numpy for the
color twists, a C kernel (``_native/filters.c: linear``) for brightness/contrast.

``color_twist`` follows DALI 2.4 exactly: one 3x3 matrix per sample, composed
in float32 as ``brightness * contrast * YIQ->RGB * hue * saturation * value *
RGB->YIQ`` (the hue matrix rotates I/Q by ``hue`` degrees, the saturation
matrix scales I/Q, ``value`` scales all of Y/I/Q), plus the offset
``(half - half * contrast) * brightness`` where ``half`` is 128 for integer
inputs and 0.5 for float inputs. Pixels are computed in float32 as
``M @ rgb + offset``; integer outputs are rounded half away from zero and
clipped to the type's range, float outputs are neither.

Measured against DALI 2.4.0 CPU (``nvidia-dali-cuda130``, ``device_id=None``)
on the four demo photos (``streamflow/demo/images``: 300x451, 400x600,
872x1000, 427x640; 4.56 M values per argument set) with 12 ``color_twist`` argument sets
(identity; hue 30, -90, 180; saturation 0, 0.5, 1.7; brightness 0.6, 1.4;
contrast 0.5, 1.5; all four combined), by a script outside the test suite
that saves DALI's outputs and compares them with these functions:

* ``color_twist`` uint8 -> uint8: max |diff| 1, on 0.27 % of the values,
  every one of them where the exact value is within 1e-3 of a rounding tie
  (147218 of them from contrast 1.5, where ``1.5 * p - 64`` is exactly k.5
  for odd p and float32 noise decides); identity, brightness: bit-identical.
  uint8 -> float32 (``dtype=FLOAT``): max |diff| 9.2e-5 (a few float32 ulps
  at 255); float32 -> float32: max |diff| 3.3e-7. ``hue``, ``saturation``,
  ``hsv``: max 1, 14 of 13.7 M values.
* ``brightness_contrast`` (4 argument sets, uint8 and ``dtype=FLOAT``
  outputs): bit-identical, 0 of 18.2 M values differ.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._native import filters as native_filters
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import (
    DataType,
    Device,
    Number,
)
from .arguments import fn_function
from .cast import parse_output_dtype
from .sequence import add_frames_node, frame_layout

__all__ = ["BrightnessContrast", "ColorOp", "ColorTwist", "RGB2YIQ", "YIQ2RGB", "apply_linear", "brightness", "brightness_contrast", "contrast", "color_twist", "convert_to", "hsv", "hue", "saturation", "twist_matrix"]


F32 = np.float32


# DALI's RGB->YIQ matrix (dali/operators/image/color/color_twist.h). DALI 2.4
# goes back with the exact inverse (measured: a float32 RGB twist with
# saturation=0 gives the rows of inv(RGB2YIQ) @ diag(1, 0, 0) @ RGB2YIQ), so the
# identity twist is the identity; older DALI used a rounded inverse.
RGB2YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]], dtype=F32)


YIQ2RGB = np.linalg.inv(RGB2YIQ.astype(np.float64)).astype(F32)


_INT_KINDS = ("u", "i")


_SUPPORTED = (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float16, np.float32, np.float64)


def _check_dtype(dtype: Any, what: str) -> np.dtype | None:
    return None if dtype is None else parse_output_dtype(dtype, what, _SUPPORTED)


def _float_arg(value: Any, what: str) -> float:
    try:
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"{what} must be a number, got {value!r}") from None
    if arr.size != 1 or not math.isfinite(float(arr[0])):
        raise PipelineDefinitionError(f"{what} must be one finite number, got {value!r}")
    return float(arr[0])


def convert_to(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """DALI's ``ConvertSat``: integers round half away from zero and clip; floats cast."""
    dtype = np.dtype(dtype)
    if dtype.kind in _INT_KINDS:
        v = np.asarray(values, dtype=np.float64)
        info = np.iinfo(dtype)
        v = np.trunc(v + np.copysign(0.5, v))
        return np.clip(v, info.min, info.max).astype(dtype)
    return np.asarray(values).astype(dtype, copy=False)


def _hue_mat(hue: float) -> np.ndarray:
    h = F32(hue * math.pi / 180.0)
    c, s = np.cos(h, dtype=F32), np.sin(h, dtype=F32)
    return np.array([[1, 0, 0], [0, c, s], [0, -s, c]], dtype=F32)


def twist_matrix(
    *, brightness: float = 1.0, contrast: float = 1.0, saturation: float = 1.0, hue: float = 0.0,
    value: float = 1.0, half_range: float = 128.0,
) -> tuple[np.ndarray, np.float32]:
    """The float32 3x3 matrix and scalar offset of one color twist (DALI's order)."""
    m = np.eye(3, dtype=F32) * F32(brightness)
    m = m @ (np.eye(3, dtype=F32) * F32(contrast))
    m = m @ YIQ2RGB
    m = m @ _hue_mat(hue)
    m = m @ np.diag(np.array([1.0, saturation, saturation], dtype=F32))
    m = m @ (np.eye(3, dtype=F32) * F32(value))
    m = (m @ RGB2YIQ).astype(F32)
    half = F32(half_range)
    offset = F32((half - half * F32(contrast)) * F32(brightness))
    return m, offset


def apply_linear(image: np.ndarray, matrix: np.ndarray, offset: float | np.floating, out_dtype: np.dtype,
                 out: np.ndarray | None = None) -> np.ndarray:
    """``out[..., i] = sum_j matrix[i, j] * image[..., j] + offset`` in float32, then ``convert_to``.

    The C kernel (``_native/filters.c: color_matrix``) does exactly these float32
    operations in one pass (into ``out`` when given: a row of the batch);
    numpy below for the types it does not take.
    """
    try:
        return native_filters.color_matrix(image, matrix, float(offset), out_dtype, out=out)
    except ValueError:
        pass
    x = image.astype(F32, copy=False)
    out = x[..., 0:1] * matrix[:, 0]
    out += x[..., 1:2] * matrix[:, 1]
    out += x[..., 2:3] * matrix[:, 2]
    out += F32(offset)
    return convert_to(out, out_dtype)


class ColorOp(Operator):
    """Shared helpers: per-sample float arguments and the input check."""

    keeps_channels = True

    def _arg(self, chunk: Chunk, name: str, row: int, default: float) -> float:
        return _float_arg(chunk.arg(name, row, default), f"{self.name}: {name}")

    def _check_image(self, image: Any, channels: int | None) -> np.ndarray:
        if not isinstance(image, np.ndarray):
            image = np.asarray(image)
        if image.dtype.type not in _SUPPORTED:
            raise SampleError(f"{self.name}: unsupported input type {image.dtype}; expected an integer or float image")
        if channels is not None and (image.ndim < 1 or image.shape[-1] != channels):
            raise SampleError(
                f"{self.name} expects channels-last images with {channels} channels (HWC), got shape {image.shape}"
            )
        return image

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, image in enumerate(chunk.inputs[0]):
            try:
                out.append(self.process(chunk, row, image))
            except (SampleError, PipelineDefinitionError, ValueError) as e:
                chunk.fail(row, e if isinstance(e, SampleError) else SampleError(str(e)))
                out.append(None)
        return [out]

    def process(self, chunk: Chunk, row: int, image: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def layout(self, index: int) -> str:
        return "HWC"


class ColorTwist(ColorOp):
    """``color_twist`` / ``hue`` / ``saturation`` / ``hsv``: one linear map in YIQ space.

    ``op_name`` picks the DALI name (and which arguments exist); all share the
    same matrix (see the module docstring).
    """

    ARGS: ClassVar[dict[str, tuple[str, ...]]] = {
        "color_twist": ("brightness", "contrast", "saturation", "hue"),
        "hsv": ("hue", "saturation", "value"),
        "hue": ("hue",),
        "saturation": ("saturation",),
    }
    DEFAULTS: ClassVar[dict[str, float]] = {"brightness": 1.0, "contrast": 1.0, "saturation": 1.0, "hue": 0.0, "value": 1.0}
    name = "color_twist"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, op_name: str = "color_twist", *, dtype: Any = None, name: str | None = None, **args: Any) -> None:
        super().__init__(name=name)
        if op_name not in self.ARGS:
            raise PipelineDefinitionError(f"unknown color operator {op_name!r}")
        self.name = op_name  # type: ignore[misc]
        self.per_sample_args = frozenset(self.ARGS[op_name])  # type: ignore[misc]
        unknown = set(args) - set(self.ARGS[op_name])
        if unknown:
            raise PipelineDefinitionError(f"{op_name}: unknown argument(s) {sorted(unknown)}")
        self.args = {k: _float_arg(args.get(k, self.DEFAULTS[k]), f"{op_name}: {k}") for k in self.ARGS[op_name]}
        self.out_dtype = _check_dtype(dtype, op_name)

    def twist_for(self, chunk: Chunk, row: int, in_dtype: np.dtype) -> tuple[np.ndarray, np.float32, np.dtype]:
        """The sample's float32 3x3 matrix, offset and output type (what the CPU and GPU apply)."""
        values = {k: self._arg(chunk, k, row, v) for k, v in self.args.items()}
        half = 0.5 if np.dtype(in_dtype).kind == "f" else 128.0
        matrix, offset = twist_matrix(half_range=half, **values)
        return matrix, offset, np.dtype(self.out_dtype or in_dtype)

    def process(self, chunk: Chunk, row: int, image: Any) -> np.ndarray:
        image = self._check_image(image, 3)
        matrix, offset, out_dtype = self.twist_for(chunk, row, image.dtype)
        return apply_linear(image, matrix, offset, out_dtype, out=chunk.output_buffer(row, image.shape, out_dtype))


def _full_range(dtype: np.dtype) -> float:
    return float(np.iinfo(dtype).max) if dtype.kind in _INT_KINDS else 1.0


def _half_range(dtype: np.dtype) -> float:
    if dtype.kind in _INT_KINDS:
        bits = 8 * dtype.itemsize - (1 if dtype.kind == "i" else 0) - 1
        return float(1 << bits)
    return 0.5


class BrightnessContrast(ColorOp):
    """``out = brightness_shift * full + brightness * (center + contrast * (in - center))``.

    ``full`` is the output type's maximum (255 for uint8, 1 for floats);
    ``center`` defaults to half the input type's range (128 for uint8, 0.5 for
    floats). Any shape works (the formula is per element), so the layout is
    the input's.

    ``op_name`` picks the DALI operator: ``brightness_contrast`` (every
    argument), ``brightness`` (``brightness``, ``brightness_shift``) or
    ``contrast`` (``contrast``, ``contrast_center``); the missing arguments keep
    their neutral values, which is exactly DALI's ``Brightness`` and
    ``Contrast`` (measured bit-identical, see the module docstring).
    """

    ARGS: ClassVar[dict[str, tuple[str, ...]]] = {
        "brightness_contrast": ("brightness", "brightness_shift", "contrast", "contrast_center"),
        "brightness": ("brightness", "brightness_shift"),
        "contrast": ("contrast", "contrast_center"),
    }
    name = "brightness_contrast"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"brightness", "brightness_shift", "contrast", "contrast_center"})

    def __init__(self, *, brightness: float = 1.0, brightness_shift: float = 0.0, contrast: float = 1.0,
                 contrast_center: float | None = None, dtype: Any = None, name: str | None = None,
                 op_name: str = "brightness_contrast", layout: str = "") -> None:
        super().__init__(name=name)
        if op_name not in self.ARGS:
            raise PipelineDefinitionError(f"unknown brightness/contrast operator {op_name!r}")
        self.name = op_name  # type: ignore[misc]
        self.per_sample_args = frozenset(self.ARGS[op_name])  # type: ignore[misc]
        self.brightness = _float_arg(brightness, f"{op_name}: brightness")
        self.brightness_shift = _float_arg(brightness_shift, f"{op_name}: brightness_shift")
        self.contrast = _float_arg(contrast, f"{op_name}: contrast")
        self.contrast_center = None if contrast_center is None else _float_arg(
            contrast_center, f"{op_name}: contrast_center")
        self.out_dtype = _check_dtype(dtype, op_name)
        self._layout = layout

    def coefficients(self, chunk: Chunk, row: int, in_dtype: np.dtype) -> tuple[np.float32, np.float32, np.dtype]:
        """The sample's float32 ``(multiplier, addend)`` and output type: ``out = in * multiplier + addend``."""
        out_dtype = self.out_dtype or in_dtype
        b = F32(self._arg(chunk, "brightness", row, self.brightness))
        shift = F32(self._arg(chunk, "brightness_shift", row, self.brightness_shift))
        c = F32(self._arg(chunk, "contrast", row, self.contrast))
        given = chunk.arg("contrast_center", row, self.contrast_center)
        center = F32(_half_range(in_dtype) if given is None else self._arg(chunk, "contrast_center", row, given))
        # DALI's rearrangement: out = addend + multiplier * in, in float32.
        addend = F32(shift * F32(_full_range(out_dtype)) + b * (center - c * center))
        return F32(b * c), addend, out_dtype

    def process(self, chunk: Chunk, row: int, image: Any) -> np.ndarray:
        image = self._check_image(image, None)
        multiplier, addend, out_dtype = self.coefficients(chunk, row, image.dtype)
        try:  # the C kernel: the same float32 arithmetic and conversion, one pass, GIL released
            return native_filters.linear(image, float(multiplier), float(addend), out_dtype,
                                         out=chunk.output_buffer(row, image.shape, out_dtype))
        except ValueError:  # types without a kernel (float16, float64, int64...)
            return convert_to(image.astype(F32, copy=False) * multiplier + addend, out_dtype)

    def layout(self, index: int) -> str:
        return self._layout

def _twist(op_name: str, data: DataNode, dtype: Any, device: str | Device | None, name: str | None, **args: Any) -> DataNode:
    constants, per_sample = split_arguments(args)
    op = ColorTwist(op_name, dtype=dtype, name=name, **constants)
    return add_frames_node(op, data, per_sample, device=device)


@fn_function()
def color_twist(
    data: DataNode,
    *,
    brightness: Number | DataNode = 1.0,
    contrast: Number | DataNode = 1.0,
    saturation: Number | DataNode = 1.0,
    hue: Number | DataNode = 0.0,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
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


@fn_function()
def hue(
    data: DataNode, *, hue: Number | DataNode = 0.0, dtype: DataType | str | None = None,
    device: str | Device | None = None, name: str | None = None,
) -> DataNode:
    """Rotate the hue of RGB images by ``hue`` degrees (``color_twist`` with only ``hue``)."""
    return _twist("hue", data, dtype, device, name, hue=hue)


@fn_function()
def saturation(
    data: DataNode, *, saturation: Number | DataNode = 1.0, dtype: DataType | str | None = None,
    device: str | Device | None = None, name: str | None = None,
) -> DataNode:
    """Scale the saturation of RGB images: 0 = grayscale, 1 = unchanged."""
    return _twist("saturation", data, dtype, device, name, saturation=saturation)


@fn_function()
def hsv(
    data: DataNode,
    *,
    hue: Number | DataNode = 0.0,
    saturation: Number | DataNode = 1.0,
    value: Number | DataNode = 1.0,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Hue rotation (degrees), saturation and value scaling of RGB images (value acts as brightness)."""
    return _twist("hsv", data, dtype, device, name, hue=hue, saturation=saturation, value=value)


def _brightness_contrast(op_name: str, data: DataNode, dtype: Any, device: str | Device | None,
                         name: str | None, **args: Any) -> DataNode:
    constants, per_sample = split_arguments(args)
    layout = frame_layout(input_layout(data, op_name))  # a sequence runs frame by frame
    op = BrightnessContrast(op_name=op_name, dtype=dtype, name=name, layout=layout, **constants)
    return add_frames_node(op, data, per_sample, device=device)


@fn_function()
def brightness_contrast(
    data: DataNode,
    *,
    brightness: Number | DataNode = 1.0,
    brightness_shift: Number | DataNode = 0.0,
    contrast: Number | DataNode = 1.0,
    contrast_center: Number | DataNode | None = None,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """``out = brightness_shift * max + brightness * (center + contrast * (in - center))``.

    Args:
        brightness: multiplier.
        brightness_shift: added, as a fraction of the output type's maximum
            (255 for uint8, 1 for floats).
        contrast: stretch around ``contrast_center``.
        contrast_center: default half the input type's range (128 for uint8,
            0.5 for floats); may be per sample.
        dtype: output type (default: the input's).
    """
    return _brightness_contrast("brightness_contrast", data, dtype, device, name, brightness=brightness,
                                brightness_shift=brightness_shift, contrast=contrast, contrast_center=contrast_center)


@fn_function()
def brightness(
    data: DataNode,
    *,
    brightness: Number | DataNode = 1.0,
    brightness_shift: Number | DataNode = 0.0,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """``out = brightness_shift * max + brightness * in`` (DALI's ``fn.brightness``).

    Args:
        brightness: multiplier.
        brightness_shift: added, as a fraction of the output type's maximum
            (255 for uint8, 32767 for int16, 1 for floats).
        dtype: output type (default: the input's); integers are rounded half
            away from zero and clipped.
    """
    return _brightness_contrast("brightness", data, dtype, device, name,
                                brightness=brightness, brightness_shift=brightness_shift)


@fn_function()
def contrast(
    data: DataNode,
    *,
    contrast: Number | DataNode = 1.0,
    contrast_center: Number | DataNode | None = None,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """``out = center + contrast * (in - center)`` (DALI's ``fn.contrast``).

    Args:
        contrast: multiplier; 0 gives a flat image of value ``center``.
        contrast_center: the value contrast leaves unchanged; default half the
            input type's range (128 for uint8, 0.5 for floats); may be per sample.
        dtype: output type (default: the input's); integers are rounded half
            away from zero and clipped.
    """
    return _brightness_contrast("contrast", data, dtype, device, name,
                                contrast=contrast, contrast_center=contrast_center)
