"""The two resampling passes of ``resize`` on the GPU, shared by resize and the fused resize + normalize.

The geometry comes from the C resampler's own planner
(``imgproc.resample_plan``: taps, weights, pass order), so both passes sum
exactly what the CPU sums, in the same order. Pass 1 runs over the source
lines the second pass needs (the C code's ``lo``..``hi``) into a float32
intermediate; pass 2 reads the intermediate. ``queue_first_pass`` launches
pass 1 for a batch and returns the parameter rows of pass 2 for the caller to
complete (destination, or the normalize epilogue) and launch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._native import imgproc
from ..errors import SampleError
from ..types import InterpType
from . import kernels as K
from .context import GpuContext, param_rows

__all__ = ["ResampleJob", "plan_resample", "queue_first_pass"]

S = K.RESAMPLE_SLOTS


@dataclass
class ResampleJob:
    """One sample's resize: its image, the window of the output to compute, and the plan."""

    image: Any  # HWC, uint8 or float32, contiguous pixels
    window: tuple[int, int, int, int]  # (y0, x0, h, w) of the full output size
    plan: imgproc.ResamplePlan


def plan_resample(
    image: Any, size: tuple[int, int], roi: Any, window: tuple[int, int, int, int],
    interp: InterpType, antialias: bool, mag_interp: InterpType | None = None,
) -> ResampleJob:
    """Plan resizing ``image`` (HWC) to ``size`` and computing ``window`` of it (``interp``: the
    filter of downscaled axes, ``mag_interp`` of the others; default ``interp``).

    Raises:
        SampleError: an image dtype the resampler does not take (as on the
            CPU: uint8 and float32), or a bad roi.
    """
    if np.dtype(image.dtype) not in (np.dtype(np.uint8), np.dtype(np.float32)):
        raise SampleError(f"src must have dtype uint8, float32; got {np.dtype(image.dtype)}")
    try:
        plan = imgproc.resample_plan(tuple(image.shape), size, window=window, interp=interp,
                                     antialias=antialias, roi=roi, mag_interp=mag_interp)
    except ValueError as err:
        raise SampleError(str(err)) from None
    return ResampleJob(image, window, plan)


def queue_first_pass(ctx: GpuContext, jobs: Sequence[ResampleJob]) -> tuple[np.ndarray, list[Any]]:
    """Launch pass 1 for every job; return pass 2's parameter rows (without a destination).

    Returns:
        (pass-2 parameters: SRC, taps, axis set; DST/epilogue left to the
        caller; the buffers to keep referenced until pass 2 is queued)
    """
    n = len(jobs)
    kind = "u8" if all(j.image.dtype == np.uint8 for j in jobs) else "f32"
    images = [j.image if kind == "u8" or j.image.dtype == np.float32 else j.image.astype(np.float32) for j in jobs]
    tables: list[np.ndarray] = []
    for j in jobs:
        tables += [j.plan.y.taps, j.plan.y.weights, j.plan.x.taps, j.plan.x.weights]
    staged, addresses = ctx.stage(tables)
    tmp_shapes = []
    for j, img in zip(jobs, images):
        C = img.shape[2]
        _, _, wh, ww = j.window
        if j.plan.vertical_first:  # every output row, over the source columns pass 2 needs
            tmp_shapes.append((wh, j.plan.x.hi - j.plan.x.lo + 1, C))
        else:  # every output column, over the source rows pass 2 needs
            tmp_shapes.append((j.plan.y.hi - j.plan.y.lo + 1, ww, C))
    tmps = ctx.alloc(tmp_shapes, np.float32)
    P1, P2 = param_rows(n), param_rows(n)
    rows1 = rows2 = 0
    for i, (j, img, tmp) in enumerate(zip(jobs, images, tmps)):
        y_taps, y_w, x_taps, x_w = addresses[4 * i: 4 * i + 4]
        C = img.shape[2]
        _, _, wh, ww = j.window
        a, b = P1[i], P2[i]
        a[S["SRC"]], a[S["SRC_STRIDE"]] = ctx.address(img), img.strides[0] // img.itemsize
        a[S["DST"]], a[S["DST_STRIDE"]] = ctx.address(tmp), tmp.shape[1] * C
        b[S["SRC"]], b[S["SRC_STRIDE"]] = ctx.address(tmp), tmp.shape[1] * C
        a[S["C"]] = b[S["C"]] = C
        if j.plan.vertical_first:
            a[S["AXIS"]], a[S["OUT_LEN"]], a[S["OTHER_LEN"]], a[S["OTHER0"]] = 0, wh, tmp.shape[1], j.plan.x.lo
            a[S["SUPPORT"]], a[S["IDX"]], a[S["W"]] = j.plan.y.support, y_taps, y_w
            b[S["AXIS"]], b[S["OUT_LEN"]], b[S["OTHER_LEN"]], b[S["TAP0"]] = 1, ww, wh, j.plan.x.lo
            b[S["SUPPORT"]], b[S["IDX"]], b[S["W"]] = j.plan.x.support, x_taps, x_w
            rows1 = max(rows1, wh)
        else:
            a[S["AXIS"]], a[S["OUT_LEN"]], a[S["OTHER_LEN"]], a[S["OTHER0"]] = 1, ww, tmp.shape[0], j.plan.y.lo
            a[S["SUPPORT"]], a[S["IDX"]], a[S["W"]] = j.plan.x.support, x_taps, x_w
            b[S["AXIS"]], b[S["OUT_LEN"]], b[S["OTHER_LEN"]], b[S["TAP0"]] = 0, wh, ww, j.plan.y.lo
            b[S["SUPPORT"]], b[S["IDX"]], b[S["W"]] = j.plan.y.support, y_taps, y_w
            rows1 = max(rows1, tmp.shape[0])
        rows2 = max(rows2, wh)
    ctx.launch(f"sf_resample_{kind}_f32", P1, rows1)
    return P2, [staged, tmps, images]
