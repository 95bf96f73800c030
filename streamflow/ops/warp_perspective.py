"""``experimental.warp_perspective`` (a 3x3 homography, as DALI 2.4's CPU operator) and ``experimental.remap``.

Output pixel ``(x, y)`` takes the source at ``((m11 x + m12 y + m13) / w,
(m21 x + m22 y + m23) / w)``, ``w = m31 x + m32 y + m33`` (``inverse_map=True``;
else the inverse matrix is used), like OpenCV's ``warpPerspective`` with
``WARP_INVERSE_MAP``. ``pixel_origin="center"``: pixel centres at integer
coordinates (OpenCV); ``"corner"`` (default): at ``+0.5``, i.e. the matrix
maps ``(x + 0.5, y + 0.5)`` and 0.5 is taken off the result. Bilinear
(double precision) or nearest (rounding half to even, as measured on DALI
2.4's CPU operator). Outside the image: ``border_mode`` ``constant``
(``fill_value``, default 0), ``replicate``, ``reflect`` (edge repeated),
``reflect_101``, ``wrap``. Integer outputs are rounded and saturated.

Both sample in C (``_native/warp.c``: the same double-precision operations,
GIL released), bit-identical to the numpy code kept here for float16 and
64-bit integers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import warp as native_warp
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, require_node, split_arguments
from ..operator import Chunk, Operator
from ..types import Device, InterpType, Number, parse_interp
from .arguments import fn_function
from .slice import border_index

__all__ = ["Remap", "WarpPerspective", "remap", "sample_image", "warp_perspective", "warp_perspective_image"]

_BORDERS = {"constant": "constant", "replicate": "edge", "reflect": "reflect_1001", "reflect_101": "reflect_101",
            "wrap": "wrap"}


def _matrix(value: Any, inverse_map: bool) -> np.ndarray:
    flat = np.asarray(value, dtype=np.float64).reshape(-1)
    if flat.size != 9 or not np.all(np.isfinite(flat)):
        raise ValueError(f"the matrix must be 9 finite values (3x3), got {flat.size}")
    m: np.ndarray = flat.reshape(3, 3)
    if not inverse_map:
        if abs(np.linalg.det(m)) < 1e-12:
            raise ValueError(f"the matrix {m.tolist()} is singular and cannot be inverted (inverse_map=False)")
        m = np.asarray(np.linalg.inv(m))
    return m


def _taps(coords: np.ndarray, n: int, border: str) -> tuple[np.ndarray, np.ndarray]:
    """Indices into [0, n) (or -1 for a constant border) and whether they were inside."""
    inside = (coords >= 0) & (coords < n)
    if border == "constant":
        return np.where(inside, coords, -1), inside
    return border_index(coords, n, border), np.ones_like(inside)  # slice's border policies


def _fills(fill: Sequence[float], channels: int) -> np.ndarray:
    """The constant border's value per channel (float64, unconverted; default 0)."""
    if not len(fill):
        return np.zeros(channels)
    return np.broadcast_to(np.asarray(fill, dtype=np.float64).reshape(-1), (channels,))


