"""From a decoded image to the output DALI's decoders define: orientation,
channels (``output_type``) and element type (``dtype``).

Every decoder (nvImageCodec on the CPU or GPU, Pillow, tifffile) hands over a
``Native`` image: the samples as stored (HWC, their own dtype), what the
channels mean, and who decoded it. ``to_output`` turns it into DALI 2.4's
output, on numpy or cupy arrays alike (``xp``):

* ``dtype``: DALI's ``ConvertSatNorm``: integer samples are scaled from the
  full range of their type (or of their significant bits, e.g. 9-bit JPEG
  2000) to the full range of the output type, in float32, rounded half away
  from zero and saturated; floating point means [0, 1]. Checked against DALI
  2.4's outputs: uint8 -> uint16 is ``x * 257``, uint16 -> uint8
  ``round(x / 257)``, -> float ``x / 255`` (or ``x / 65535``).
* ``RGB`` / ``BGR``: alpha is dropped (not composited; as DALI and Pillow's
  ``convert("RGB")``), gray is replicated.
* ``GRAY``: ITU-R 601-2 luma ``0.299 R + 0.587 G + 0.114 B``; on 8- and
  16-bit samples Pillow's integer formula exactly.
* ``YCbCr``: DALI's ITU-R BT.601 studio range, computed on the samples
  normalized to [0, 1] (``rgb_to_ycbcr``; equal to DALI 2.4 on all but a
  few pixels of the corpus, which differ by 1).
* ``ANY_DATA``: the channels as stored (gray, gray+alpha, RGB, RGBA, CMYK, Lab).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..types import DataType, ImageType

__all__ = [
    "DTYPES",
    "Native",
    "convert_dtype",
    "crop",
    "orient",
    "rgb_to_gray",
    "rgb_to_ycbcr",
    "to_output",
]

#: The output types ``fn.decoders.image`` accepts (DALI 2.4's set).
DTYPES = (
    DataType.UINT8, DataType.UINT16, DataType.UINT32,
    DataType.INT8, DataType.INT16, DataType.INT32, DataType.FLOAT,
)

_KINDS = ("gray", "gray_alpha", "rgb", "rgba", "cmyk", "lab")


@dataclass(frozen=True)
class Native:
    """A decoded image as stored, before the output conversion.

    Attributes:
        array: HWC samples (numpy or cupy), any integer or float dtype.
        kind: what the channels are: ``gray gray_alpha rgb rgba cmyk lab``.
        decoder: who decoded it (``nvimgcodec``, ``nvimgcodec-gpu``, ``pillow``,
            ``tifffile``): counted in ``pipe.stats()``.
        bits: significant bits of integer samples when fewer than the dtype
            holds (9-bit JPEG 2000 in uint16); ``None``: the dtype's range.
        rgb: for ``cmyk`` and ``lab``: the image converted to 8-bit RGB by
            the decoder (Pillow), used for every output but ``ANY_DATA``.
    """

    array: Any
    kind: str
    decoder: str
    bits: int | None = None
    rgb: Any = None

    @staticmethod
    def from_channels(array: Any, decoder: str, bits: int | None = None) -> Native:
        """A gray / gray+alpha / RGB / RGBA image told apart by its channel count."""
        if array.ndim == 2:
            array = array[:, :, None]
        kind = {1: "gray", 2: "gray_alpha", 3: "rgb", 4: "rgba"}.get(array.shape[2])
        if kind is None:
            raise ValueError(f"a decoded image with {array.shape[2]} channels")
        return Native(array, kind, decoder, bits)


# ----------------------------------------------------------------------------
# Geometry
# ----------------------------------------------------------------------------


def orient(array: Any, orientation: int) -> Any:
    """Apply an EXIF orientation (1..8) to an HW[C] array (a view; numpy or cupy)."""
    if orientation == 2:
        return array[:, ::-1]
    if orientation == 3:
        return array[::-1, ::-1]
    if orientation == 4:
        return array[::-1]
    if orientation == 5:  # transpose
        return array.swapaxes(0, 1)
    if orientation == 6:  # rotate 90 degrees clockwise
        return array[::-1].swapaxes(0, 1)
    if orientation == 7:  # transverse
        return array[::-1, ::-1].swapaxes(0, 1)
    if orientation == 8:  # rotate 90 degrees counter-clockwise
        return array.swapaxes(0, 1)[::-1]
    return array


def crop(native: Native, region: tuple[int, int, int, int] | None) -> Native:
    """The window ``(y0, x0, y1, x1)`` (end exclusive) of an image; all of it for ``None``."""
    if region is None:
        return native
    y0, x0, y1, x1 = region
    rgb = None if native.rgb is None else native.rgb[y0:y1, x0:x1]
    return replace(native, array=native.array[y0:y1, x0:x1], rgb=rgb)


def _oriented(native: Native, orientation: int) -> Native:
    rgb = None if native.rgb is None else orient(native.rgb, orientation)
    return replace(native, array=orient(native.array, orientation), rgb=rgb)


# ----------------------------------------------------------------------------
# Element types (DALI's ConvertSatNorm)
# ----------------------------------------------------------------------------


def _max_of(dtype: np.dtype, bits: int | None) -> float:
    if dtype.kind == "f":
        return 1.0
    if dtype.kind == "b":
        return 1.0
    if bits is not None:
        return float((1 << bits) - 1)
    return float(np.iinfo(dtype).max)


def _round(x: Any, xp: Any) -> Any:
    """Round half away from zero (DALI's ConvertSat), in float64."""
    x = x.astype(xp.float64)
    return xp.copysign(xp.floor(xp.abs(x) + 0.5), x)


def convert_dtype(array: Any, dtype: np.dtype, xp: Any = np, bits: int | None = None) -> Any:
    """Samples scaled from their type's range (or ``bits``) to ``dtype``'s, as DALI does.

    Integer -> integer and float -> integer: ``round(x * out_max / in_max)``
    computed in float32, rounded half away from zero, saturated; -> float:
    ``x / in_max``. Floating-point inputs mean [0, 1].
    """
    dtype = np.dtype(dtype)
    src = np.dtype(array.dtype)
    if src == dtype and bits is None:
        return array
    in_max = _max_of(src, bits)
    if dtype.kind == "f":
        out = array.astype(xp.float32)
        return out if in_max == 1.0 else out * xp.float32(1.0 / in_max)
    info = np.iinfo(dtype)
    scale = info.max / in_max
    scaled = array.astype(xp.float32)
    if scale != 1.0:
        scaled = scaled * xp.float32(scale)
    # float64 for the bounds: float32(2**32 - 1) rounds up past uint32's range
    return xp.clip(_round(scaled, xp), info.min, info.max).astype(dtype)


# ----------------------------------------------------------------------------
# Colour
# ----------------------------------------------------------------------------

# DALI's decoders produce YCbCr in ITU-R BT.601 studio range (Y in 16..235,
# Cb/Cr in 16..240): the full-range BT.601 (JPEG) coefficients scaled by
# 219/255 and 224/255, on samples normalized to [0, 1], in float32, then
# ConvertSatNorm to the output type. Fitted to DALI 2.4's outputs on the
# corpus: equal on all but a few pixels (off by 1, float32 order of operations).
_YCBCR_M = np.array(
    [[0.299, 0.587, 0.114], [-0.16873589, -0.33126411, 0.5], [0.5, -0.41868759, -0.08131241]],
    dtype=np.float32,
)
_YCBCR_SCALE = np.array([219.0 / 255.0, 224.0 / 255.0, 224.0 / 255.0], dtype=np.float32)
_YCBCR_OFF = np.array([16.0 / 255.0, 128.0 / 255.0, 128.0 / 255.0], dtype=np.float32)


def _ycbcr_unit(unit: Any, xp: Any) -> Any:
    """YCbCr in [0, 1] (float32) from RGB in [0, 1] (float32)."""
    m = xp.asarray(_YCBCR_M)
    r, g, b = unit[..., 0], unit[..., 1], unit[..., 2]
    planes = [(r * m[k, 0] + g * m[k, 1] + b * m[k, 2]) * _YCBCR_SCALE[k] + _YCBCR_OFF[k] for k in range(3)]
    return xp.stack(planes, axis=-1)


def rgb_to_ycbcr(rgb: Any, xp: Any = np) -> Any:
    """HWC uint8 RGB -> HWC uint8 YCbCr (DALI's BT.601 studio range); numpy or cupy."""
    unit = rgb.astype(xp.float32) * xp.float32(1.0 / 255.0)
    return convert_dtype(_ycbcr_unit(unit, xp), np.dtype(np.uint8), xp)


def rgb_to_gray(rgb: Any, xp: Any = np) -> Any:
    """HW3 -> HW1 luma ``0.299 R + 0.587 G + 0.114 B``, in the input's dtype.

    Unsigned samples of up to 16 bits use Pillow's integer formula
    (``(19595 R + 38470 G + 7471 B + 32768) >> 16``), so 8-bit results equal
    Pillow's ``convert("L")``; other types are computed in float32.
    """
    dtype = np.dtype(rgb.dtype)
    if dtype.kind == "u" and dtype.itemsize <= 2:
        c = rgb.astype(xp.int64)
        y = (c[..., 0] * 19595 + c[..., 1] * 38470 + c[..., 2] * 7471 + 32768) >> 16
        return y.astype(dtype)[..., None]
    f = rgb.astype(xp.float32)
    y = f[..., 0] * 0.299 + f[..., 1] * 0.587 + f[..., 2] * 0.114
    if dtype.kind == "f":
        return y.astype(dtype)[..., None]
    info = np.iinfo(dtype)
    return xp.clip(xp.rint(y), info.min, info.max).astype(dtype)[..., None]


def _color(native: Native, xp: Any) -> tuple[Any, bool]:
    """(samples without alpha, is_gray) for a colour output."""
    if native.kind in ("cmyk", "lab"):
        return native.rgb, False
    arr = native.array
    if native.kind == "gray_alpha":
        return arr[..., :1], True
    if native.kind == "rgba":
        return arr[..., :3], False
    return arr, native.kind == "gray"


def to_output(
    native: Native,
    output_type: ImageType,
    dtype: DataType | np.dtype = DataType.UINT8,
    *,
    orientation: int = 1,
    region: tuple[int, int, int, int] | None = None,
    xp: Any = np,
) -> Any:
    """The decoder's output: ``native`` oriented, cropped to ``region`` (given in
    oriented coordinates), converted to ``output_type`` and ``dtype``; HWC."""
    out_dtype = dtype.numpy if isinstance(dtype, DataType) else np.dtype(dtype)
    if orientation != 1:
        native = _oriented(native, orientation)
    native = crop(native, region)
    if output_type is ImageType.ANY_DATA:
        return xp.ascontiguousarray(convert_dtype(native.array, out_dtype, xp, native.bits))
    arr, gray = _color(native, xp)
    bits = None if native.kind in ("cmyk", "lab") else native.bits
    if output_type is ImageType.GRAY:
        if not gray:
            arr = rgb_to_gray(arr, xp)
        return xp.ascontiguousarray(convert_dtype(arr, out_dtype, xp, bits))
    if output_type is ImageType.YCbCr:
        if gray:
            arr = xp.concatenate([arr] * 3, axis=2)
        unit = convert_dtype(arr, np.dtype(np.float32), xp, bits)
        if np.dtype(arr.dtype).kind == "f":
            unit = xp.clip(unit, 0.0, 1.0)
        return convert_dtype(_ycbcr_unit(unit, xp), out_dtype, xp)
    arr = convert_dtype(arr, out_dtype, xp, bits)
    if gray:
        arr = xp.concatenate([arr] * 3, axis=2)
    if output_type is ImageType.BGR:
        arr = arr[..., ::-1]
    return xp.ascontiguousarray(arr)
