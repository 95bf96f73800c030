"""DALI's displacement filters: ``water``, ``sphere``, ``jitter`` (HWC images, uint8 or float32).

Each output pixel ``(y, x)`` samples the input at a displaced point, as DALI
2.4's ``DisplacementFilter`` (float32 arithmetic):

* ``water``: ``(x + ampl_x * sin(freq_x * y + phase_x), y + ampl_y * cos(freq_y * x + phase_y))``.
* ``sphere``: with ``m = (W / 2, H / 2)``, ``d = int(max(W, H) / 2)`` and
  ``t = (x + 0.5, y + 0.5) - m``: ``m + t * |t| / d`` (a bulge from the centre).
* ``jitter``: ``(x + dx, y + dy)`` with ``dx, dy`` random integers in
  ``[-(nDegree // 2), nDegree - nDegree // 2]``, clamped to the image.

Sampling (DALI's ``Sampler2D``): ``INTERP_NN`` takes the pixel under the
point (``floor``), ``INTERP_LINEAR`` interpolates the 4 neighbours of the
point minus half a pixel; samples outside the image are ``fill_value``
(converted to the image's type by truncation, as DALI's C++ does). ``mask``
(per sample) 0 leaves a sample unchanged.

The maps and the sampling are written over an array module ``xp`` (numpy
here, cupy in ``gpu/ops/displacement.py``), so both devices run this code.
Jitter's offsets come from ``rng.sample_generator``: a pure function of
(seed, operator, epoch, sample id); DALI's own Philox stream is not
reproduced (DALI runs jitter only on the GPU).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .. import rng
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import Device, InterpType, parse_interp
from .arguments import fn_function

__all__ = ["Displacement", "Jitter", "Sphere", "Water", "jitter", "jitter_offsets", "sample_at", "sphere", "water"]

F32 = np.float32


def sample_at(xp: Any, image: Any, sx: Any, sy: Any, interp: InterpType, fill: float) -> Any:
    """``image`` (HWC) sampled at the float32 points ``(sx, sy)`` (each H x W), DALI's way."""
    h, w, c = image.shape
    dtype = np.dtype(image.dtype)
    fill_value = _fill_of(fill, dtype)
    if interp is InterpType.INTERP_NN:
        return _gather(xp, image, xp.floor(sx).astype(xp.int64), xp.floor(sy).astype(xp.int64), fill_value)
    x = sx - F32(0.5)
    y = sy - F32(0.5)
    x0f, y0f = xp.floor(x), xp.floor(y)
    qx, qy = (x - x0f)[..., None], (y - y0f)[..., None]
    px = F32(1) - qx
    x0, y0 = x0f.astype(xp.int64), y0f.astype(xp.int64)
    s00 = _gather(xp, image, x0, y0, fill_value).astype(xp.float32)
    s01 = _gather(xp, image, x0 + 1, y0, fill_value).astype(xp.float32)
    s10 = _gather(xp, image, x0, y0 + 1, fill_value).astype(xp.float32)
    s11 = _gather(xp, image, x0 + 1, y0 + 1, fill_value).astype(xp.float32)
    s0 = s00 * px + s01 * qx
    s1 = s10 * px + s11 * qx
    value = s0 + (s1 - s0) * qy
    if dtype == np.uint8:  # DALI's ConvertSat: round to nearest and saturate
        return xp.clip(xp.rint(value), 0, 255).astype(np.uint8)
    return value.astype(dtype)


