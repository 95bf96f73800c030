"""The resampling geometry of ``resize`` on the GPU, and its first pass.

Python twins of ``choose_filter`` / ``make_filter`` / ``plan_axis`` /
``cost_order`` of ``_native/imgproc.c``, in float32 where the C code uses
float, so the GPU passes use the CPU's filters, anchors and pass order.
Shared by ``gpu/ops/resize.py`` and ``gpu/ops/resize_crop_mirror_normalize.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import SampleError
from ..types import InterpType
from . import kernels as K
from .context import F32, GpuContext, float_bits, param_rows

__all__ = ["ResampleAxis", "ResamplePlan", "queue_first_pass"]


_NN, _LINEAR, _CUBIC, _LANCZOS, _GAUSS, _TRI = 0, 1, 2, 3, 4, 5


_INTERP_CODES = {
    InterpType.INTERP_NN: _NN, InterpType.INTERP_LINEAR: _LINEAR, InterpType.INTERP_CUBIC: _CUBIC,
    InterpType.INTERP_LANCZOS3: _LANCZOS, InterpType.INTERP_GAUSSIAN: _GAUSS, InterpType.INTERP_TRIANGULAR: _TRI,
}


def _choose_filter(interp: int, antialias: bool, in_size: np.float32, out_size: np.float32) -> tuple[int, int, np.float32, np.float32]:
    """(table key, table length, table entries per pixel, anchor) of one axis."""
    down = out_size < in_size
    aa = antialias and down
    ratio = F32(in_size / out_size)
    if interp == _CUBIC:
        radius = F32(F32(2) * in_size) / out_size if aa else F32(2)
        key, n, support = 2, 129, F32(2) * max(radius, F32(2))
    elif interp == _LANCZOS:
        radius = F32(F32(3) * in_size) / out_size if aa else F32(3)
        key, n, support = 3, 193, F32(2) * max(radius, F32(3))
    elif interp == _GAUSS:
        radius = ratio if aa else F32(1)
        sigma = F32(float(F32(radius * F32(0.5))) / math.sqrt(2.0))
        s = F32(4 * math.sqrt(2.0)) * sigma
        key, n, support = 4, 65, max(F32(s), F32(1))
    else:
        radius = ratio if aa else F32(1)
        key, n, support = 1, 3, max(F32(F32(2) * radius), F32(1))
    fscale = F32(F32(n - 1) / F32(support))
    anchor = F32(F32(F32(n - 1) * F32(0.5)) / fscale)
    return key, n, fscale, anchor


def _support(n: int, fscale: np.float32) -> int:
    return max(1, int(math.ceil(float(F32(F32(n - 1) / fscale)))))


class ResampleAxis:
    """The resampling geometry of one axis of one sample."""

    __slots__ = ("anchor", "fscale", "in_len", "interp", "key", "n", "out_full", "roi0", "scale", "srcx0", "support")

    def __init__(self, interp: int, antialias: bool, in_len: int, out_full: int, roi0: float, roi1: float) -> None:
        r0, r1 = F32(roi0), F32(roi1)
        self.interp, self.in_len, self.out_full, self.roi0 = interp, in_len, out_full, r0
        in_size = F32(abs(F32(r1 - r0)))
        self.scale = F32(F32(r1 - r0) / F32(out_full))
        if interp == _NN:
            self.key, self.n, self.fscale, self.anchor, self.support, self.srcx0 = 1, 3, F32(1), F32(0), 1, F32(0)
            return
        self.key, self.n, self.fscale, self.anchor = _choose_filter(interp, antialias, in_size, F32(out_full))
        self.support = _support(self.n, self.fscale)
        self.srcx0 = F32(r0 + F32(F32(F32(F32(0.5) * self.scale) - F32(0.5)) - self.anchor))

    def fill(self, P: np.ndarray, ctx: GpuContext, d0: int, nn_acc: bool) -> None:
        S = K.RESAMPLE_SLOTS
        P[S["IN_LEN"]] = self.in_len
        P[S["D0"]] = d0
        P[S["NN"]] = int(self.interp == _NN)
        P[S["SUPPORT"]] = self.support
        tab, n = ctx.table(self.key)
        P[S["TABLE"]] = tab.data.ptr
        P[S["TABLE_N"]] = n
        P[S["FSCALE"]] = float_bits(self.fscale)
        P[S["SRCX0"]] = float_bits(self.srcx0)
        P[S["SCALE"]] = float_bits(self.scale)
        P[S["ROI0"]] = float_bits(self.roi0)
        P[S["NN_ACC"]] = int(nn_acc)


def _vertical_first(ay: ResampleAxis, ax: ResampleAxis, roi: tuple[float, float, float, float], H: int, W: int, C: int) -> bool:
    """cost_order of imgproc.c: True when the vertical pass should run first."""
    ry0, rx0, ry1, rx1 = roi
    in_h = max(min(abs(float(F32(ry1)) - float(F32(ry0))), H), 1.0)
    in_w = max(min(abs(float(F32(rx1)) - float(F32(rx0))), W), 1.0)
    out_h, out_w = ay.out_full, ax.out_full
    Sy, Sx = ay.support, ax.support
    hc = 1.0 if C <= 4 else C / 4.0
    vh = out_h * in_w * C * Sy / 4.0 + out_h * out_w * Sx * hc + out_h * in_w * C / 4.0
    hv = in_h * in_w * C / 4.0 + in_h * out_w * Sx * hc + out_h * out_w * C * Sy / 4.0 + in_h * out_w * C / 4.0
    return float(F32(vh)) <= float(F32(hv))


class ResamplePlan:
    """Both passes of one sample: the window (wy0, wx0, wh, ww) of an out_h x out_w resize."""

    def __init__(self, img: Any, size: tuple[int, int], roi: Any, window: tuple[int, int, int, int],
                 interp: InterpType, antialias: bool) -> None:
        H, W, C = (int(v) for v in img.shape)
        if roi is None:
            roi = (0.0, 0.0, float(H), float(W))
        ry0, rx0, ry1, rx1 = (float(v) for v in roi)
        if ry0 == ry1 or rx0 == rx1:
            raise SampleError(f"resize roi must have a non-zero extent on both axes, got {roi!r}")
        code = _INTERP_CODES[interp]
        self.img, self.H, self.W, self.C = img, H, W, C
        self.window = window
        self.ay = ResampleAxis(code, antialias, H, int(size[0]), ry0, ry1)
        self.ax = ResampleAxis(code, antialias, W, int(size[1]), rx0, rx1)
        self.vh = _vertical_first(self.ay, self.ax, (ry0, rx0, ry1, rx1), H, W, C)
        _, _, wh, ww = window
        self.tmp_shape = (wh, W, C) if self.vh else (H, ww, C)


def queue_first_pass(ctx: GpuContext, plans: list[ResamplePlan]) -> tuple[np.ndarray, Any, str]:
    """Queue pass 1 for every sample; return pass-2 parameters (without the destination).

    Returns:
        (pass-2 params, the intermediate buffer to keep alive, source kind of pass 1)
    """
    n = len(plans)
    src_kind = "u8" if all(p.img.dtype == np.uint8 for p in plans) else "f32"
    if src_kind == "f32":
        for p in plans:
            if p.img.dtype != np.float32:
                p.img = p.img.astype(np.float32)
    tmps = ctx.alloc([p.tmp_shape for p in plans], np.float32)
    S = K.RESAMPLE_SLOTS
    P1, P2 = param_rows(n), param_rows(n)
    max1 = max2 = 0
    for i, p in enumerate(plans):
        wy0, wx0, wh, ww = p.window
        img, tmp = p.img, tmps[i]
        a, b = P1[i], P2[i]
        a[S["SRC"]], a[S["SRC_STRIDE"]] = img.data.ptr, img.strides[0] // img.itemsize
        a[S["DST"]], a[S["DST_STRIDE"]] = tmp.data.ptr, tmp.shape[1] * p.C
        b[S["SRC"]], b[S["SRC_STRIDE"]] = tmp.data.ptr, tmp.shape[1] * p.C
        a[S["C"]] = b[S["C"]] = p.C
        if p.vh:  # vertical over every source column, then horizontal over the window rows
            a[S["AXIS"]], a[S["OUT_LEN"]], a[S["OTHER_LEN"]] = 0, wh, p.W
            p.ay.fill(a, ctx, wy0, True)
            b[S["AXIS"]], b[S["OUT_LEN"]], b[S["OTHER_LEN"]] = 1, ww, wh
            p.ax.fill(b, ctx, wx0, False)
            max1 = max(max1, wh * p.W)
        else:  # horizontal over every source row, then vertical
            a[S["AXIS"]], a[S["OUT_LEN"]], a[S["OTHER_LEN"]] = 1, ww, p.H
            p.ax.fill(a, ctx, wx0, False)
            b[S["AXIS"]], b[S["OUT_LEN"]], b[S["OTHER_LEN"]] = 0, wh, ww
            p.ay.fill(b, ctx, wy0, True)
            max1 = max(max1, p.H * ww)
        max2 = max(max2, wh * ww)
    ctx.launch(f"sf_resample_{src_kind}_f32", P1, max1)
    return P2, tmps, src_kind
