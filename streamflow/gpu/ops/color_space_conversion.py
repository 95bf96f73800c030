"""``color_space_conversion`` on the GPU: one launch per batch (``kernels/color.cu: sf_csc``).

The kernel repeats ``ops/color_space_conversion.py``'s float32 formulas step
for step with the CPU module's own constants (``csc_constants``), so the
outputs are bit-identical. uint8 only, as on the CPU (and in DALI).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.color_space_conversion import ColorSpaceConversion, csc_constants
from ...types import ImageType
from .. import kernels as K
from ..context import GpuContext, param_rows
from .registry import register

__all__ = ["color_space_conversion_gpu", "csc_mode"]

_CHANNELS = {ImageType.RGB: 3, ImageType.BGR: 3, ImageType.YCbCr: 3, ImageType.GRAY: 1}
# (source family, destination family) -> the kernel's mode; BGR is RGB read or written reversed
_MODES = {
    ("rgb", "rgb"): 0, ("rgb", "gray"): 1, ("rgb", "ycc"): 2,
    ("gray", "rgb"): 3, ("gray", "ycc"): 4, ("gray", "gray"): 0,
    ("ycc", "gray"): 5, ("ycc", "rgb"): 6, ("ycc", "ycc"): 0,
}
_FAMILY = {ImageType.RGB: "rgb", ImageType.BGR: "rgb", ImageType.GRAY: "gray", ImageType.YCbCr: "ycc"}


def csc_mode(src: ImageType, dst: ImageType) -> tuple[int, int, int]:
    """(mode, reverse the input's channels, reverse the output's) of ``sf_csc`` for ``src -> dst``."""
    mode = _MODES[(_FAMILY[src], _FAMILY[dst])]
    if mode == 3:  # GRAY -> RGB/BGR: the three channels are equal
        return mode, 0, 0
    return mode, int(src is ImageType.BGR), int(dst is ImageType.BGR)


@register(ColorSpaceConversion)
def color_space_conversion_gpu(op: ColorSpaceConversion, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    out: list[Any] = [None] * len(chunk)
    cin, cout = _CHANNELS[op.image_type], _CHANNELS[op.output_type]
    members: list[tuple[int, Any]] = []
    for row, image in enumerate(chunk.inputs[0]):
        if not ctx.is_array(image) or image.ndim < 1 or image.shape[-1] != cin:
            chunk.fail(row, SampleError(
                f"color_space_conversion expects channels-last images with {cin} channels (HWC), "
                f"got shape {getattr(image, 'shape', type(image).__name__)}"))
        elif image.dtype != np.uint8:
            chunk.fail(row, SampleError(f"color_space_conversion accepts only uint8 images (like DALI), got {image.dtype}"))
        else:
            members.append((row, xp.ascontiguousarray(image)))
    if not members:
        return [out]
    mode, rev_in, rev_out = csc_mode(op.image_type, op.output_type)
    staged, (table,) = ctx.stage([csc_constants()])
    outs = ctx.alloc([(*m[1].shape[:-1], cout) for m in members], np.uint8)
    S = K.CSC_SLOTS
    P = param_rows(len(members))
    for j, (row, image) in enumerate(members):
        P[j, S["SRC"]], P[j, S["DST"]], P[j, S["N"]] = ctx.address(image), ctx.address(outs[j]), image.size // cin
        P[j, S["MODE"]], P[j, S["REV_IN"]], P[j, S["REV_OUT"]], P[j, S["K"]] = mode, rev_in, rev_out, table
        P[j, S["CIN"]], P[j, S["COUT"]] = cin, cout
        out[row] = outs[j]
    longest = max(m[1].size // cin for m in members)
    ctx.launch("sf_csc", P, -(-longest // K.CT_ROW))
    del staged  # queued: the stream orders its reuse
    return [out]
