"""CPU kernels of the geometric warps: affine (images and DHWC volumes), perspective and remap.

Thin wrappers over the C extension ``streamflow._native._warp`` (``warp.c``
says what is computed, operation by operation). Each returns the result, or
raises ``KernelUnsupported`` for a case the kernels do not take (an element
type, an output type): the caller then runs its numpy code, which gives the
same values. The C code releases the GIL, so the engine's worker threads warp
images in parallel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .binding import load_extension, out_array

_warp, _ = load_extension("_warp")

__all__ = ["BORDERS", "KernelUnsupported", "affine", "available", "perspective", "use_avx2"]

#: Border policies of ``perspective`` (ops/slice.py's names) and their codes in ``warp.c``.
BORDERS = {"constant": 0, "edge": 1, "reflect_1001": 2, "reflect_101": 3, "wrap": 4}

#: Element types the kernels read (and ``perspective`` writes).
_IN_TYPES = frozenset(np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
                                            np.float32, np.float64))
#: Output types ``affine`` writes directly; float16 and float64 are float32 results cast here.
_AFFINE_OUT = frozenset(np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.float32))
_AFFINE_VIA_F32 = frozenset(np.dtype(t) for t in (np.float16, np.float64))


class KernelUnsupported(ValueError):
    """The kernels do not handle this case; the caller computes it in numpy."""


def available() -> bool:
    """Whether the C extension is built."""
    return _warp is not None


def use_avx2(enabled: bool) -> bool:
    """Take the kernels' AVX2 paths (the default where the CPU has AVX2) or their SSE2 ones; returns
    the previous setting. Both give the same bits: tests run both."""
    return bool(_native().use_avx2(bool(enabled)))


def _native() -> Any:
    if _warp is None:
        raise KernelUnsupported("streamflow._native._warp is not built")
    return _warp


def _contiguous(a: np.ndarray) -> np.ndarray:
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return np.ascontiguousarray(a)


def affine(src: np.ndarray, matrix: np.ndarray, out_size: tuple[int, ...], *, linear: bool,
           fill: np.ndarray | None, out_dtype: np.dtype, out: np.ndarray | None = None) -> np.ndarray:
    """Warp an HWC image (``matrix``: 2x3) or a DHWC volume (3x4) by a destination-to-source map.

    Args:
        src: ``H x W x C`` or ``D x H x W x C``, non-empty.
        matrix: float32, 6 or 12 values.
        out_size: ``(out_h, out_w)`` or ``(out_d, out_h, out_w)``.
        linear: bilinear (trilinear) if true, else nearest.
        fill: the value of taps outside the source, one per channel, already
            in the source's type; ``None`` clamps to the edge.
        out_dtype: the output type.
        out: where to write the result if it fits (shape ``(*out_size, C)``,
            ``out_dtype``, C-contiguous), e.g. a row of the batch array.
    """
    native = _native()
    odt = np.dtype(out_dtype)
    copy = not linear and odt == src.dtype
    if not copy and (src.dtype not in _IN_TYPES or (odt not in _AFFINE_OUT and odt not in _AFFINE_VIA_F32)):
        raise KernelUnsupported(f"no warp kernel for {src.dtype} -> {odt}")
    src = _contiguous(src)
    kernel_dtype = src.dtype if copy else (odt if odt in _AFFINE_OUT else np.dtype(np.float32))
    result = out_array(out, (*out_size, src.shape[-1]), kernel_dtype)
    fill_px = None if fill is None else np.ascontiguousarray(fill, dtype=src.dtype)
    m = np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1)
    (native.affine2d if src.ndim == 3 else native.affine3d)(src, result, m, linear, fill_px, copy)
    return result if result.dtype == odt else result.astype(odt)


def perspective(src: np.ndarray, out_size: tuple[int, int], *, matrix: np.ndarray | None = None,
                mapx: np.ndarray | None = None, mapy: np.ndarray | None = None, half: float, linear: bool,
                border: str, fill: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Sample an HWC image in double precision at the points of a homography or of two maps.

    Args:
        src: ``H x W x C``, non-empty; the output has its type.
        out_size: ``(out_h, out_w)`` (the maps' shape when maps are given).
        matrix: 3x3 float64 destination-to-source homography, or ``None`` with ``mapx`` / ``mapy``.
        mapx, mapy: source coordinates per output pixel.
        half: 0.5 for pixel centres at +0.5 (``corner``), 0 for centres at integers.
        linear: bilinear if true, else nearest (half to even).
        border: a key of ``BORDERS``.
        fill: the constant border's value, one float64 per channel.
        out: where to write the result if it fits (as ``affine``).
    """
    native = _native()
    if src.dtype not in _IN_TYPES:
        raise KernelUnsupported(f"no perspective kernel for {src.dtype}")
    src = _contiguous(src)
    result = out_array(out, (*out_size, src.shape[2]), src.dtype)
    m = None if matrix is None else np.ascontiguousarray(matrix, dtype=np.float64).reshape(-1)
    if m is None:
        assert mapx is not None and mapy is not None
        if mapx.dtype != np.float32 or mapy.dtype != np.float32:
            mapx, mapy = mapx.astype(np.float64, copy=False), mapy.astype(np.float64, copy=False)
        mapx, mapy = _contiguous(mapx), _contiguous(mapy)
    fill64 = np.ascontiguousarray(np.broadcast_to(np.asarray(fill, dtype=np.float64), (src.shape[2],)))
    native.perspective(src, result, m, mapx, mapy, float(half), linear, BORDERS[border], fill64)
    return result
