"""``rotate``: rotation of HWC images by an angle in degrees (CPU), as DALI.

``rotate(angle)``: counter-clockwise in degrees on the screen (y down);
``M = T(in / 2) @ R(angle) @ T(-out / 2)`` with ``R = [[c, -s], [s, c]]``
(DALI's ``RotateParamProvider``). The canvas grows to hold the whole rotated
image (``RotatedCanvasSize``): ``out_w = ceil(|cos| W + |sin| H - 0.01)``,
``out_h = ceil(|cos| H + |sin| W - 0.01)``, then each extent is made one
larger where needed to have the parity of the input extent it is mostly made
of (W for out_w when ``|sin| <= |cos|``, else H; likewise for out_h), which
keeps the centre on a pixel grid and the image sharp at small angles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk
from ..types import (
    DataType,
    Device,
    InterpType,
    Number,
)
from .arguments import fn_function
from .volume import rotated_volume_size, rotation_matrix_3d
from .warp_affine import F32, AffineWarp

__all__ = ["Rotate", "rotate", "rotated_canvas_size", "rotation_matrix"]


_D2R = F32(math.pi / 180)


def _angle_rad(angle_deg: float) -> np.float32:
    """DALI's ``deg2rad(float)``: float32 degrees times float32 pi/180."""
    return F32(F32(angle_deg) * _D2R)


def rotated_canvas_size(height: int, width: int, angle_deg: float) -> tuple[int, int]:
    """``(out_h, out_w)`` of the smallest canvas holding the rotated image (DALI's rule)."""
    a = float(_angle_rad(angle_deg))
    abs_cos, abs_sin = abs(math.cos(a)), abs(math.sin(a))
    eps = 1e-2
    out_w = math.ceil(abs_cos * width + abs_sin * height - eps)
    out_h = math.ceil(abs_cos * height + abs_sin * width - eps)
    if abs_sin <= abs_cos:
        parity_w, parity_h = width % 2, height % 2
    else:
        parity_w, parity_h = height % 2, width % 2
    out_w += (out_w % 2) ^ parity_w
    out_h += (out_h % 2) ^ parity_h
    return max(1, out_h), max(1, out_w)


def rotation_matrix(in_hw: tuple[int, int], out_hw: tuple[int, int], angle_deg: float) -> np.ndarray:
    """Destination-to-source 2x3 float32 map of a rotation about the centres."""
    theta = _angle_rad(angle_deg)
    # glibc cosf/sinf are correctly rounded; numpy's float32 SIMD versions are not always.
    c, s = F32(math.cos(float(theta))), F32(math.sin(float(theta)))
    iw2, ih2 = F32(in_hw[1]) * F32(0.5), F32(in_hw[0]) * F32(0.5)
    ow2, oh2 = F32(out_hw[1]) * F32(0.5), F32(out_hw[0]) * F32(0.5)
    tx = F32(F32(c * -ow2) + F32(-s * -oh2)) + iw2
    ty = F32(F32(s * -ow2) + F32(c * -oh2)) + ih2
    return np.array([[c, -s, tx], [s, c, ty]], dtype=F32)


