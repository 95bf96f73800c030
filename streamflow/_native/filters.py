"""CPU kernels of the augmentation operators: separable sums (gaussian_blur, laplacian), 2-D
correlation (filter), median, and point operations (linear maps, histograms, lookup tables, grid_mask).

Thin, validating wrappers over the C extension ``streamflow._native._filters``
(see ``filters.c`` for the arithmetic). The C code releases the GIL, so the
engine's worker threads filter images in parallel.

Images are HWC (any channel count) or HW; the result has the input's shape
(``filter2d`` with ``valid=True``: smaller by the kernel size minus one).
Supported element types: uint8, int8, uint16, int16, uint32, int32, float32
in the kernels; float16, float64, int64 and uint64 are computed through
float32 and converted back here. Outputs are the input's type or float32.
Arithmetic is float32; integer outputs round half away from zero and saturate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .binding import load_extension, out_array, require_extension

_filters, _IMPORT_ERROR = load_extension("_filters")

__all__ = ["BORDERS", "KERNEL_DTYPES", "apply_luts", "color_matrix", "filter2d", "grid_mask", "histograms", "linear", "median",
           "separable"]

#: Border modes (DALI's names) and their codes in the C (and CUDA) kernels.
BORDERS = {"reflect_101": 0, "reflect_1001": 1, "wrap": 2, "clamp": 3, "constant": 4}
#: Element types the kernels read and write directly.
KERNEL_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.float32))
_VIA_F32 = tuple(np.dtype(t) for t in (np.float16, np.float64, np.int64, np.uint64))


def _native() -> Any:
    return require_extension(_filters, "_filters", _IMPORT_ERROR)


def _hwc(src: np.ndarray, what: str = "src") -> tuple[np.ndarray, bool]:
    if not isinstance(src, np.ndarray):
        raise ValueError(f"{what} must be a numpy array, got {type(src).__name__}")
    if src.ndim not in (2, 3):
        raise ValueError(f"{what} must be HWC (3-D) or HW (2-D), got shape {src.shape}")
    if 0 in src.shape:
        raise ValueError(f"{what} must not be empty, got shape {src.shape}")
    was_2d = src.ndim == 2
    if src.dtype in _VIA_F32:
        src = src.astype(np.float32)
    elif src.dtype not in KERNEL_DTYPES:
        names = ", ".join(d.name for d in KERNEL_DTYPES)
        raise ValueError(f"{what} has type {src.dtype}; expected one of {names}, float16, float64, int64 or uint64")
    if not src.dtype.isnative:
        src = src.astype(src.dtype.newbyteorder("="))
    src3 = src[:, :, None] if was_2d else src
    item = src3.dtype.itemsize
    if src3.strides[2] != item or src3.strides[1] != item * src3.shape[2] or src3.strides[0] < 0:
        src3 = np.ascontiguousarray(src3)
    return src3, was_2d


def _out_type(in_dtype: np.dtype, out_dtype: Any) -> tuple[np.dtype, np.dtype]:
    """(the type the kernel writes, the type returned)."""
    want = np.dtype(in_dtype if out_dtype is None else out_dtype)
    if want in _VIA_F32:
        return np.dtype(np.float32), want
    if want not in KERNEL_DTYPES:
        raise ValueError(f"unsupported output type {want}")
    return want, want


def _kernel(values: Any, what: str) -> np.ndarray:
    k = np.ascontiguousarray(np.asarray(values, dtype=np.float32))
    if k.size == 0 or not np.isfinite(k).all():
        raise ValueError(f"{what} must be non-empty and finite")
    return k


def _finish(out3: np.ndarray, was_2d: bool, final: np.dtype) -> np.ndarray:
    out = out3[:, :, 0] if was_2d else out3
    if out.dtype == final:
        return out
    if final.kind in "iu":  # 64-bit integers: round half away from zero, saturate (as the kernels do)
        info = np.iinfo(final)
        v = np.nan_to_num(out.astype(np.float64), nan=0.0)
        hi = np.nextafter(float(info.max), 0.0)  # 2**63 itself would overflow int64
        return np.clip(np.trunc(v + np.copysign(0.5, v)), float(info.min), hi).astype(final)
    return out.astype(final)


def _border_code(border: str) -> int:
    try:
        return BORDERS[border]
    except KeyError:
        raise ValueError(f"border must be one of {', '.join(BORDERS)}; got {border!r}") from None


def separable(src: np.ndarray, terms: Sequence[tuple[Any, Any, float]], *, border: str = "reflect_101",
              fill: float = 0.0, out_dtype: Any = None) -> np.ndarray:
    """``sum(scale * correlate(src, outer(ky, kx)))`` over ``terms``, each kernel centred (``len // 2``).

    Args:
        src: HWC or HW image.
        terms: 1 to 3 ``(ky, kx, scale)``: the vertical and horizontal windows
            (float32) and the term's factor.
        border: how taps outside the image are read (``BORDERS``).
        fill: the value outside the image for ``border="constant"``.
        out_dtype: output type (default: the input's).
    """
    src3, was_2d = _hwc(src)
    kernel_out, final = _out_type(src.dtype, out_dtype)
    packed = [(_kernel(ky, "ky"), _kernel(kx, "kx"), float(scale)) for ky, kx, scale in terms]
    if not 1 <= len(packed) <= 3:
        raise ValueError(f"separable takes 1 to 3 terms, got {len(packed)}")
    out3 = np.empty(src3.shape, dtype=kernel_out)
    _native().separable(src3, out3, packed, _border_code(border), float(fill))
    return _finish(out3, was_2d, final)


def filter2d(src: np.ndarray, kernel: Any, *, anchor: tuple[int, int] | None = None, border: str = "reflect_101",
             fill: float = 0.0, valid: bool = False, out_dtype: Any = None, out: np.ndarray | None = None) -> np.ndarray:
    """2-D correlation with ``kernel`` (DALI's ``filter``).

    Args:
        kernel: 2-D float32 weights, ``(kh, kw)``.
        anchor: the kernel element over the output pixel; default ``(kh // 2, kw // 2)``.
        border, fill: as ``separable``.
        valid: compute only the positions where the kernel lies inside the
            image (output smaller by ``kh - 1, kw - 1``; ``anchor`` ignored).
        out: where to write the result if it fits (its shape and type, C-contiguous).
    """
    src3, was_2d = _hwc(src)
    k = _kernel(kernel, "kernel")
    if k.ndim != 2:
        raise ValueError(f"kernel must be 2-D, got shape {k.shape}")
    kh, kw = k.shape
    if valid:
        ay = ax = 0
        shape = (src3.shape[0] - kh + 1, src3.shape[1] - kw + 1, src3.shape[2])
        if shape[0] <= 0 or shape[1] <= 0:
            raise ValueError(f"a {kh}x{kw} kernel does not fit in a {src3.shape[0]}x{src3.shape[1]} image (mode 'valid')")
    else:
        ay, ax = (kh // 2, kw // 2) if anchor is None else (int(anchor[0]), int(anchor[1]))
        if not (0 <= ay < kh and 0 <= ax < kw):
            raise ValueError(f"anchor {(ay, ax)} lies outside the {kh}x{kw} kernel")
        shape = src3.shape
    kernel_out, final = _out_type(src.dtype, out_dtype)
    target = out[:, :, None] if out is not None and was_2d and out.ndim == 2 else out
    out3 = out_array(target if kernel_out == final else None, shape, kernel_out)
    _native().filter2d(src3, out3, k, kh, kw, ay, ax, _border_code(border), float(fill))
    return _finish(out3, was_2d, final)


def median(src: np.ndarray, window: tuple[int, int]) -> np.ndarray:
    """Median of each ``window = (h, w)`` neighbourhood (odd sizes), per channel, edges replicated."""
    src3, was_2d = _hwc(src)
    wh, ww = (int(v) for v in window)
    if wh <= 0 or ww <= 0 or wh % 2 == 0 or ww % 2 == 0:
        raise ValueError(f"the window must have odd, positive sizes, got {window!r}")
    if src3.dtype.itemsize == 4 and src3.dtype.kind in "iu":
        raise ValueError(f"median does not support {src3.dtype}")
    out3 = np.empty(src3.shape, dtype=src3.dtype)
    _native().median(src3, out3, wh, ww)
    return _finish(out3, was_2d, np.dtype(src.dtype))


def linear(src: np.ndarray, mul: float, add: float, out_dtype: Any = None, out: np.ndarray | None = None) -> np.ndarray:
    """``src * mul + add`` element by element in float32 (any shape), converted as the filters convert.

    The output has ``out_dtype`` (default: the input's), written into ``out``
    when given (same shape and type, C-contiguous); types the kernel
    does not handle are refused with ``ValueError`` (the caller falls back).
    """
    kernel_out, final = _out_type(src.dtype, out_dtype)
    if src.dtype not in KERNEL_DTYPES or final != kernel_out:
        raise ValueError(f"linear: no kernel for {src.dtype} -> {final}")
    src = np.asarray(src, order="C")  # not ascontiguousarray: that one makes a 0-d sample 1-d
    target = out_array(out, src.shape, kernel_out)
    _native().linear(src, target, float(mul), float(add))
    return target


def color_matrix(src: np.ndarray, matrix: np.ndarray, offset: float, out_dtype: Any = None,
                 out: np.ndarray | None = None) -> np.ndarray:
    """``out[..., i] = sum_j matrix[i, j] * src[..., j] + offset`` for 3-channel pixels (float32, in
    the order of ``ops/color.py: apply_linear``), converted as the filters convert; written into
    ``out`` when given (same shape and type, C-contiguous).

    Raises ``ValueError`` for types or shapes the kernel does not handle (the caller falls back).
    """
    kernel_out, final = _out_type(src.dtype, out_dtype)
    if src.dtype not in KERNEL_DTYPES or final != kernel_out or src.ndim < 1 or src.shape[-1] != 3:
        raise ValueError(f"color_matrix: no kernel for {src.dtype} -> {final} of shape {src.shape}")
    src = np.ascontiguousarray(src)
    target = out_array(out, src.shape, kernel_out)
    _native().color_matrix(src, target, np.ascontiguousarray(matrix, dtype=np.float32).reshape(9), float(offset))
    return target


def histograms(image: np.ndarray, channels: int) -> np.ndarray:
    """int64 ``(channels, 256)`` histograms of a uint8 array whose last axis is the channel (``channels=1``: all)."""
    if image.dtype != np.uint8:
        raise ValueError(f"histograms need uint8 data, got {image.dtype}")
    hist = np.empty((channels, 256), dtype=np.int64)
    _native().histograms(np.ascontiguousarray(image), hist, int(channels))
    return hist


def apply_luts(image: np.ndarray, luts: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``luts[c][image[..., c]]`` for a uint8 array whose last axis is the channel (one table: all values);
    written into ``out`` when given (same shape, uint8, C-contiguous)."""
    luts = np.ascontiguousarray(luts, dtype=np.uint8)
    target = out_array(out, image.shape, np.dtype(np.uint8))
    _native().apply_luts(np.ascontiguousarray(image), target, luts, int(luts.shape[0]))
    return target


def grid_mask(src: np.ndarray, ca: float, sa: float, sx: float, sy: float, ratio: float) -> np.ndarray:
    """GridMask of an HWC (or HW) image of any element type (see ``filters.c``; the float32 values as given)."""
    was_2d = src.ndim == 2
    src3 = src[:, :, None] if was_2d else src
    item = src3.dtype.itemsize
    if src3.strides[2] != item or src3.strides[1] != item * src3.shape[2] or src3.strides[0] < 0:
        src3 = np.ascontiguousarray(src3)
    out = np.empty(src3.shape, dtype=src3.dtype)
    _native().grid_mask(src3, out, float(ca), float(sa), float(sx), float(sy), float(ratio))
    return out[:, :, 0] if was_2d else out