def _fill_of(fill: float, dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return dtype.type(fill)
    return dtype.type(int(np.clip(np.trunc(fill), 0, 255)))  # C++'s float -> uint8 assignment (in range)


def _gather(xp: Any, image: Any, ix: Any, iy: Any, fill: Any) -> Any:
    h, w, _ = image.shape
    inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
    values = image[xp.clip(iy, 0, h - 1), xp.clip(ix, 0, w - 1)]
    return xp.where(inside[..., None], values, fill)


def _grid(xp: Any, h: int, w: int) -> tuple[Any, Any]:
    y = xp.arange(h, dtype=xp.float32)[:, None] * xp.ones((1, w), dtype=xp.float32)
    x = xp.arange(w, dtype=xp.float32)[None, :] * xp.ones((h, 1), dtype=xp.float32)
    return x, y


def jitter_offsets(chunk: Chunk, row: int, h: int, w: int, degree: int,
                   seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The (dx, dy) integer offsets of ``row`` (H x W each), from the sample's own random stream."""
    key = chunk.key if seed is None else rng.RandomKey(int(seed), 0x717)
    gen = rng.sample_generator(key, chunk.epoch, int(chunk.sample_ids[row]))
    low = -(degree >> 1)
    d = gen.integers(low, low + degree + 1, size=(2, h, w), dtype=np.int32)
    return d[0], d[1]


class Displacement(Operator):
    """Base of the three filters: argument checks, ``mask``, the sampling."""

    name: ClassVar[str] = "displacement"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"mask"})
    keeps_channels = True

    def __init__(self, *, interp: InterpType, fill_value: float, mask: int = 1, layout: str = "HWC",
                 name: str | None = None) -> None:
        super().__init__(name=name)
        if interp not in (InterpType.INTERP_NN, InterpType.INTERP_LINEAR):
            raise PipelineDefinitionError(f"{self.name}: interp_type must be INTERP_NN or INTERP_LINEAR, got {interp}")
        self.interp, self.fill_value, self.mask = interp, float(fill_value), int(mask)
        self._layout = layout

    def points(self, xp: Any, chunk: Chunk, row: int, h: int, w: int) -> tuple[Any, Any]:
        """The float32 source points (x, y) of every output pixel."""
        raise NotImplementedError

    def check(self, image: Any) -> None:
        if image.ndim != 3 or np.dtype(image.dtype) not in (np.uint8, np.float32):
            raise SampleError(f"{self.name}: expects HWC uint8 or float32 images, got {image.dtype} of shape "
                              f"{tuple(image.shape)}")

    def apply(self, xp: Any, chunk: Chunk, row: int, image: Any) -> Any:
        """The filtered image of ``row`` (``xp`` arrays in and out)."""
        self.check(image)
        if not int(np.asarray(chunk.arg("mask", row, self.mask)).reshape(-1)[0]):
            return image.copy()
        h, w, _ = image.shape
        sx, sy = self.points(xp, chunk, row, h, w)
        return sample_at(xp, image, sx, sy, self.interp, self.fill_value)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, image: self.apply(np, chunk, row, np.asarray(image)))]

    def layout(self, index: int) -> str:
        return self._layout


class Water(Displacement):
    """Sine waves along x and y."""

    name: ClassVar[str] = "water"

    def __init__(self, *, ampl_x: float, ampl_y: float, freq_x: float, freq_y: float, phase_x: float,
                 phase_y: float, **kw: Any) -> None:
        super().__init__(**kw)
        self.wave = tuple(F32(v) for v in (ampl_x, ampl_y, freq_x, freq_y, phase_x, phase_y))

    def points(self, xp: Any, chunk: Chunk, row: int, h: int, w: int) -> tuple[Any, Any]:
        ax, ay, fx, fy, px, py = self.wave
        x, y = _grid(xp, h, w)
        return x + ax * xp.sin(fx * y + px), y + ay * xp.cos(fy * x + py)


class Sphere(Displacement):
    """A bulge from the centre."""

    name: ClassVar[str] = "sphere"

    def points(self, xp: Any, chunk: Chunk, row: int, h: int, w: int) -> tuple[Any, Any]:
        mid_x, mid_y = F32(w * 0.5), F32(h * 0.5)
        d = F32(int(max(mid_x, mid_y)))
        x, y = _grid(xp, h, w)
        tx, ty = x + F32(0.5) - mid_x, y + F32(0.5) - mid_y
        rad = xp.sqrt(tx * tx + ty * ty) / d
        return mid_x + rad * tx, mid_y + rad * ty


