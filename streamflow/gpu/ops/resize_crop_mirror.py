"""``resize_crop_mirror`` on the GPU: only the crop window is resampled, then flipped (one launch).

The plan is the CPU operator's (``ResizeCropMirror.plan_image``: size, roi and
window, DALI's subpixel scale and crops past the edge included); the two
resampling passes are ``resize``'s kernels and the mirror is ``flip``'s
kernel: bit-identical to the CPU. HWC and HW images (uint8, float32); DHWC
volumes run on the CPU only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.resize_crop_mirror import ResizeCropMirror
from .. import kernels as K
from ..context import GpuContext, group_by_dtype, param_rows
from ..resample import OUT_KINDS, ResampleJob, plan_resample, resample_batch
from .registry import register

__all__ = ["flip_images", "resize_crop_mirror_gpu"]


def flip_images(ctx: GpuContext, images: list[Any], flags: list[tuple[bool, bool]]) -> list[Any]:
    """HWC images flipped (horizontal, vertical) into new arrays: one launch per element size."""
    out: list[Any] = [None] * len(images)
    S = K.FLIP_SLOTS
    for dtype, members in group_by_dtype(images).items():
        outs = ctx.alloc([tuple(images[i].shape) for i in members], dtype)
        P = param_rows(len(members))
        for j, i in enumerate(members):
            img = images[i]
            P[j, S["SRC"]], P[j, S["DST"]] = ctx.address(img), ctx.address(outs[j])
            P[j, S["P"]], P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = 1, img.shape[0], img.shape[1], img.shape[2]
            P[j, S["HFLIP"]], P[j, S["VFLIP"]] = int(flags[i][0]), int(flags[i][1])
            out[i] = outs[j]
        ctx.launch(f"sf_flip_b{dtype.itemsize}", P, max(int(images[i].shape[0]) for i in members))
    return out


@register(ResizeCropMirror)
def resize_crop_mirror_gpu(op: ResizeCropMirror, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    spec = op.resize.spec
    out: list[Any] = [None] * len(chunk)
    jobs: list[ResampleJob] = []
    rows: list[tuple[int, bool, int]] = []
    dtypes: list[np.dtype] = []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            if ctx.is_array(image) and image.ndim == 4:
                raise SampleError("resize_crop_mirror: DHWC volumes run on the CPU only; pass device='cpu' "
                                  "(keep the volume on the host)")
            if not ctx.is_array(image) or image.ndim not in (2, 3):
                raise SampleError(f"resize_crop_mirror: expects HWC images, got shape {getattr(image, 'shape', None)}")
            img = ctx.as_hwc(image)
            size, roi, window = op.plan_image(chunk, row, int(img.shape[0]), int(img.shape[1]))
            out_dtype = np.dtype(spec.dtype or img.dtype)
            if out_dtype not in OUT_KINDS:
                raise SampleError(f"resize_crop_mirror: the output dtype must be uint8 or float32, got {out_dtype}")
            jobs.append(plan_resample(img, size, roi, window, spec.interp, spec.antialias, spec.mag_interp))
        except (SampleError, ValueError) as err:
            chunk.fail(row, err if isinstance(err, SampleError) else SampleError(str(err)))
            continue
        rows.append((row, image.ndim == 2, op.mirror_for(chunk, row)))
        dtypes.append(out_dtype)
    resized = resample_batch(ctx, jobs, dtypes)
    flipped = [i for i, (_, _, mirror) in enumerate(rows) if mirror & 3]
    if flipped:
        done = flip_images(ctx, [resized[i] for i in flipped], [(bool(rows[i][2] & 1), bool(rows[i][2] & 2)) for i in flipped])
        for i, r in zip(flipped, done):
            resized[i] = r
    for (row, was_2d, _), r in zip(rows, resized):
        out[row] = r[:, :, 0] if was_2d else r
    return [out]
