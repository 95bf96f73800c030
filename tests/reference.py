"""Slow, deliberately plain numpy references for the image kernels (tests only).

Resampling: one dense weight matrix per axis, built output pixel by output
pixel from DALI's formulas (filter tables, source centre
``roi0 + (d + 0.5) * scale - 0.5``, clamped edges, weights normalised to sum
1). Positions and weights are computed in float32 exactly like the C kernel
and DALI do (so a tap never moves by one because of rounding); the products
are then summed in float64: ``out = Wy @ img @ Wx.T``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

F = np.float32

NN, LINEAR, CUBIC, LANCZOS3, GAUSSIAN, TRIANGULAR = (
    "nn", "linear", "cubic", "lanczos3", "gaussian", "triangular",
)  # fmt: skip


def _cubic_window(x: float) -> float:
    x = abs(x)
    if x >= 2:
        return 0.0
    if x > 1:
        return -0.5 * x**3 + 2.5 * x**2 - 4.0 * x + 2.0
    return 1.5 * x**3 - 2.5 * x**2 + 1.0


def _sinc(x: float) -> float:
    return 1.0 if x == 0 else math.sin(math.pi * x) / (math.pi * x)


def filter_table(kind: str) -> np.ndarray:
    """DALI's tabulated filter shape, float32."""
    if kind in (LINEAR, TRIANGULAR):
        return np.array([0, 1, 0], F)
    if kind == GAUSSIAN:
        n = 65
        xs = [4 * (i - (n - 1) * 0.5) / (n - 1) for i in range(n)]
        return np.array([math.exp(-x * x) for x in xs], F)
    if kind == CUBIC:
        n = 129
        xs = [4 * (i - (n - 1) * 0.5) / (n - 1) for i in range(n)]
        return np.array([_cubic_window(x) for x in xs], F)
    if kind == LANCZOS3:
        n = 193
        xs = [6 * (i - (n - 1) * 0.5) / (n - 1) for i in range(n)]
        return np.array([0.0 if abs(x) >= 3 else _sinc(x) * _sinc(x / 3) for x in xs], F)
    raise ValueError(kind)


def filter_support_width(kind: str, antialias: bool, in_size: float, out_size: float) -> F:
    """Width in source pixels over which the filter table is spread (DALI)."""
    aa = antialias and out_size < in_size
    ratio = F(in_size) / F(out_size)
    if kind == CUBIC:
        radius = F(F(2) * F(in_size)) / F(out_size) if aa else F(2)
        return F(2) * max(F(2), radius)
    if kind == LANCZOS3:
        radius = F(F(3) * F(in_size)) / F(out_size) if aa else F(3)
        return F(2) * max(F(3), radius)
    if kind == GAUSSIAN:
        radius = ratio if aa else F(1)
        sigma = F(float(radius * F(0.5)) / math.sqrt(2))
        return max(F(1), F(4 * math.sqrt(2)) * sigma)
    return max(F(1), F(2) * (ratio if aa else F(1)))


def _eval(tab: np.ndarray, x: F) -> F:
    n = len(tab)
    if not x > -1 or x >= n:
        return F(0)
    x0 = math.floor(x)
    d = F(x - F(x0))
    f0 = F(0) if x0 < 0 else tab[x0]
    f1 = F(0) if x0 + 1 >= n else tab[x0 + 1]
    return F(f0 + d * F(f1 - f0))