class Rotate(AffineWarp):
    """Rotates HWC images counter-clockwise by ``angle`` degrees (per sample)."""

    name = "rotate"
    per_sample_args = frozenset({"angle", "size", "axis"})

    def __init__(self, angle: float | None = None, *, keep_size: bool = False, size: Any = None,
                 fill_value: Any = None, interp: Any = InterpType.INTERP_LINEAR, dtype: Any = None,
                 name: str | None = None, axis: Any = None) -> None:
        super().__init__(size=size, fill_value=fill_value, interp=interp, dtype=dtype, name=name)
        self.angle = None if angle is None else float(angle)
        self.axis = None if axis is None else tuple(float(v) for v in np.asarray(axis, dtype=np.float64).reshape(-1))
        if self.axis is not None and (len(self.axis) != 3 or not any(self.axis)):
            raise PipelineDefinitionError(f"rotate: axis must be 3 values (x, y, z), not all zero, got {axis!r}")
        self.keep_size = bool(keep_size)
        if self.keep_size and self.size is not None:
            raise PipelineDefinitionError("rotate: give keep_size=True or size, not both")

    def plan(self, chunk: Chunk, row: int, image: np.ndarray) -> tuple[np.ndarray, tuple[int, int]]:
        angle = chunk.arg("angle", row, self.angle)
        if angle is None:
            raise SampleError("rotate: no angle")
        angle = float(np.asarray(angle, dtype=np.float64).reshape(-1)[0])
        if not math.isfinite(angle):
            raise SampleError(f"rotate: the angle must be finite, got {angle}")
        in_hw = (image.shape[0], image.shape[1])
        size = self._size_for(chunk, row)
        if size is None:
            size = in_hw if self.keep_size else rotated_canvas_size(in_hw[0], in_hw[1], angle)
        return rotation_matrix(in_hw, size, angle), size

    def plan_volume(self, chunk: Chunk, row: int, volume: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
        """A DHWC volume rotated by ``angle`` about ``axis`` (x, y, z), about its centre (volume.py)."""
        angle = chunk.arg("angle", row, self.angle)
        axis = chunk.arg("axis", row, self.axis)
        if angle is None or axis is None:
            raise SampleError("rotate: a volume needs an angle and an axis (x, y, z)")
        angle = float(np.asarray(angle, dtype=np.float64).reshape(-1)[0])
        if not math.isfinite(angle):
            raise SampleError(f"rotate: the angle must be finite, got {angle}")
        in_dhw = volume.shape[:3]
        size = self._size_for(chunk, row)
        if size is None:
            size = in_dhw if self.keep_size else rotated_volume_size(in_dhw, axis, angle)
        if len(size) != 3:
            raise SampleError(f"rotate: a volume's size must be (depth, height, width), got {size}")
        return rotation_matrix_3d(in_dhw, size, axis, angle), tuple(size)

    def frame_plans(self, chunk: Chunk, row: int, frames: np.ndarray) -> tuple[list[np.ndarray], tuple[int, int]]:
        """A sequence: the sample's angle or one per frame (fn.per_frame). As DALI does, the frames share one
        canvas: the given size, the input's (keep_size) or the largest height and width of the frames' canvases."""
        value = chunk.arg("angle", row, self.angle)
        if value is None:
            raise SampleError("rotate: no angle")
        angles = np.asarray(value, dtype=np.float64).reshape(-1)
        n = frames.shape[0]
        if angles.size == 1:
            angles = np.repeat(angles, n)
        elif angles.size != n:
            raise SampleError(f"rotate: {angles.size} angles for a sequence of {n} frames (give 1 or one per frame)")
        if not np.all(np.isfinite(angles)):
            raise SampleError(f"rotate: the angles must be finite, got {angles.tolist()}")
        in_hw = (frames.shape[1], frames.shape[2])
        size = self._size_for(chunk, row)
        if size is None:
            canvases = [in_hw if self.keep_size else rotated_canvas_size(in_hw[0], in_hw[1], float(a)) for a in angles]
            size = (max(c[0] for c in canvases), max(c[1] for c in canvases))
        if len(size) != 2:
            raise SampleError(f"rotate: a frame's size must be (height, width), got {size}")
        size = (int(size[0]), int(size[1]))
        return [rotation_matrix(in_hw, size, float(a)) for a in angles], size

@fn_function()
def rotate(
    data: DataNode,
    *,
    angle: Number | DataNode,
    axis: Sequence[Number] | DataNode | None = None,
    keep_size: bool = False,
    size: Sequence[Number] | DataNode | None = None,
    fill_value: Number | Sequence[Number] | None = None,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Rotate HWC images counter-clockwise by ``angle`` degrees.

    Args:
        angle: degrees, counter-clockwise on screen (per sample:
            ``angle=fn.random.uniform(range=[-10, 10])``).
        axis: the rotation axis of DHWC volumes, ``(x, y, z)`` (any non-zero
            length; per sample allowed); images ignore it.
        keep_size: keep the input size (corners are cut off).
        size: ``(height, width)`` of the output canvas (rounded to nearest).
            Default: the smallest canvas that holds the whole rotated image.
        fill_value: value of the area outside the source image. ``None``
            (DALI's default) repeats the border pixels instead.
        interp_type: ``INTERP_LINEAR`` (default) or ``INTERP_NN``.
        dtype: output type (default: the input's).
        device: ``"cpu"`` or ``"gpu"`` (images; DHWC volumes on the CPU only).
    """
    constants, per_sample = split_arguments(dict(angle=angle, size=size, axis=axis))
    op = Rotate(
        constants.get("angle"), keep_size=keep_size, size=constants.get("size"), fill_value=fill_value,
        interp=interp_type, dtype=dtype, name=name, axis=constants.get("axis"),
    )
    if op.angle is None and "angle" not in per_sample:
        raise PipelineDefinitionError("rotate: give the angle (a number or a DataNode)")
    if keep_size and "size" in per_sample:
        raise PipelineDefinitionError("rotate: give keep_size=True or size, not both")
    layout = input_layout(data, "rotate")
    op.sequence = layout if layout.startswith("F") else ""
    return add_node(op, [data], per_sample, device=device)[0]