def _native_sample(src: np.ndarray, out_size: tuple[int, ...], fill: Sequence[float], *, half: float,
                   interp: InterpType, border: str, matrix: np.ndarray | None = None, mapx: np.ndarray | None = None,
                   mapy: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray | None:
    """The C kernel (``_native/warp.c``: the numpy code's double-precision operations, in one pass with the
    GIL released) from a homography or maps, into ``out`` if it fits; ``None`` for the types it does not take."""
    was_2d = src.ndim == 2
    img = src[:, :, None] if was_2d else src
    target = out[:, :, None] if out is not None and was_2d and out.ndim == 2 else out
    try:
        result = native_warp.perspective(img, (int(out_size[0]), int(out_size[1])), matrix=matrix, mapx=mapx,
                                         mapy=mapy, half=half, linear=interp is not InterpType.INTERP_NN,
                                         border=border, fill=_fills(fill, img.shape[2]), out=target)
    except native_warp.KernelUnsupported:
        return None
    return result[:, :, 0] if was_2d else result


def warp_perspective_image(src: np.ndarray, matrix: np.ndarray, out_size: tuple[int, int], *,
                           interp: InterpType, border: str, fill: Sequence[float], corner: bool = True,
                           out: np.ndarray | None = None) -> np.ndarray:
    """Warp an HWC (or HW) image by the destination-to-source homography ``matrix`` (see the module doc);
    into ``out`` when it fits (the result's shape and type, C-contiguous: e.g. the sample's batch row)."""
    oh, ow = out_size
    half = 0.5 if corner else 0.0  # "corner": (0, 0) is the top-left corner, pixel centres at +0.5
    native = _native_sample(src, (oh, ow), fill, matrix=matrix, half=half, interp=interp, border=border, out=out)
    if native is not None:
        return native
    y, x = np.meshgrid(np.arange(oh, dtype=np.float64) + half, np.arange(ow, dtype=np.float64) + half, indexing="ij")
    m = matrix
    w = m[2, 0] * x + m[2, 1] * y + m[2, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_w = np.where(w != 0, 1.0 / w, 0.0)
    sx = (m[0, 0] * x + m[0, 1] * y + m[0, 2]) * inv_w - half
    sy = (m[1, 0] * x + m[1, 1] * y + m[1, 2]) * inv_w - half
    return sample_image(src, sx, sy, interp=interp, border=border, fill=fill)


def sample_image(src: np.ndarray, sx: np.ndarray, sy: np.ndarray, *, interp: InterpType, border: str,
                 fill: Sequence[float]) -> np.ndarray:
    """``src`` (HWC or HW) at the source points ``(sx, sy)`` (pixel centres at integers), one per output pixel.

    Bilinear in double precision or nearest (half to even); points outside take the ``border`` policy
    (``constant``: ``fill``, default 0). Integer outputs are rounded and saturated.
    """
    if sx.ndim == 2 and sx.shape == sy.shape and sx.dtype == sy.dtype == np.float64:
        native = _native_sample(src, sx.shape, fill, mapx=sx, mapy=sy, half=0.0, interp=interp, border=border)
        if native is not None:
            return native
    was_2d = src.ndim == 2
    img = src[:, :, None] if was_2d else src
    H, W, C = img.shape
    fills = _fills(fill, C)
    table = np.concatenate([img.reshape(-1, C).astype(np.float64), fills[None, :]])  # last row: the fill
    big = float(1 << 30)

    def gather(iy: np.ndarray, ix: np.ndarray) -> np.ndarray:
        ty, ok_y = _taps(iy, H, border)
        tx, ok_x = _taps(ix, W, border)
        index = np.where(ok_y & ok_x, ty * W + tx, H * W)
        return table[index]

    if interp is InterpType.INTERP_NN:
        iy = np.rint(np.clip(sy, -big, big)).astype(np.int64)
        ix = np.rint(np.clip(sx, -big, big)).astype(np.int64)
        out = gather(iy, ix)
    else:
        fy, fx = np.floor(np.clip(sy, -big, big)), np.floor(np.clip(sx, -big, big))
        y0, x0 = fy.astype(np.int64), fx.astype(np.int64)
        ay, ax = (np.clip(sy, -big, big) - fy)[..., None], (np.clip(sx, -big, big) - fx)[..., None]
        top = gather(y0, x0) * (1 - ax) + gather(y0, x0 + 1) * ax
        bottom = gather(y0 + 1, x0) * (1 - ax) + gather(y0 + 1, x0 + 1) * ax
        out = top * (1 - ay) + bottom * ay
    if img.dtype.kind in "ui":
        info = np.iinfo(img.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    out = out.astype(img.dtype)
    return out[:, :, 0] if was_2d else out


class WarpPerspective(Operator):
    """Applies a 3x3 homography (constant, per-sample argument, or a positional input) to images."""

    keeps_channels = True
    name = "experimental.warp_perspective"
    per_sample_args = frozenset({"matrix", "size"})

    def __init__(self, *, matrix: Any = None, matrix_input: bool = False, size: Any = None, inverse_map: bool = True,
                 border_mode: str = "constant", fill_value: Any = (), interp: Any = InterpType.INTERP_LINEAR,
                 pixel_origin: str = "corner", name: str | None = None) -> None:
        super().__init__(name=name)
        self.corner = pixel_origin == "corner"
        self.inverse_map = bool(inverse_map)
        try:
            self.matrix = None if matrix is None else _matrix(matrix, self.inverse_map)
        except ValueError as err:
            raise PipelineDefinitionError(f"experimental.warp_perspective: {err}") from None
        self.matrix_input = matrix_input
        self.size = None if size is None or not np.asarray(size).size else _size(size)
        if border_mode not in _BORDERS:
            raise PipelineDefinitionError(
                f"experimental.warp_perspective: border_mode must be one of {sorted(_BORDERS)}, got {border_mode!r}")
        self.border = _BORDERS[border_mode]
        self.fill = tuple(float(v) for v in np.asarray(fill_value, dtype=np.float64).reshape(-1))
        self.interp = parse_interp(interp) if isinstance(interp, str) else interp
        if self.interp not in (InterpType.INTERP_LINEAR, InterpType.INTERP_NN):
            raise PipelineDefinitionError("experimental.warp_perspective: interp_type must be INTERP_LINEAR or INTERP_NN")

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, image: Any) -> np.ndarray:
            img = np.asarray(image)
            if img.ndim not in (2, 3) or 0 in img.shape or img.dtype.kind not in "uif":
                raise SampleError(f"experimental.warp_perspective: expects a non-empty HWC or HW image, got "
                                  f"{img.shape} {img.dtype}")
            value = chunk.inputs[1][row] if self.matrix_input else chunk.arg("matrix", row, None)
            try:
                matrix = self.matrix if value is None else _matrix(value, self.inverse_map)
            except ValueError as err:
                raise SampleError(f"experimental.warp_perspective: {err}") from None
            if matrix is None:
                raise SampleError("experimental.warp_perspective: no matrix")
            size_arg = chunk.arg("size", row, None)
            size = _size(size_arg) if size_arg is not None else self.size or img.shape[:2]
            channels = img.shape[2] if img.ndim == 3 else 1
            if len(self.fill) not in (0, 1, channels):
                raise SampleError(f"experimental.warp_perspective: fill_value has {len(self.fill)} values for "
                                  f"{channels} channels")
            out_hw = (int(size[0]), int(size[1]))
            return warp_perspective_image(img, matrix, out_hw, interp=self.interp, border=self.border,
                                          fill=self.fill, corner=self.corner,
                                          out=chunk.output_buffer(row, out_hw + img.shape[2:], img.dtype))

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return "HWC"


def _size(value: Any) -> tuple[int, int]:
    values = [float(v) for v in np.asarray(value, dtype=np.float64).reshape(-1)]
    if len(values) != 2 or any(not v > 0 for v in values):
        raise SampleError(f"experimental.warp_perspective: size must be (height, width) > 0, got {values}")
    return int(round(values[0])), int(round(values[1]))


@fn_function()
def warp_perspective(
    data: DataNode,
    matrix_input: DataNode | None = None,
    /,
    *,
    matrix: Sequence[Number] | DataNode | None = None,
    size: Sequence[Number] | DataNode | None = None,
    inverse_map: bool = True,
    border_mode: str = "constant",
    fill_value: Number | Sequence[Number] = (),
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    pixel_origin: str = "corner",
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Apply a perspective transform (3x3 homography) to HWC or HW images (OpenCV's ``warpPerspective``).

    Args:
        matrix_input: (positional) the matrix per sample, instead of ``matrix``.
        matrix: 9 values, destination to source (``inverse_map=False``: source to destination).
        size: ``(height, width)`` of the output (default: the input's; *per sample*).
        border_mode: ``constant``, ``replicate``, ``reflect``, ``reflect_101``, ``wrap``.
        fill_value: the constant border's value (one, or one per channel; default 0).
        interp_type: ``INTERP_LINEAR`` or ``INTERP_NN``.
        pixel_origin: ``corner`` (pixel centres at +0.5) or ``center`` (at integers, as OpenCV).
    """
    if pixel_origin not in ("corner", "center"):
        raise PipelineDefinitionError(f"experimental.warp_perspective: pixel_origin must be 'corner' or 'center', "
                                      f"got {pixel_origin!r}")
    constants, per_sample = split_arguments(dict(matrix=matrix, size=size))
    if matrix_input is not None and matrix is not None:
        raise PipelineDefinitionError("experimental.warp_perspective: give the matrix as an input or an argument")
    op = WarpPerspective(matrix=constants.get("matrix"), matrix_input=matrix_input is not None,
                         size=constants.get("size"), inverse_map=inverse_map, border_mode=border_mode,
                         fill_value=fill_value, interp=interp_type, pixel_origin=pixel_origin, name=name)
    if matrix_input is None and op.matrix is None and "matrix" not in per_sample:
        raise PipelineDefinitionError("experimental.warp_perspective: give the matrix (9 values)")
    inputs = [require_node(data, "experimental.warp_perspective")]
    if matrix_input is not None:
        inputs.append(require_node(matrix_input, "experimental.warp_perspective", 1))
    return add_node(op, inputs, per_sample, device=device)[0]


# --- experimental.remap ---------------------------------------------------------------------------


class Remap(Operator):
    """``output(x, y) = input(mapx(x, y), mapy(x, y))`` for HWC / HW images (constant 0 border)."""

    keeps_channels = True
    name = "experimental.remap"

    def __init__(self, *, interp: Any = InterpType.INTERP_LINEAR, pixel_origin: str = "corner",
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.interp = parse_interp(interp) if isinstance(interp, str) else interp
        if self.interp not in (InterpType.INTERP_LINEAR, InterpType.INTERP_NN):
            raise PipelineDefinitionError("experimental.remap: interp must be INTERP_LINEAR or INTERP_NN")
        if pixel_origin not in ("corner", "center"):
            raise PipelineDefinitionError(f"experimental.remap: pixel_origin must be 'corner' or 'center', "
                                          f"got {pixel_origin!r}")
        self.half = 0.5 if pixel_origin == "corner" else 0.0

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, image: Any) -> np.ndarray:
            img = np.asarray(image)
            mx, my = (_map(chunk.inputs[k][row]) for k in (1, 2))
            if img.ndim not in (2, 3) or 0 in img.shape or img.dtype.kind not in "uif":
                raise SampleError(f"experimental.remap: expects a non-empty HWC or HW image, got {img.shape}")
            if mx.shape != my.shape:
                raise SampleError(f"experimental.remap: mapx {mx.shape} and mapy {my.shape} differ in shape")
            if mx.ndim == 3 and mx.shape[2] == 1:
                mx, my = mx[:, :, 0], my[:, :, 0]
            if mx.ndim != 2:
                raise SampleError(f"experimental.remap: the maps must be HW (or HW1), got {mx.shape}")
            native = _native_sample(img, mx.shape, (0.0,), mapx=mx, mapy=my, half=self.half, interp=self.interp,
                                    border="constant", out=chunk.output_buffer(row, mx.shape + img.shape[2:], img.dtype))
            if native is not None:
                return native
            mx, my = mx.astype(np.float64, copy=False), my.astype(np.float64, copy=False)
            return sample_image(img, mx - self.half, my - self.half, interp=self.interp, border="constant",
                                fill=(0.0,))

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return "HWC"


def _map(value: Any) -> np.ndarray:
    """A remap coordinate map: float32 as given (the kernel widens it exactly), anything else as float64."""
    arr = np.asarray(value)
    return arr if arr.dtype == np.float32 else arr.astype(np.float64)


@fn_function()
def remap(
    data: DataNode,
    mapx: DataNode,
    mapy: DataNode,
    /,
    *,
    interp: str | InterpType = InterpType.INTERP_LINEAR,
    pixel_origin: str = "corner",
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """``output(x, y) = input(mapx(x, y), mapy(x, y))``: a generic geometric transform of HWC / HW images.

    Args:
        mapx, mapy: float source coordinates per output pixel (HW or HW1; the output takes their size).
        interp: ``INTERP_LINEAR`` (default) or ``INTERP_NN``.
        pixel_origin: ``corner`` (default: pixel centres at +0.5) or ``center`` (as OpenCV's ``remap``).

    Points outside the input are 0 (DALI's only border). DALI 2.4 runs this operator on the GPU only;
    this one runs on the CPU, with ``warp_perspective``'s sampler.
    """
    nodes = [require_node(v, "experimental.remap", i) for i, v in enumerate((data, mapx, mapy))]
    return add_node(Remap(interp=interp, pixel_origin=pixel_origin, name=name), nodes, device=device)[0]
