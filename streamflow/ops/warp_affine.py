"""``warp_affine``: affine transforms of HWC images, with DALI's conventions (CPU).


Coordinates (DALI ``kernels/imgproc/warp``): a point is ``(x, y)`` with
``(0, 0)`` the top-left *corner* of the first pixel, so pixel ``(i, j)`` has
its centre at ``(j + 0.5, i + 0.5)``. A warp is a destination-to-source
affine map ``M`` (2x3, float32): output pixel ``(i, j)`` takes the source
value at ``M @ (j + 0.5, i + 0.5, 1)``.

Sampling (DALI's ``Sampler2D``):

* ``INTERP_LINEAR``: ``x = sx - 0.5``, ``x0 = floor(x)``, ``qx = x - x0``
  (same for y); the four taps ``(x0|x0+1, y0|y0+1)``;
  ``s0 = s00 (1 - qx) + s01 qx``, ``s1 = s10 (1 - qx) + s11 qx``,
  ``out = s0 + (s1 - s0) qy``, all in float32.
* ``INTERP_NN``: the pixel ``(floor(sy), floor(sx))``.
* A tap outside the image is ``fill_value`` (converted to the input type),
  or, when no ``fill_value`` is given, the nearest edge pixel (clamped
  indices). Only NN and LINEAR exist (as in DALI's warp kernels).
* Integer outputs are rounded half away from zero and saturated
  (DALI's ``ConvertSat``); float outputs are not rounded.
* Source coordinates are produced like DALI's CPU kernel: per row from
  ``M @ (0.5, i + 0.5, 1)``, then by adding ``M[:, 0]`` column after column
  in float32, restarting from a fresh multiple every 256 columns. So the
  float32 rounding of the coordinates, and hence the uint8 result, agrees
  with DALI's own arithmetic (measured: see ``docs/operators.md``).

The pixel work runs in C (``_native/warp.c``: the same float32 operations in
the same order, GIL released; bit-identical to the numpy code below, which
remains for the element types the kernel does not take).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import warp as native_warp
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import (
    DataType,
    Device,
    InterpType,
    Number,
    parse_dtype,
    parse_interp,
)
from .arguments import fn_function
from .transforms import is_per_frame
from .volume import warp_affine_volume

__all__ = ["AffineWarp", "F32", "WarpAffine", "fill_values", "invert_affine", "parse_size", "source_coordinates", "warp_affine", "warp_affine_image"]


F32 = np.float32


_TILE = 256  # DALI's CPU warp restarts the coordinate accumulation every 256 columns


def _as_matrix(matrix: Any, what: str = "matrix") -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float64).reshape(-1)
    if m.size != 6:
        raise ValueError(f"{what} must have 6 values (a 2x3 matrix), got {m.size}")
    if not np.all(np.isfinite(m)):
        raise ValueError(f"{what} must be finite, got {m.tolist()}")
    return m.reshape(2, 3)


def invert_affine(matrix: Any) -> np.ndarray:
    """The inverse of a 2x3 affine map (float64)."""
    m = _as_matrix(matrix)
    full = np.vstack([m, [0.0, 0.0, 1.0]])
    if abs(np.linalg.det(full[:2, :2])) < 1e-12:
        raise ValueError(f"the matrix {m.tolist()} is singular and cannot be inverted (inverse_map=False)")
    return np.linalg.inv(full)[:2]


def source_coordinates(matrix: np.ndarray, out_h: int, out_w: int) -> tuple[np.ndarray, np.ndarray]:
    """Source ``(sx, sy)`` of every output pixel, float32, as DALI's CPU kernel computes them."""
    m = np.asarray(matrix, dtype=F32).reshape(2, 3)
    y = np.arange(out_h, dtype=F32) + F32(0.5)
    half = F32(0.5)
    ntiles = max(1, -(-out_w // _TILE))
    result = []
    for r in range(2):
        row0 = (m[r, 0] * half + m[r, 1] * y) + m[r, 2]
        step = m[r, 0]
        tile_step = F32(_TILE) * step
        tiles = np.empty((out_h, ntiles), dtype=F32)
        tiles[:, 0] = row0
        tiles[:, 1:] = tile_step
        tile_start = np.add.accumulate(tiles, axis=1)
        grid = np.empty((out_h, ntiles, _TILE), dtype=F32)
        grid[:, :, 0] = tile_start
        grid[:, :, 1:] = step
        result.append(np.add.accumulate(grid, axis=2).reshape(out_h, ntiles * _TILE)[:, :out_w])
    return result[0], result[1]


def _convert_sat(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        rounded = np.where(values >= 0, np.floor(values + F32(0.5)), np.ceil(values - F32(0.5)))
        return np.clip(rounded, info.min, info.max).astype(dtype)
    return values.astype(dtype, copy=False)


def _fill_in_type(fill: float, dtype: np.dtype) -> float:
    """The fill value as DALI's sampler sees it: converted (saturated) to the input type."""
    return float(_convert_sat(np.array([fill], dtype=np.float64), dtype)[0])


def fill_values(fill_value: float | Sequence[float] | None, channels: int, dtype: Any) -> np.ndarray | None:
    """The fill of each of ``channels`` channels as DALI's sampler reads it: converted (saturated)
    to the input type ``dtype``, held in float64; ``None`` (clamp to the edge) stays ``None``.

    Raises:
        ValueError: not 1 or ``channels`` values.
    """
    if fill_value is None:
        return None
    fills = np.asarray(fill_value, dtype=np.float64).reshape(-1)
    if fills.size not in (1, channels):
        raise ValueError(f"fill_value must have 1 or {channels} values, got {fills.size}")
    converted = np.array([_fill_in_type(v, np.dtype(dtype)) for v in fills])
    return np.broadcast_to(converted, (channels,)).copy()


def warp_affine_image(
    src: np.ndarray,
    matrix: Any,
    out_size: tuple[int, int],
    *,
    interp: InterpType = InterpType.INTERP_LINEAR,
    fill_value: float | Sequence[float] | None = None,
    out_dtype: Any = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Warp an HWC (or HW) image by a destination-to-source 2x3 ``matrix``.

    Args:
        src: ``H x W x C`` or ``H x W`` image, any real dtype.
        matrix: 2x3 (or 6 values), pixel-corner coordinates ``(x, y)``.
        out_size: ``(out_h, out_w)``.
        interp: ``INTERP_LINEAR`` or ``INTERP_NN``.
        fill_value: value of source points outside the image (one, or one per
            channel); ``None`` clamps to the edge pixel.
        out_dtype: output dtype (default: the input's).
        out: where to write the result if it fits (the output's shape and
            type, C-contiguous), e.g. the sample's row of the batch array.
    """
    if not isinstance(src, np.ndarray) or src.ndim not in (2, 3):
        raise ValueError(f"expected an HWC or HW image, got {getattr(src, 'shape', type(src).__name__)}")
    if interp not in (InterpType.INTERP_LINEAR, InterpType.INTERP_NN):
        raise ValueError(f"warp interpolation must be INTERP_LINEAR or INTERP_NN, got {interp.name}")
    out_h, out_w = (int(v) for v in out_size)
    if out_h <= 0 or out_w <= 0:
        raise ValueError(f"output size must be positive, got {out_h}x{out_w}")
    was_2d = src.ndim == 2
    img = src[:, :, None] if was_2d else src
    H, W, C = img.shape
    if H == 0 or W == 0:
        raise ValueError(f"cannot warp an empty image of shape {src.shape}")
    odt = np.dtype(out_dtype) if out_dtype is not None else img.dtype
    m = _as_matrix(matrix)
    converted = fill_values(fill_value, C, img.dtype)
    fills = None if converted is None else converted.astype(img.dtype)
    target = None if out is None or not was_2d else out[:, :, None]
    try:  # the C kernel: the same float32 operations, one pass, GIL released
        result = native_warp.affine(img, m.astype(F32), (out_h, out_w), linear=interp is InterpType.INTERP_LINEAR,
                                    fill=fills, out_dtype=odt, out=out if target is None else target)
    except native_warp.KernelUnsupported:  # other element types
        result = _warp_affine_numpy(img, m, (out_h, out_w), interp, fills, odt)
    return result[:, :, 0] if was_2d else result


def _warp_affine_numpy(img: np.ndarray, matrix: np.ndarray, out_size: tuple[int, int], interp: InterpType,
                       fills: np.ndarray | None, odt: np.dtype) -> np.ndarray:
    """The numpy version of ``warp_affine_image`` (HWC; ``fills``: one per channel, in the image's type): the operations
    that ``_native/warp.c`` repeats, for the types it does not take."""
    H, W, C = img.shape
    out_h, out_w = out_size
    sx, sy = source_coordinates(matrix, out_h, out_w)
    if fills is None:
        pad, table = 0, img.reshape(H * W, C)
        lo_y, hi_y, lo_x, hi_x = 0, H - 1, 0, W - 1
    else:
        padded = np.empty((H + 2, W + 2, C), dtype=img.dtype)
        padded[...] = fills
        padded[1:-1, 1:-1] = img
        pad, table = 1, padded.reshape(-1, C)
        lo_y, hi_y, lo_x, hi_x = -1, H, -1, W
    row_len = W + 2 * pad

    def gather(iy: np.ndarray, ix: np.ndarray) -> np.ndarray:
        iy = np.clip(iy, lo_y, hi_y) + pad
        ix = np.clip(ix, lo_x, hi_x) + pad
        return table[iy * row_len + ix]

    if interp is InterpType.INTERP_NN:
        # Clip in float first: far-away points must not overflow the int conversion.
        iy = np.floor(np.clip(sy, -2, H + 1)).astype(np.int64)
        ix = np.floor(np.clip(sx, -2, W + 1)).astype(np.int64)
        out = gather(iy, ix)
        out = out if out.dtype == odt else _convert_sat(out.astype(F32), odt)
    else:
        # Far-away points (all four taps outside) only need a finite integer index.
        x = np.clip(sx, F32(-1e6), F32(1e6)) - F32(0.5)
        y = np.clip(sy, F32(-1e6), F32(1e6)) - F32(0.5)
        fx, fy = np.floor(x), np.floor(y)
        qx, qy = (x - fx)[..., None], (y - fy)[..., None]
        px = F32(1) - qx
        x0, y0 = fx.astype(np.int64), fy.astype(np.int64)
        s00 = gather(y0, x0).astype(F32)
        s01 = gather(y0, x0 + 1).astype(F32)
        s0 = s00 * px + s01 * qx
        s10 = gather(y0 + 1, x0).astype(F32)
        s11 = gather(y0 + 1, x0 + 1).astype(F32)
        s1 = s10 * px + s11 * qx
        out = _convert_sat(s0 + (s1 - s0) * qy, odt)
    return out


def _interp(value: Any, op_name: str) -> InterpType:
    interp = parse_interp(value) if isinstance(value, str) else value
    if interp not in (InterpType.INTERP_LINEAR, InterpType.INTERP_NN):
        raise PipelineDefinitionError(f"{op_name}: interp_type must be INTERP_LINEAR or INTERP_NN, got {interp}")
    return interp


def _out_dtype(value: Any, op_name: str) -> np.dtype | None:
    if value is None:
        return None
    dt = parse_dtype(value).numpy
    if not (np.issubdtype(dt, np.integer) or np.issubdtype(dt, np.floating)):
        raise PipelineDefinitionError(f"{op_name}: dtype must be numeric, got {dt}")
    return dt


def _fill(value: Any, op_name: str) -> tuple[float, ...] | None:
    if value is None:
        return None
    try:
        values = tuple(float(v) for v in np.asarray(value, dtype=np.float64).reshape(-1))
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"{op_name}: fill_value must be a number, got {value!r}") from None
    if not values:
        raise PipelineDefinitionError(f"{op_name}: fill_value must not be empty")
    return values


def parse_size(value: Any, op_name: str) -> tuple[int, ...] | None:
    """DALI's ``size=(h, w)`` (volumes: ``(d, h, w)``): rounded to nearest, at least 1; empty: not given."""
    if value is None:
        return None
    values = [float(v) for v in np.asarray(value, dtype=np.float64).reshape(-1)]
    if not values:
        return None
    if len(values) not in (2, 3) or any(not (v > 0) for v in values):
        raise PipelineDefinitionError(
            f"{op_name}: size must be (height, width) or (depth, height, width) with positive values, got {value!r}")
    return tuple(max(1, int(math.floor(v + 0.5))) for v in values)


class AffineWarp(Operator):
    """Shared part of rotate and warp_affine: per-sample size, sampling, errors."""

    keeps_channels = True
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, *, size: Any, fill_value: Any, interp: Any, dtype: Any, name: str | None) -> None:
        super().__init__(name=name)
        self.size = parse_size(size, self.name)
        self.fill_value = _fill(fill_value, self.name)
        self.interp = _interp(interp, self.name)
        self.dtype = _out_dtype(dtype, self.name)
        #: an image given per-frame matrices: warped once per frame into a sequence (set by fn.warp_affine)
        self.broadcast_frames = False
        #: the input's layout when it is a sequence (``F...``): every frame warped (set by fn.rotate / fn.warp_affine)
        self.sequence = ""

    def _size_for(self, chunk: Chunk, row: int) -> Any:
        value = chunk.arg("size", row, None)
        size = self.size if value is None else parse_size(value, self.name)
        return size

    def plan(self, chunk: Chunk, row: int, image: np.ndarray) -> tuple[np.ndarray, tuple[int, int]]:
        raise NotImplementedError

    def plan_volume(self, chunk: Chunk, row: int, volume: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
        """(3x4 destination-to-source matrix, (d, h, w)) of a DHWC volume."""
        raise SampleError(f"{self.name}: volumes are not supported")

    def frame_plans(self, chunk: Chunk, row: int, frames: np.ndarray) -> tuple[list[np.ndarray], tuple[int, int]]:
        """(one destination-to-source 2x3 matrix per frame, the (h, w) shared by the frames) of a sequence."""
        raise SampleError(f"{self.name}: sequences are not supported")

    def _sequence(self, chunk: Chunk, row: int, frames: np.ndarray) -> np.ndarray:
        matrices, size = self.frame_plans(chunk, row, frames)
        return np.stack([warp_affine_image(f, m, size, interp=self.interp, fill_value=self.fill_value,
                                           out_dtype=self.dtype) for f, m in zip(frames, matrices)])

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, image in enumerate(chunk.inputs[0]):
            try:
                if not isinstance(image, np.ndarray) or image.ndim not in (2, 3, 4) or 0 in image.shape:
                    raise SampleError(f"{self.name} expects a non-empty HWC or HW image or DHWC volume, got "
                                      f"{getattr(image, 'shape', type(image).__name__)}")
                if self.sequence and image.ndim in (3, 4):  # FHW / FHWC: frame by frame (DALI)
                    out.append(self._sequence(chunk, row, image))
                    continue
                if image.ndim == 4:  # DHWC volume (volume.py)
                    matrix, dhw = self.plan_volume(chunk, row, image)
                    out.append(warp_affine_volume(image, matrix, dhw, interp=self.interp,
                                                  fill_value=self.fill_value, out_dtype=self.dtype))
                    continue
                if self.broadcast_frames:
                    out.append(self._frames(chunk, row, image))
                    continue
                matrix, size = self.plan(chunk, row, image)
                if len(size) != 2:
                    raise SampleError(f"{self.name}: an image's size must be (height, width), got {size}")
                shape = tuple(size) + image.shape[2:]
                out.append(warp_affine_image(
                    image, matrix, size, interp=self.interp, fill_value=self.fill_value, out_dtype=self.dtype,
                    out=chunk.output_buffer(row, shape, self.dtype or image.dtype),
                ))
            except (SampleError, ValueError, PipelineDefinitionError) as err:
                chunk.fail(row, err if isinstance(err, SampleError) else SampleError(f"{self.name}: {err}"))
                out.append(None)
        return [out]

    def _frames(self, chunk: Chunk, row: int, image: np.ndarray) -> np.ndarray:
        """DALI: an image warped by per-frame matrices becomes a sequence, one frame per matrix."""
        matrices = np.asarray(chunk.arg("matrix", row, None), dtype=np.float64)
        if matrices.ndim != 3 or matrices.shape[1:] != (2, 3):
            raise SampleError(f"{self.name}: per-frame matrices must be (frames, 2, 3), got {matrices.shape}")
        size = self._size_for(chunk, row) or (image.shape[0], image.shape[1])
        if len(size) != 2:
            raise SampleError(f"{self.name}: an image's size must be (height, width), got {size}")
        dst_to_src = getattr(self, "_dst_to_src", _as_matrix)
        return np.stack([warp_affine_image(image, dst_to_src(m), size, interp=self.interp, fill_value=self.fill_value,
                                           out_dtype=self.dtype) for m in matrices])

    def layout(self, index: int) -> str:
        return self.sequence or ("FHWC" if self.broadcast_frames else "HWC")


class WarpAffine(AffineWarp):
    """Applies a 2x3 affine map (per sample allowed) to HWC images."""

    name = "warp_affine"
    per_sample_args = frozenset({"matrix", "size"})

    def __init__(self, matrix: Any = None, *, inverse_map: bool = True, size: Any = None,
                 fill_value: Any = None, interp: Any = InterpType.INTERP_LINEAR, dtype: Any = None,
                 name: str | None = None) -> None:
        super().__init__(size=size, fill_value=fill_value, interp=interp, dtype=dtype, name=name)
        self.inverse_map = bool(inverse_map)
        self.matrix = None
        if matrix is not None:
            try:
                self.matrix = self._dst_to_src(matrix)
            except ValueError as err:
                raise PipelineDefinitionError(f"warp_affine: {err}") from None

    def _dst_to_src(self, matrix: Any) -> np.ndarray:
        if np.asarray(matrix).size == 12:  # a volume's 3x4 matrix
            m3 = np.asarray(matrix, dtype=np.float64).reshape(3, 4)
            if not self.inverse_map:
                full = np.vstack([m3, [0.0, 0.0, 0.0, 1.0]])
                if abs(np.linalg.det(full[:3, :3])) < 1e-12:
                    raise ValueError(f"the matrix {m3.tolist()} is singular and cannot be inverted")
                m3 = np.linalg.inv(full)[:3]
            return m3.astype(F32)
        m = _as_matrix(matrix)
        return (m if self.inverse_map else invert_affine(m)).astype(F32)

    def plan_volume(self, chunk: Chunk, row: int, volume: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
        value = chunk.arg("matrix", row, None)
        matrix = self.matrix if value is None else self._dst_to_src(value)
        if matrix is None or matrix.size != 12:
            raise SampleError("warp_affine: a volume needs a 3x4 matrix (12 values)")
        size = self._size_for(chunk, row) or volume.shape[:3]
        if len(size) != 3:
            raise SampleError(f"warp_affine: a volume's size must be (depth, height, width), got {size}")
        return matrix, tuple(size)

    def plan(self, chunk: Chunk, row: int, image: np.ndarray) -> tuple[np.ndarray, tuple[int, int]]:
        value = chunk.arg("matrix", row, None)
        matrix = self.matrix if value is None else self._dst_to_src(value)
        if matrix is None or matrix.size != 6:
            raise SampleError("warp_affine: an image needs a 2x3 matrix (6 values)")
        size = self._size_for(chunk, row) or (image.shape[0], image.shape[1])
        return matrix, size

    def frame_plans(self, chunk: Chunk, row: int, frames: np.ndarray) -> tuple[list[np.ndarray], tuple[int, int]]:
        """One matrix for every frame, or one per frame (``(frames, 2, 3)``: fn.per_frame, per-frame transforms)."""
        value = chunk.arg("matrix", row, None)
        n = frames.shape[0]
        if value is None:
            if self.matrix is None or self.matrix.size != 6:
                raise SampleError("warp_affine: the frames of a sequence need a 2x3 matrix (6 values)")
            matrices = [self.matrix] * n
        else:
            values = np.asarray(value, dtype=np.float64)
            if values.size == 6:
                matrices = [self._dst_to_src(values)] * n
            elif values.size == 6 * n:
                matrices = [self._dst_to_src(m) for m in values.reshape(n, 2, 3)]
            else:
                raise SampleError(f"warp_affine: a sequence of {n} frames needs one 2x3 matrix or one per frame "
                                  f"({6 * n} values), got {values.size} values")
        size = self._size_for(chunk, row) or (frames.shape[1], frames.shape[2])
        if len(size) != 2:
            raise SampleError(f"warp_affine: a frame's size must be (height, width), got {size}")
        return matrices, (int(size[0]), int(size[1]))

@fn_function()
def warp_affine(
    data: DataNode,
    mtx: DataNode | None = None,
    /,
    *,
    matrix: Sequence[Number] | DataNode | None = None,
    inverse_map: bool = True,
    size: Sequence[Number] | DataNode | None = None,
    fill_value: Number | Sequence[Number] | None = None,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Apply an affine transform to HWC images.

    Args:
        matrix: ``(m11, m12, m13, m21, m22, m23)`` (or 2x3; 3x4 for DHWC volumes,
            in ``(x, y, z)`` coordinates): with
            ``inverse_map=True`` (default) a destination-to-source map,
            ``dst(x, y) = src(m11 x + m12 y + m13, m21 x + m22 y + m23)``, where
            ``(0, 0)`` is the top-left corner of the first pixel. Per sample allowed.
        inverse_map: ``False`` if ``matrix`` maps source to destination (it is inverted).
        size: ``(height, width)`` of the output (default: the input's).
        fill_value: value outside the source image; ``None`` repeats the border.
        interp_type: ``INTERP_LINEAR`` (default) or ``INTERP_NN``.
        dtype: output type (default: the input's).
        device: ``"cpu"`` or ``"gpu"`` (images; DHWC volumes on the CPU only).
        mtx: DALI's positional matrix input (e.g. ``fn.transforms.rotation(...)``); exclusive with ``matrix``.
    """
    if mtx is not None:
        if matrix is not None:
            raise PipelineDefinitionError("warp_affine: give the matrix once: as the second input or as matrix=")
        matrix = mtx
    constants, per_sample = split_arguments(dict(matrix=matrix, size=size))
    op = WarpAffine(
        constants.get("matrix"), inverse_map=inverse_map, size=constants.get("size"), fill_value=fill_value,
        interp=interp_type, dtype=dtype, name=name,
    )
    if op.matrix is None and "matrix" not in per_sample:
        raise PipelineDefinitionError("warp_affine: give the matrix (6 numbers or a DataNode)")
    # per-frame matrices (fn.per_frame, per-frame transforms) on an image: one output frame per matrix
    layout = input_layout(data, "warp_affine")
    op.broadcast_frames = "matrix" in per_sample and is_per_frame(per_sample["matrix"]) and not layout.startswith("F")
    op.sequence = layout if layout.startswith("F") else ""
    return add_node(op, [data], per_sample, device=device)[0]
