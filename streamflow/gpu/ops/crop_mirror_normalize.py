"""``crop_mirror_normalize`` on the GPU: one launch per batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.crop_mirror_normalize import CropMirrorNormalize
from .. import kernels as K
from ..context import F32, GpuContext, as_hwc, float_bits
from .registry import register

__all__ = ["CMN_KIND", "cmn_outputs", "cmn_params", "crop_mirror_normalize_gpu"]


def cmn_params(op: CropMirrorNormalize, chunk: Chunk, row: int, C: int, P: np.ndarray,
                window: tuple[int, int, int, int]) -> tuple[int, int, int]:
    """Fill the CMN slots of one sample; returns the output (oc, h, w)."""
    S = K.CMN_SLOTS
    y0, x0, h, w = window
    oc = C
    if op.pad_output:
        oc = 1
        while oc < C:
            oc *= 2
    if C > K.MAX_CHANNELS or oc > K.MAX_CHANNELS:
        raise SampleError(f"crop_mirror_normalize on the GPU takes at most {K.MAX_CHANNELS} channels, got {C}")
    mean = np.asarray(chunk.arg("mean", row, op.mean), dtype=np.float64).reshape(-1)
    std = np.asarray(chunk.arg("std", row, op.std), dtype=np.float64).reshape(-1)
    if mean.size == 1:
        mean = np.repeat(mean, C)
    if std.size == 1:
        std = np.repeat(std, C)
    if mean.size != C or std.size != C:
        raise SampleError(f"mean and std must have 1 or {C} values, got {mean.size} and {std.size}")
    if np.any(std == 0):
        raise SampleError("std must be non-zero")
    fill = np.asarray(op.crop.fill_values, dtype=np.float64).reshape(-1)
    if fill.size == 1:
        fill = np.repeat(fill, oc)
    elif fill.size == C:
        fill = np.concatenate([fill, np.zeros(oc - C)])
    elif fill.size != oc:
        raise SampleError(f"fill_values must have 1, {C} or {oc} values, got {fill.size}")
    P[K.RESAMPLE_SLOTS["C"]] = C
    P[S["OH"]], P[S["OW"]], P[S["OC"]] = h, w, oc
    P[S["CHW"]] = int(op.output_layout == "CHW")
    P[S["MIRROR"]] = int(bool(int(chunk.arg("mirror", row, op.mirror))))
    P[S["Y0"]], P[S["X0"]] = y0, x0
    P[S["SHIFT"]] = float_bits(op.shift)
    for c in range(C):
        P[S["MEAN"] + c] = float_bits(F32(mean[c]))
        P[S["MUL"] + c] = float_bits(F32(F32(op.scale) / F32(std[c])))
    for c in range(oc):
        P[S["FILL"] + c] = float_bits(F32(fill[c]))
    return oc, h, w


def cmn_outputs(ctx: GpuContext, op: CropMirrorNormalize, shapes: list[tuple[int, int, int]], P: np.ndarray) -> list[Any]:
    layout_shapes = [(oc, h, w) if op.output_layout == "CHW" else (h, w, oc) for oc, h, w in shapes]
    results = ctx.alloc(layout_shapes, op.out_dtype)
    for i, r in enumerate(results):
        P[i, K.CMN_SLOTS["OUT"]] = r.data.ptr
    return results


CMN_KIND = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.uint8): "u8"}


@register(CropMirrorNormalize)
def crop_mirror_normalize_gpu(op: CropMirrorNormalize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    cp = ctx.cp
    out: list[Any] = [None] * len(chunk)
    rows, imgs, P_rows, shapes = [], [], [], []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = as_hwc(cp, image)
            if img.dtype == np.float16:
                img = img.astype(np.float32)
            H, W, C = (int(v) for v in img.shape)
            window = op.window_for(chunk, row, H, W) or (0, 0, H, W)
            P = np.zeros(K.NP, dtype=np.int64)
            shapes.append(cmn_params(op, chunk, row, C, P, window))
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        rows.append(row)
        imgs.append(img)
        P_rows.append(P)
    if not rows:
        return [out]
    src_kind = "u8" if all(i.dtype == np.uint8 for i in imgs) else "f32"
    imgs = [i if src_kind == "u8" or i.dtype == np.float32 else i.astype(np.float32) for i in imgs]
    P = np.stack(P_rows)
    S, R = K.CMN_SLOTS, K.RESAMPLE_SLOTS
    for i, img in enumerate(imgs):
        P[i, R["SRC"]], P[i, R["SRC_STRIDE"]] = img.data.ptr, img.strides[0] // img.itemsize
        P[i, S["H"]], P[i, S["W"]] = img.shape[0], img.shape[1]
    results = cmn_outputs(ctx, op, shapes, P)
    ctx.launch(f"sf_cmn_{src_kind}_{CMN_KIND[np.dtype(op.out_dtype)]}", P, max(h * w for _, h, w in shapes))
    for row, r in zip(rows, results):
        out[row] = r
    return [out]