class Jitter(Displacement):
    """Each pixel moved by a random integer offset (clamped to the image)."""

    name: ClassVar[str] = "jitter"

    def __init__(self, *, degree: int, seed: int | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        if degree < 0:
            raise PipelineDefinitionError(f"jitter: nDegree must be >= 0, got {degree}")
        self.degree = int(degree)
        self.seed = seed
        # DALI's jitter displaces to whole pixels, which its linear sampler reads as nearest.
        self.interp = InterpType.INTERP_NN

    def points(self, xp: Any, chunk: Chunk, row: int, h: int, w: int) -> tuple[Any, Any]:
        dx, dy = jitter_offsets(chunk, row, h, w, self.degree, self.seed)
        x = np.clip(np.arange(w, dtype=np.int32)[None, :] + dx, 0, w - 1).astype(np.float32)
        y = np.clip(np.arange(h, dtype=np.int32)[:, None] + dy, 0, h - 1).astype(np.float32)
        if xp is not np:
            x, y = xp.asarray(x), xp.asarray(y)
        return x, y


def _common(data: DataNode, op_name: str, mask: Any) -> tuple[dict[str, Any], dict[str, DataNode], str]:
    constants, per_sample = split_arguments({"mask": mask})
    layout = input_layout(data, op_name)
    if layout and layout != "HWC":
        raise PipelineDefinitionError(f"{op_name}: expects HWC images, got layout {layout!r}")
    return constants, per_sample, layout or "HWC"


@fn_function()
def water(
    input: DataNode,
    *,
    ampl_x: float = 10.0,
    ampl_y: float = 10.0,
    freq_x: float = 2 * math.pi / 128,
    freq_y: float = 2 * math.pi / 128,
    phase_x: float = 0.0,
    phase_y: float = 0.0,
    fill_value: float = 0.0,
    interp_type: str | InterpType = InterpType.INTERP_NN,
    mask: int | DataNode = 1,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Make HWC images look under water: sine displacements along x and y.

    Args:
        ampl_x, ampl_y: the waves' amplitudes [pixels].
        freq_x, freq_y: the waves' frequencies [radians per pixel] (default 2 pi / 128, DALI's).
        phase_x, phase_y: the waves' phases [radians].
        fill_value: the value of points outside the image.
        interp_type: ``INTERP_NN`` (default) or ``INTERP_LINEAR``.
        mask: per sample, 0 leaves the image unchanged.
    """
    constants, per_sample, layout = _common(input, "water", mask)
    op = Water(ampl_x=ampl_x, ampl_y=ampl_y, freq_x=freq_x, freq_y=freq_y, phase_x=phase_x, phase_y=phase_y,
               interp=parse_interp(interp_type), fill_value=fill_value, mask=constants.get("mask", 1),
               layout=layout, name=name)
    return add_node(op, [input], per_sample, device=device)[0]


@fn_function()
def sphere(
    input: DataNode,
    *,
    fill_value: float = 0.0,
    interp_type: str | InterpType = InterpType.INTERP_NN,
    mask: int | DataNode = 1,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Bulge HWC images from their centre (DALI's sphere augmentation).

    Args:
        fill_value: the value of points outside the image.
        interp_type: ``INTERP_NN`` (default) or ``INTERP_LINEAR``.
        mask: per sample, 0 leaves the image unchanged.
    """
    constants, per_sample, layout = _common(input, "sphere", mask)
    op = Sphere(interp=parse_interp(interp_type), fill_value=fill_value, mask=constants.get("mask", 1),
                layout=layout, name=name)
    return add_node(op, [input], per_sample, device=device)[0]


@fn_function()
def jitter(
    input: DataNode,
    *,
    nDegree: int = 2,
    fill_value: float = 0.0,
    interp_type: str | InterpType = InterpType.INTERP_NN,
    mask: int | DataNode = 1,
    seed: int | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Move each pixel of HWC images by a random amount in ``[-nDegree/2, nDegree/2]`` along x and y.

    Args:
        nDegree: the spread of the offsets [pixels].
        fill_value: accepted for DALI (points are clamped to the image, so never used).
        interp_type: ``INTERP_NN`` or ``INTERP_LINEAR``: the same result (whole-pixel offsets, as DALI).
        mask: per sample, 0 leaves the image unchanged.
        seed: a fixed random stream for this operator (default: the pipeline's).
    """
    constants, per_sample, layout = _common(input, "jitter", mask)
    op = Jitter(degree=nDegree, seed=None if seed is None or seed < 0 else seed, interp=parse_interp(interp_type),
                fill_value=fill_value, mask=constants.get("mask", 1), layout=layout, name=name)
    return add_node(op, [input], per_sample, device=device)[0]
