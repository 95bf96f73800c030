"""Volumes (DHWC): the 3-D parts of resize, crop, rotate and warp_affine, as DALI 2.4.

A sample with 4 dimensions is a DHWC volume (DALI's default layout for 4-D
data). Coordinates follow DALI's warp kernels: a point is ``(x, y, z)`` (W, H,
D), voxel ``(d, i, j)`` has its centre at ``(j + 0.5, i + 0.5, d + 0.5)``.

* **resize**: separable passes of the image resampler (``_native/imgproc``):
  H and W of every depth plane into a float32 buffer, then D (over rows of
  ``out_h * out_w`` voxels). Output sizes and source windows as DALI
  (``resize_geometry.py``): a missing extent takes the geometric mean of the
  given scales; ``resize_shorter`` / ``resize_longer`` look at all three
  extents; a fractional size keeps its exact scale (``subpixel_scale``).
* **warp_affine**: a 3x4 destination-to-source matrix; trilinear (or nearest)
  sampling in float32; outside the volume: ``fill_value`` or the clamped
  border voxel. In C (``_native/warp.c``), bit-identical to the numpy code kept
  here for the other element types.
* **rotate**: ``axis`` (x, y, z; any length) and ``angle`` in degrees; the
  canvas holds the rotated box (each extent ``ceil(sum_j |R_ij| n_j - 0.01)``,
  made one larger when needed to keep the parity of the input extent that
  contributes most), the rotation about the centres.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import imgproc as kernels
from .._native import warp as native_warp
from ..types import InterpType
from .resize_geometry import ResizeGeometry, resize_geometry

__all__ = [
    "is_volume",
    "resample_volume",
    "rotation_matrix_3d",
    "rotated_volume_size",
    "volume_output_size",
    "warp_affine_volume",
]

F32 = np.float32


def is_volume(sample: Any, layout: str = "") -> bool:
    """Whether ``sample`` is a DHWC volume: 4-D, unless its layout names 4 other axes (``FHWC``)."""
    return getattr(sample, "ndim", 0) == 4 and (len(layout) != 4 or layout == "DHWC")


def volume_output_size(
    in_shape: Sequence[int], requested: Sequence[float | None], *, mode: str = "default",
    resize_shorter: float | None = None, resize_longer: float | None = None,
    max_size: Sequence[float] | None = None,
) -> tuple[int, ...]:
    """(out_d, out_h, out_w) under DALI's resize rules for 3-D data (``resize_geometry``)."""
    if resize_shorter or resize_longer:
        requested = [float(resize_shorter or resize_longer)] * len(in_shape)  # type: ignore[arg-type]
        mode = "not_smaller" if resize_shorter else "not_larger"
    return resize_geometry(in_shape, [r or 0.0 for r in requested], mode=mode, max_size=max_size).size


def resample_volume(volume: np.ndarray, geometry: ResizeGeometry, *, interp: InterpType, antialias: bool,
                    out_dtype: Any = None, mag_interp: InterpType | None = None) -> np.ndarray:
    """Resize a DHWC volume to ``geometry`` (``resize_geometry``: size and source window per axis):
    H and W per plane, then D (float32 between)."""
    d, h, w, c = volume.shape
    od, oh, ow = geometry.size
    d0, y0, x0 = geometry.lo
    d1, y1, x1 = geometry.hi
    odt = np.dtype(out_dtype or volume.dtype)
    mid_dtype = np.float32 if odt == np.uint8 else odt
    planes = np.empty((d, oh, ow, c), dtype=mid_dtype)
    for k in range(d):
        kernels.resample(volume[k], (oh, ow), interp=interp, mag_interp=mag_interp, antialias=antialias,
                         out_dtype=mid_dtype, roi=(y0, x0, y1, x1), out=planes[k])
    if od == d and (d0, d1) == (0, d) and odt == mid_dtype:
        return planes
    rows = planes.reshape(d, oh * ow, c)
    out = kernels.resample(rows, (od, oh * ow), interp=interp, mag_interp=mag_interp, antialias=antialias,
                           out_dtype=odt, roi=(d0, 0.0, d1, float(oh * ow)))
    return np.ascontiguousarray(out).reshape(od, oh, ow, c)


def _axis_angle(axis: Sequence[float], angle_deg: float) -> np.ndarray:
    u = np.asarray(axis, dtype=np.float64).reshape(-1)
    if u.size != 3 or not np.all(np.isfinite(u)) or not np.linalg.norm(u) > 0:
        raise ValueError(f"the rotation axis must be 3 finite values with a non-zero length, got {u.tolist()}")
    u = u / np.linalg.norm(u)
    a = math.radians(angle_deg)
    c, s = math.cos(a), math.sin(a)
    x, y, z = u
    cross = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return c * np.eye(3) + s * cross + (1 - c) * np.outer(u, u)


def rotated_volume_size(in_dhw: Sequence[int], axis: Sequence[float], angle_deg: float) -> tuple[int, int, int]:
    """(out_d, out_h, out_w) of the canvas that holds the rotated volume (DALI's rule)."""
    r = np.abs(_axis_angle(axis, angle_deg))  # (x, y, z) order
    extents = np.array([in_dhw[2], in_dhw[1], in_dhw[0]], dtype=np.float64)
    out = []
    for i in range(3):
        size = math.ceil(float(r[i] @ extents) - 1e-2)
        major = int(np.argmax(r[i]))
        size += (size % 2) ^ (int(extents[major]) % 2)
        out.append(max(1, size))
    return out[2], out[1], out[0]