def axis_matrix(
    kind: str,
    antialias: bool,
    in_len: int,
    out_len: int,
    roi0: float,
    roi1: float,
    nn_accumulate: bool = False,
) -> np.ndarray:
    """Dense (out_len, in_len) float64 matrix of the resampling weights of one axis.

    NN picks ``floor(roi0 + (d + 0.5) * scale)``; for rows DALI evaluates that
    by adding ``scale`` once per row in float32 (``nn_accumulate``), which can
    land one below an exact integer.
    """
    roi0, roi1 = F(roi0), F(roi1)
    scale = F(F(roi1 - roi0) / F(out_len))
    m = np.zeros((out_len, in_len), np.float64)
    if kind == NN:
        acc = F(roi0 + F(F(0.5) * scale))
        for d in range(out_len):
            s = acc if nn_accumulate else F(roi0 + F(F(F(d) + F(0.5)) * scale))
            m[d, min(max(math.floor(s), 0), in_len - 1)] = 1.0
            acc = F(acc + scale)
        return m
    tab = filter_table(kind)
    n = len(tab)
    width = filter_support_width(kind, antialias, abs(roi1 - roi0), out_len)
    fscale = F(F(n - 1) / width)
    anchor = F(F(F(n - 1) * F(0.5)) / fscale)
    support = math.ceil(F(F(n - 1) / fscale))
    srcx_0 = F(roi0 + F(F(F(F(0.5) * scale) - F(0.5)) - anchor))
    for d in range(out_len):
        sx0f = F(F(F(d) * scale) + srcx_0)
        sx0 = math.ceil(sx0f)
        f0 = F(F(sx0) - sx0f)
        w = np.array([_eval(tab, F(F(f0 + F(k)) * fscale)) for k in range(support)], F)
        total = F(0)
        for v in w:
            total = F(total + v)
        if total != 0:
            w = (w / total).astype(F)
        for k in range(support):
            m[d, min(max(sx0 + k, 0), in_len - 1)] += float(w[k])
    return m


def resample_ref(
    src: np.ndarray,
    out_size: tuple[int, int],
    *,
    interp: str = LINEAR,
    antialias: bool = True,
    roi: tuple[float, float, float, float] | None = None,
    out_dtype=np.uint8,
    mag_interp: str | None = None,
) -> np.ndarray:
    """Full resized image (HWC or HW), float64 sums of float32 weights.

    ``interp`` filters an axis whose output is shorter than its roi (DALI's
    ``min_filter``), ``mag_interp`` (default ``interp``) the others. uint8
    output is clipped and rounded half to even (measured on DALI 2.4's CPU
    resize)."""
    img = np.asarray(src, np.float64)
    was_2d = img.ndim == 2
    if was_2d:
        img = img[:, :, None]
    H, W, _ = img.shape
    oh, ow = out_size
    y0, x0, y1, x1 = roi if roi is not None else (0, 0, H, W)

    def kind(lo: float, hi: float, n: int) -> str:
        return interp if n < abs(F(F(hi) - F(lo))) else (mag_interp or interp)

    my = axis_matrix(kind(y0, y1, oh), antialias, H, oh, y0, y1, nn_accumulate=True)
    mx = axis_matrix(kind(x0, x1, ow), antialias, W, ow, x0, x1)
    out = np.einsum("oh,hwc,pw->opc", my, img, mx)
    if np.dtype(out_dtype) == np.uint8:
        out = np.rint(np.clip(out, 0, 255)).astype(np.uint8)  # halves to even, as DALI
    else:
        out = out.astype(np.float32)
    return out[:, :, 0] if was_2d else out


def subpixel_window(lo: float, hi: float, extent: float) -> tuple[int, float, float]:
    """DALI's ``subpixel_scale`` for one axis: the output size and the source window ``[lo, hi)`` that keep
    the scale of a fractional ``extent`` (a float32 value).

    Written out from DALI's resize attributes: size = round half away from
    zero; when it differs from ``extent``, the window is scaled about its
    centre by ``size / extent``, in float64, each end stored as float32; the
    centre is the float32 sum of the ends, halved.
    """
    extent = F(extent)
    size = max(1, int(math.floor(abs(float(extent)) + 0.5)))
    if size == abs(float(extent)):
        return size, float(F(lo)), float(F(hi))
    adjust = size / abs(float(extent))
    centre = float(F(F(lo) + F(hi))) * 0.5
    return size, float(F(centre + (float(F(lo)) - centre) * adjust)), float(F(centre + (float(F(hi)) - centre) * adjust))


