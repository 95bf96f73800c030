"""``warp_affine`` and ``rotate`` on the GPU: one launch per (input, output) type (``kernels/warp.cu``).

The operators plan each sample on the host exactly as on the CPU
(``AffineWarp.plan``: the float32 destination-to-source matrix and the output
size; ``fill_values``: the fill in the input type), and the kernel produces
the source coordinates and samples as ``ops/warp_affine.py`` does, in
float32 without fused multiply-adds: the outputs are bit-identical.

HWC and HW images of uint8, uint16, int16 or float32, to any of those types;
sequences (FHWC, FHW) frame by frame (``AffineWarp.frame_plans``), in the same launch.
DHWC volumes run on the CPU only (a clear per-sample error here).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import PipelineDefinitionError, SampleError
from ...operator import Chunk
from ...ops.warp_affine import AffineWarp, fill_values
from ...types import InterpType
from .. import kernels as K
from ..context import GpuContext, float_bits, param_rows
from .brightness_contrast import type_suffix
from .registry import register

__all__ = ["warp_affine_gpu"]

_MAX_EXTENT = 2**31 - 1


@register(AffineWarp)
def warp_affine_gpu(op: AffineWarp, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    out: list[Any] = [None] * len(chunk)
    groups: dict[tuple[str, str], list[tuple[int, Any, np.ndarray, tuple[int, int], np.ndarray | None, np.dtype, bool,
                                            int]]] = {}
    frames_of: dict[int, list[Any]] = {}  # sequences (op.sequence): each frame warped as an image, stacked after
    for row, image in enumerate(chunk.inputs[0]):
        try:
            if not ctx.is_array(image) or image.ndim not in (2, 3, 4) or 0 in image.shape:
                raise SampleError(f"{op.name} expects a non-empty HWC or HW image, got "
                                  f"{getattr(image, 'shape', type(image).__name__)}")
            if op.sequence and image.ndim in (3, 4):  # FHW / FHWC: frame by frame, as on the CPU
                matrices, size = op.frame_plans(chunk, row, image)
                planes = [(image[f], m, f) for f, m in enumerate(matrices)]
                frames_of[row] = [None] * len(planes)
            elif image.ndim == 4:
                raise SampleError(f"{op.name}: DHWC volumes run on the CPU only; pass device='cpu' "
                                  "(keep the volume on the host)")
            else:
                matrix, size = op.plan(chunk, row, image)
                planes = [(image, matrix, -1)]
            if len(size) != 2:
                raise SampleError(f"{op.name}: an image's size must be (height, width), got {size}")
            img = ctx.as_hwc(planes[0][0])
            out_dtype = np.dtype(op.dtype or img.dtype)
            key = (type_suffix(img.dtype, op.name), type_suffix(out_dtype, op.name))
            fills = fill_values(op.fill_value, int(img.shape[2]), img.dtype)
            if img.size > _MAX_EXTENT or int(size[0]) * int(size[1]) * int(img.shape[2]) > _MAX_EXTENT:
                raise SampleError(f"{op.name}: images above 2**31 values are not supported on the GPU")
        except (SampleError, ValueError, PipelineDefinitionError) as err:
            chunk.fail(row, err if isinstance(err, SampleError) else SampleError(f"{op.name}: {err}"))
            frames_of.pop(row, None)
            continue
        for plane, matrix, frame in planes:
            groups.setdefault(key, []).append((row, ctx.as_hwc(plane), np.asarray(matrix, dtype=np.float32).reshape(6),
                                               (int(size[0]), int(size[1])), fills, out_dtype, plane.ndim == 2, frame))
    S = K.WARP_SLOTS
    linear = int(op.interp is InterpType.INTERP_LINEAR)
    for (src_t, dst_t), members in groups.items():
        C = [int(m[1].shape[2]) for m in members]
        outs = ctx.alloc([(*m[3], c) for m, c in zip(members, C)], members[0][5])
        tables = [np.asarray(m[4], dtype=np.float32) for m in members if m[4] is not None]
        staged, addresses = ctx.stage(tables) if tables else (None, [])
        fill_at = iter(addresses)
        P = param_rows(len(members))
        for j, (row, img, matrix, (oh, ow), fills, _, was_2d, frame) in enumerate(members):
            P[j, S["SRC"]], P[j, S["DST"]] = ctx.address(img), ctx.address(outs[j])
            P[j, S["FILL"]] = 0 if fills is None else next(fill_at)
            P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = img.shape[0], img.shape[1], C[j]
            P[j, S["OH"]], P[j, S["OW"]], P[j, S["INTERP"]] = oh, ow, linear
            for k in range(6):
                P[j, S[f"M{k}"]] = float_bits(matrix[k])
            result = outs[j][:, :, 0] if was_2d else outs[j]
            if frame < 0:
                out[row] = result
            else:
                frames_of[row][frame] = result
        ctx.launch(f"sf_warp_affine_{src_t}_{dst_t}", P, max(m[3][0] for m in members))
        del staged  # queued: the stream orders its reuse
    for row, frames in frames_of.items():
        out[row] = ctx.xp.stack(frames)
    return [out]