def rotation_matrix_3d(in_dhw: Sequence[int], out_dhw: Sequence[int], axis: Sequence[float],
                       angle_deg: float) -> np.ndarray:
    """Destination-to-source 3x4 map (x, y, z) of a rotation about the centres."""
    rot = _axis_angle(axis, angle_deg).T  # the inverse of the source-to-destination rotation
    cin = np.array([in_dhw[2], in_dhw[1], in_dhw[0]], dtype=np.float64) / 2
    cout = np.array([out_dhw[2], out_dhw[1], out_dhw[0]], dtype=np.float64) / 2
    return np.hstack([rot, (cin - rot @ cout)[:, None]]).astype(F32)


def _convert_sat(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """DALI's ConvertSat: integers round half away from zero and saturate."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        rounded = np.where(values >= 0, np.floor(values + 0.5), np.ceil(values - 0.5))
        return np.clip(rounded, info.min, info.max).astype(dtype)
    return values.astype(dtype, copy=False)


def warp_affine_volume(src: np.ndarray, matrix: Any, out_size: Sequence[int], *, interp: InterpType,
                       fill_value: Sequence[float] | None, out_dtype: Any = None) -> np.ndarray:
    """Warp a DHWC volume by a destination-to-source 3x4 ``matrix`` (x, y, z coordinates)."""
    flat_m = np.asarray(matrix, dtype=np.float64).reshape(-1)
    if flat_m.size != 12 or not np.all(np.isfinite(flat_m)):
        raise ValueError(f"a volume's matrix must have 12 finite values (3x4), got {flat_m.size}")
    m = flat_m.reshape(3, 4).astype(F32)
    D, H, W, C = src.shape
    od, oh, ow = (int(v) for v in out_size)
    odt = np.dtype(out_dtype or src.dtype)
    typed = None
    if fill_value is not None:
        fills = np.asarray(fill_value, dtype=np.float64).reshape(-1)
        if fills.size not in (1, C):
            raise ValueError(f"fill_value must have 1 or {C} values, got {fills.size}")
        typed = np.broadcast_to(_convert_sat(fills, src.dtype), (C,))
    try:  # the C kernel: the same float32 operations, one pass, GIL released
        return native_warp.affine(src, m, (od, oh, ow), linear=interp is not InterpType.INTERP_NN, fill=typed,
                                  out_dtype=odt)
    except native_warp.KernelUnsupported:  # other element types: numpy
        pass
    z, y, x = np.meshgrid(np.arange(od, dtype=F32) + F32(0.5), np.arange(oh, dtype=F32) + F32(0.5),
                          np.arange(ow, dtype=F32) + F32(0.5), indexing="ij")
    sx = m[0, 0] * x + m[0, 1] * y + m[0, 2] * z + m[0, 3]
    sy = m[1, 0] * x + m[1, 1] * y + m[1, 2] * z + m[1, 3]
    sz = m[2, 0] * x + m[2, 1] * y + m[2, 2] * z + m[2, 3]
    pad = 0 if fill_value is None else 1
    table = src
    if typed is not None:
        table = np.empty((D + 2, H + 2, W + 2, C), dtype=src.dtype)
        table[...] = typed
        table[1:-1, 1:-1, 1:-1] = src
    flat = table.reshape(-1, C)
    dims = (D, H, W)

    def gather(iz: np.ndarray, iy: np.ndarray, ix: np.ndarray) -> np.ndarray:
        idx = [np.clip(i, -pad, n - 1 + pad) + pad for i, n in zip((iz, iy, ix), dims)]
        return flat[(idx[0] * (H + 2 * pad) + idx[1]) * (W + 2 * pad) + idx[2]]

    if interp is InterpType.INTERP_NN:
        ints = [np.floor(np.clip(v, -2, n + 1)).astype(np.int64) for v, n in zip((sz, sy, sx), dims)]
        out = gather(*ints)
        out = out if out.dtype == odt else _convert_sat(out.astype(F32), odt)
        return out
    coords = [np.clip(v, F32(-1e6), F32(1e6)) - F32(0.5) for v in (sz, sy, sx)]
    floors = [np.floor(v) for v in coords]
    qz, qy, qx = ((v - f)[..., None] for v, f in zip(coords, floors))
    z0, y0, x0 = (f.astype(np.int64) for f in floors)

    def plane(zi: np.ndarray) -> np.ndarray:
        s0 = gather(zi, y0, x0).astype(F32) * (F32(1) - qx) + gather(zi, y0, x0 + 1).astype(F32) * qx
        s1 = gather(zi, y0 + 1, x0).astype(F32) * (F32(1) - qx) + gather(zi, y0 + 1, x0 + 1).astype(F32) * qx
        return s0 + (s1 - s0) * qy

    p0, p1 = plane(z0), plane(z0 + 1)
    return _convert_sat(p0 + (p1 - p0) * qz, odt)