def bilinear_ref(src: np.ndarray, out_size: tuple[int, int], coord_dtype=np.float64) -> np.ndarray:
    """Textbook bilinear (no antialiasing): source coordinate
    ``s = (d + 0.5) * in / out - 0.5``, ``out = (1 - f) * in[i] + f * in[i + 1]``
    with ``i = floor(s)``, ``f = s - i``, indices clamped to the image.

    With ``coord_dtype=np.float32`` the coordinate is evaluated in float32 in
    DALI's order of operations (``s - 1 = d * scale + ((0.5 * scale - 0.5) - 1)``,
    ``i = ceil(s - 1)``, weight of ``in[i]`` is ``i - (s - 1)``), which the
    kernels reproduce bit for bit; float64 coordinates differ from it by the
    float32 rounding of ``s`` (about 1e-6 pixel)."""
    img = np.asarray(src, np.float64)
    H, W = img.shape[:2]
    oh, ow = out_size
    dt = np.dtype(coord_dtype).type

    def coords(n_in: int, n_out: int):
        scale = dt(dt(n_in) / dt(n_out))
        d = np.arange(n_out).astype(dt)
        if dt is np.float32:
            sm1 = (d * scale + dt(dt(dt(dt(0.5) * scale) - dt(0.5)) - dt(1))).astype(dt)
            i0 = np.ceil(sm1).astype(int)
            w0 = (i0.astype(dt) - sm1).astype(np.float64)
            f = 1.0 - w0
        else:
            s = (d + 0.5) * n_in / n_out - 0.5
            i0 = np.floor(s).astype(int)
            f = s - i0
        return np.clip(i0, 0, n_in - 1), np.clip(i0 + 1, 0, n_in - 1), f

    ya, yb, fy = coords(H, oh)
    xa, xb, fx = coords(W, ow)
    fy = fy.reshape(-1, 1, *([1] * (img.ndim - 2)))
    fx = fx.reshape(1, -1, *([1] * (img.ndim - 2)))
    top = img[ya][:, xa] * (1 - fx) + img[ya][:, xb] * fx
    bot = img[yb][:, xa] * (1 - fx) + img[yb][:, xb] * fx
    return top * (1 - fy) + bot * fy


def cmn_ref(
    src: np.ndarray,
    window: tuple[int, int, int, int],
    *,
    mirror: bool,
    mean: Sequence[float],
    std: Sequence[float],
    scale: float = 1.0,
    shift: float = 0.0,
    layout: str = "CHW",
    pad_channels: int = 0,
    fill: Sequence[float] = (0.0,),
) -> np.ndarray:
    """float32 crop-mirror-normalize with explicit padding, numpy only."""
    img = np.asarray(src)
    if img.ndim == 2:
        img = img[:, :, None]
    H, W, C = img.shape
    y0, x0, h, w = window
    oc = C + pad_channels
    fill_arr = (
        np.broadcast_to(np.asarray(fill, np.float32), (oc,))
        if len(fill) in (1, oc)
        else np.concatenate([np.asarray(fill, np.float32), np.zeros(oc - C, np.float32)])
    )
    out = np.empty((h, w, oc), np.float32)
    out[:] = fill_arr
    mean32 = np.asarray(mean, np.float32)
    std32 = np.asarray(std, np.float32)
    norm = (F(scale) * (img.astype(np.float32) - mean32) / std32 + F(shift)).astype(np.float32)
    for y in range(h):
        sy = y0 + y
        if not 0 <= sy < H:
            continue
        for x in range(w):
            sx = x0 + (w - 1 - x if mirror else x)
            if 0 <= sx < W:
                out[y, x, :C] = norm[sy, sx]
    return out.transpose(2, 0, 1) if layout == "CHW" else out


def reference_warp(img, matrix, out_hw, fill=None):
    """Independent float64 per-pixel bilinear warp with DALI's conventions."""
    m = np.asarray(matrix, dtype=np.float64).reshape(2, 3)
    H, W, C = img.shape
    out = np.zeros((*out_hw, C))
    src = img.astype(np.float64)
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            sx = m[0, 0] * (j + 0.5) + m[0, 1] * (i + 0.5) + m[0, 2] - 0.5
            sy = m[1, 0] * (j + 0.5) + m[1, 1] * (i + 0.5) + m[1, 2] - 0.5
            x0, y0 = math.floor(sx), math.floor(sy)
            qx, qy = sx - x0, sy - y0
            acc = np.zeros(C)
            for dy, wy in ((0, 1 - qy), (1, qy)):
                for dx, wx in ((0, 1 - qx), (1, qx)):
                    y, x = y0 + dy, x0 + dx
                    if 0 <= y < H and 0 <= x < W:
                        v = src[y, x]
                    elif fill is None:
                        v = src[min(max(y, 0), H - 1), min(max(x, 0), W - 1)]
                    else:
                        v = np.full(C, fill, dtype=np.float64)
                    acc += wy * wx * v
            out[i, j] = acc
    return out
