"""The random-crop window draw, shared by ``decoders.image_random_crop`` and
``random_resized_crop``.

The draw is DALI's ``RandomCropGenerator`` (``dali/operators/image/crop/
random_crop_generator_util.cc``), step for step, in float32 like DALI:

1. Early exits for impossible requests: if even the widest allowed window
   (``maxW = max(1, int(H * max_ratio))`` columns) of full height is smaller than
   ``min_area * W * H``, the window is ``H x maxW`` (image too wide); likewise
   ``maxH x W`` with ``maxH = max(1, int(W / min_ratio))`` (image too tall).
2. Up to ``num_attempts`` times: area fraction ``A`` uniform in
   ``random_area``, aspect ratio ``r = w / h`` log-uniform in
   ``random_aspect_ratio``; ``w = round(sqrt(A * W * H * r))``,
   ``h = round(sqrt(A * W * H / r))`` (each at least 1); accepted when it fits
   (``w <= W``, ``h <= H``) and the rounded ratio ``w / h`` is in range.
3. If no attempt is accepted: the image's own ratio clamped to the range, the
   largest window of that ratio that fits (``H x maxW``, ``maxH x W`` or the
   whole image), shrunk (both sides by ``sqrt``) to at most
   ``max_area * W * H`` pixels.
4. The anchor is uniform over the free space: ``y0`` in ``[0, H - h]``,
   ``x0`` in ``[0, W - w]`` (inclusive).

Every number comes from ``rng.sample_generator(key, epoch, sample_id)``, so a
sample's window depends only on (seed, operator, epoch, sample id), never on
threads, chunking or restarts (DALI's own Philox stream is not reproduced:
the windows are distributed like DALI's, not equal to them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import rng
from ..errors import PipelineDefinitionError
from ..operator import Chunk

__all__ = ["CropDraw", "RandomCropParams", "draw_crop_window", "random_crop_key", "sample_window"]


F32 = np.float32


@dataclass(frozen=True)
class CropDraw:
    """One drawn window and how it was obtained (for tests and statistics).

    Attributes:
        y0, x0, h, w: the window, inside the image.
        accepted: an attempt was accepted (``False``: early exit or fallback).
        area: the area fraction drawn by the accepted attempt (``nan`` otherwise).
        ratio: the aspect ratio drawn by the accepted attempt (``nan`` otherwise).
    """

    y0: int
    x0: int
    h: int
    w: int
    accepted: bool
    area: float = math.nan
    ratio: float = math.nan

    @property
    def window(self) -> tuple[int, int, int, int]:
        """``(y0, x0, h, w)``."""
        return self.y0, self.x0, self.h, self.w


def _range(value: Any, op_name: str, what: str, positive: bool) -> tuple[float, float]:
    try:
        values = [float(v) for v in np.asarray(value, dtype=np.float64).reshape(-1)]
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"{op_name}: {what} must be [lo, hi], got {value!r}") from None
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise PipelineDefinitionError(f"{op_name}: {what} must be [lo, hi], got {value!r}")
    lo, hi = values
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise PipelineDefinitionError(f"{op_name}: {what} must be a range [lo, hi] with lo <= hi, got {value!r}")
    if positive and lo <= 0:
        raise PipelineDefinitionError(f"{op_name}: {what} must be positive, got {value!r}")
    return lo, hi


@dataclass(frozen=True)
class RandomCropParams:
    """Validated arguments of the draw (DALI's defaults)."""

    random_area: tuple[float, float] = (0.08, 1.0)
    random_aspect_ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0)
    num_attempts: int = 10

    @classmethod
    def from_args(
        cls, op_name: str, random_area: Any = (0.08, 1.0), random_aspect_ratio: Any = (3.0 / 4.0, 4.0 / 3.0),
        num_attempts: int = 10,
    ) -> RandomCropParams:
        area = _range(random_area, op_name, "random_area", positive=True)
        if area[1] > 1.0:
            raise PipelineDefinitionError(f"{op_name}: random_area must lie in (0, 1], got {random_area!r}")
        ratio = _range(random_aspect_ratio, op_name, "random_aspect_ratio", positive=True)
        if int(num_attempts) != num_attempts or num_attempts < 1:
            raise PipelineDefinitionError(f"{op_name}: num_attempts must be a positive integer, got {num_attempts!r}")
        return cls(area, ratio, int(num_attempts))


def draw_crop_window(height: int, width: int, params: RandomCropParams, gen: np.random.Generator) -> CropDraw:
    """Draw a random crop window of an ``height`` x ``width`` image (see the module doc)."""
    H, W = int(height), int(width)
    if H <= 0 or W <= 0:
        raise ValueError(f"image size must be positive, got {H}x{W}")
    a_lo, a_hi = F32(params.random_area[0]), F32(params.random_area[1])
    r_lo, r_hi = F32(params.random_aspect_ratio[0]), F32(params.random_aspect_ratio[1])
    log_lo, log_hi = F32(math.log(r_lo)), F32(math.log(r_hi))
    max_hw_ratio = F32(1) / r_lo
    min_area = F32(W * H) * a_lo
    max_w = max(1, int(F32(H) * r_hi))
    max_h = max(1, int(F32(W) * max_hw_ratio))
    accepted, area, ratio = False, math.nan, math.nan
    if H * max_w < min_area:  # too wide for any allowed window
        h, w = H, max_w
    elif W * max_h < min_area:  # too tall
        h, w = max_h, W
    else:
        total = F32(H * W)
        h = w = 0
        for _ in range(params.num_attempts):
            scale = F32(a_lo + F32(gen.random()) * (a_hi - a_lo))
            target = F32(scale * total)
            r = F32(np.exp(F32(log_lo + F32(gen.random()) * (log_hi - log_lo))))
            w = max(1, int(math.floor(float(np.sqrt(F32(target * r))) + 0.5)))  # roundf: halves up
            h = max(1, int(math.floor(float(np.sqrt(F32(target / r))) + 0.5)))
            rounded = F32(w) / F32(h)
            if w <= W and h <= H and r_lo <= rounded <= r_hi:
                accepted, area, ratio = True, float(scale), float(r)
                break
        if not accepted:
            max_area = F32(a_hi * F32(W * H))
            own = F32(W) / F32(H)
            if own > r_hi:
                h, w = H, max_w
            elif own < r_lo:
                h, w = max_h, W
            else:
                h, w = H, W
            shrink = math.sqrt(min(F32(1), F32(max_area / F32(h * w))))
            h, w = max(1, int(h * shrink)), max(1, int(w * shrink))
    h, w = min(h, H), min(w, W)
    y0 = int(gen.integers(0, H - h + 1))
    x0 = int(gen.integers(0, W - w + 1))
    return CropDraw(y0, x0, h, w, accepted, area, ratio)


def random_crop_key(chunk: Chunk, seed: int | None) -> rng.RandomKey:
    """The random stream: the engine's, or a fixed one when the operator has a ``seed``."""
    if seed is None:
        return chunk.key
    return rng.RandomKey(int(seed), 0x5C0F)


def sample_window(chunk: Chunk, row: int, height: int, width: int, params: RandomCropParams,
                  seed: int | None) -> CropDraw:
    """The window of ``chunk``'s ``row`` (deterministic per seed, epoch and sample id)."""
    gen = rng.sample_generator(random_crop_key(chunk, seed), chunk.epoch, int(chunk.sample_ids[row]))
    return draw_crop_window(height, width, params, gen)
