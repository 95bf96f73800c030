"""``crop_mirror_normalize`` on the GPU: one launch per batch, the CPU kernel's arithmetic."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.crop_mirror_normalize import CropMirrorNormalize
from .. import kernels as K
from ..context import GpuContext, float_bits, param_rows
from .registry import register

__all__ = ["CMN_KIND", "cmn_outputs", "cmn_row", "crop_mirror_normalize_gpu"]

#: Kernel name suffix of each output type.
CMN_KIND = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.uint8): "u8"}


def cmn_row(op: CropMirrorNormalize, chunk: Chunk, row: int, channels: int,
            window: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int]]:
    """One sample's parameter row (its crop_mirror_normalize slots filled), its float32
    [mean x C, mul x C, fill x OC] channel table and its output (oc, h, w)."""
    oc, mean, mul, fill = op.channel_values(chunk, row, channels)
    table = np.asarray([*mean, *mul, *fill], dtype=np.float32)
    P = np.zeros(K.NP, dtype=np.int64)
    S = K.CMN_SLOTS
    y0, x0, h, w = window
    P[S["OH"]], P[S["OW"]], P[S["OC"]] = h, w, oc
    P[S["CHW"]] = int(op.output_layout == "CHW")
    P[S["MIRROR"]] = int(bool(int(chunk.arg("mirror", row, op.mirror))))
    P[S["Y0"]], P[S["X0"]] = y0, x0
    P[S["SHIFT"]] = float_bits(op.shift)
    return P, table, (oc, h, w)


def cmn_outputs(ctx: GpuContext, op: CropMirrorNormalize, shapes: list[tuple[int, int, int]], P: np.ndarray) -> list[Any]:
    """Allocate the outputs (in the operator's layout) and point each row's OUT slot at its own."""
    layout_shapes = [(oc, h, w) if op.output_layout == "CHW" else (h, w, oc) for oc, h, w in shapes]
    results = ctx.alloc(layout_shapes, op.out_dtype)
    for i, r in enumerate(results):
        P[i, K.CMN_SLOTS["OUT"]] = ctx.address(r)
    return results


@register(CropMirrorNormalize)
def crop_mirror_normalize_gpu(op: CropMirrorNormalize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    out: list[Any] = [None] * len(chunk)
    rows, imgs, tables, shapes, P_rows = [], [], [], [], []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = ctx.as_hwc(image)
            if img.dtype == np.float16:  # as the CPU kernel: float16 is read as float32
                img = img.astype(np.float32)
            if np.dtype(img.dtype) not in (np.dtype(np.uint8), np.dtype(np.float32)):
                raise SampleError(f"src must have dtype uint8, float32; got {img.dtype}")
            H, W, C = (int(v) for v in img.shape)
            window = op.window_for(chunk, row, H, W) or (0, 0, H, W)
            P, table, shape = cmn_row(op, chunk, row, C, window)
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        rows.append(row)
        shapes.append(shape)
        imgs.append(img)
        tables.append(table)
        P_rows.append(P)
    if not rows:
        return [out]
    kind = "u8" if all(i.dtype == np.uint8 for i in imgs) else "f32"
    imgs = [i if kind == "u8" or i.dtype == np.float32 else i.astype(np.float32) for i in imgs]
    staged, addresses = ctx.stage(tables)
    P = np.stack(P_rows) if P_rows else param_rows(0)
    S, R = K.CMN_SLOTS, K.RESAMPLE_SLOTS
    for i, img in enumerate(imgs):
        P[i, R["SRC"]], P[i, R["SRC_STRIDE"]], P[i, R["C"]] = ctx.address(img), img.strides[0] // img.itemsize, img.shape[2]
        P[i, S["H"]], P[i, S["W"]], P[i, S["CHAN"]] = img.shape[0], img.shape[1], addresses[i]
    results = cmn_outputs(ctx, op, shapes, P)
    ctx.launch(f"sf_cmn_{kind}_{CMN_KIND[np.dtype(op.out_dtype)]}", P, max(h for _, h, _ in shapes))
    del staged
    for row, r in zip(rows, results):
        out[row] = r
    return [out]
