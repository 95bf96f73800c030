"""``crop`` and the crop-window arithmetic shared with crop_mirror_normalize.

The anchor of a crop of size ``c`` in an extent ``n`` at relative position
``pos`` is ``pos * (n - c)``, rounded half away from zero (``rounding="round"``)
or truncated (``"truncate"``); fractional crop sizes are truncated. A window
that leaves the image is an error, is padded with ``fill_values`` (the window
stays where the formula puts it, so a centred window pads both sides), or is
trimmed to the image (``out_of_bounds_policy``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator, float_seq
from ..types import (
    Device,
    Number,
    OutOfBoundsPolicy,
)
from .arguments import fn_function

__all__ = ["Crop", "CropSpec", "Window", "crop", "crop_window", "extract_window", "resolve_window"]


Window = tuple[int, int, int, int]
"""(y0, x0, height, width) in pixels; y0/x0 may be negative when padding."""


def _round_anchor(value: float, rounding: str) -> int:
    if rounding == "truncate":
        return int(value)
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


@dataclass(frozen=True)
class CropSpec:
    """Validated crop arguments (constant part); per-sample values override them."""

    crop_h: float | None = None
    crop_w: float | None = None
    pos_x: float = 0.5
    pos_y: float = 0.5
    rounding: str = "round"
    policy: OutOfBoundsPolicy = OutOfBoundsPolicy.ERROR
    fill_values: tuple[float, ...] = (0.0,)
    crop_d: float | None = None  # volumes (DHWC) only
    pos_z: float = 0.5

    @classmethod
    def from_args(
        cls,
        op_name: str,
        crop: Any = None,
        crop_h: Any = None,
        crop_w: Any = None,
        crop_pos_x: Any = 0.5,
        crop_pos_y: Any = 0.5,
        rounding: str = "round",
        out_of_bounds_policy: str | OutOfBoundsPolicy = "error",
        fill_values: Any = 0.0,
        crop_d: Any = None,
        crop_pos_z: Any = 0.5,
    ) -> CropSpec:
        if crop is not None:
            if crop_h is not None or crop_w is not None or crop_d is not None:
                raise PipelineDefinitionError(f"{op_name}: give crop=(h, w) or crop_h/crop_w, not both")
            sizes = [crop] * 2 if isinstance(crop, (int, float)) else list(crop)
            if len(sizes) == 3:  # (d, h, w) of a volume
                crop_d, sizes = sizes[0], sizes[1:]
            if len(sizes) != 2:
                raise PipelineDefinitionError(f"{op_name}: crop must be (height, width) or (depth, height, width), "
                                              f"got {crop!r}")
            crop_h, crop_w = sizes
        for label, value in (("crop height", crop_h), ("crop width", crop_w), ("crop depth", crop_d)):
            if value is not None and not isinstance(value, (int, float)):
                continue  # per-sample
            if value is not None and value <= 0:
                raise PipelineDefinitionError(f"{op_name}: {label} must be > 0, got {value}")
        if rounding not in ("round", "truncate"):
            raise PipelineDefinitionError(f"{op_name}: rounding must be 'round' or 'truncate', got {rounding!r}")
        policy = OutOfBoundsPolicy(out_of_bounds_policy) if isinstance(out_of_bounds_policy, str) else out_of_bounds_policy
        return cls(
            crop_h=None if crop_h is None else float(crop_h),
            crop_w=None if crop_w is None else float(crop_w),
            pos_x=float(crop_pos_x),
            pos_y=float(crop_pos_y),
            rounding=rounding,
            policy=policy,
            fill_values=tuple(float_seq(fill_values, f"{op_name}: fill_values")),
            crop_d=None if crop_d is None else float(crop_d),
            pos_z=float(crop_pos_z),
        )

    @property
    def active(self) -> bool:
        return self.crop_h is not None or self.crop_w is not None


def crop_window(
    height: int, width: int, crop_h: float | None, crop_w: float | None,
    pos_y: float = 0.5, pos_x: float = 0.5, rounding: str = "round",
) -> Window:
    """The window of a crop; ``None`` sizes mean the whole extent."""
    h = height if crop_h is None else int(crop_h)
    w = width if crop_w is None else int(crop_w)
    if h <= 0 or w <= 0:
        raise ValueError(f"crop size must be positive, got {h}x{w}")
    return _round_anchor(pos_y * (height - h), rounding), _round_anchor(pos_x * (width - w), rounding), h, w


def resolve_window(
    window: Window, height: int, width: int, policy: OutOfBoundsPolicy, source: str | None
) -> Window:
    """Apply the out-of-bounds policy: unchanged, trimmed, or an error."""
    y0, x0, h, w = window
    inside = y0 >= 0 and x0 >= 0 and y0 + h <= height and x0 + w <= width
    if inside or policy is OutOfBoundsPolicy.PAD:
        return window
    if policy is OutOfBoundsPolicy.TRIM_TO_SHAPE:
        y1, x1 = min(y0 + h, height), min(x0 + w, width)
        y0, x0 = max(y0, 0), max(x0, 0)
        return y0, x0, max(0, y1 - y0), max(0, x1 - x0)
    raise SampleError(
        f"crop window {h}x{w} at (y={y0}, x={x0}) does not fit the {height}x{width} image; "
        "use out_of_bounds_policy='pad' or 'trim_to_shape', or a smaller crop",
        source,
    )


def extract_window(image: np.ndarray, window: Window, fill_values: Sequence[float]) -> np.ndarray:
    """Copy the window out of an HWC image, filling the part outside the image."""
    y0, x0, h, w = window
    height, width = image.shape[:2]
    channels = image.shape[2:] if image.ndim == 3 else ()
    if y0 >= 0 and x0 >= 0 and y0 + h <= height and x0 + w <= width:
        return np.ascontiguousarray(image[y0 : y0 + h, x0 : x0 + w])
    out = np.empty((h, w, *channels), dtype=image.dtype)
    fill = np.asarray(fill_values, dtype=np.float64)
    out[...] = (fill if fill.size > 1 else fill[0]).astype(image.dtype) if channels else fill[0]
    sy0, sx0 = max(y0, 0), max(x0, 0)
    sy1, sx1 = min(y0 + h, height), min(x0 + w, width)
    if sy1 > sy0 and sx1 > sx0:
        out[sy0 - y0 : sy1 - y0, sx0 - x0 : sx1 - x0] = image[sy0:sy1, sx0:sx1]
    return out


class Crop(Operator):
    """Cuts a window out of HWC images."""

    keeps_channels = True
    name = "crop"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"crop_h", "crop_w", "crop_pos_x", "crop_pos_y", "crop_d", "crop_pos_z"})

    def __init__(self, spec: CropSpec, *, name: str | None = None) -> None:
        super().__init__(name=name)
        if not spec.active:
            raise PipelineDefinitionError("crop: give the crop size (crop=(h, w) or crop_h and crop_w)")
        self.spec = spec

    def window_for(self, chunk: Chunk, row: int, height: int, width: int) -> Window:
        s = self.spec
        crop_h = chunk.arg("crop_h", row, s.crop_h)
        crop_w = chunk.arg("crop_w", row, s.crop_w)
        window = crop_window(
            height, width,
            None if crop_h is None else float(crop_h), None if crop_w is None else float(crop_w),
            float(chunk.arg("crop_pos_y", row, s.pos_y)), float(chunk.arg("crop_pos_x", row, s.pos_x)),
            s.rounding,
        )
        return resolve_window(window, height, width, s.policy, chunk.sources[row])

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def crop(row: int, image: np.ndarray) -> np.ndarray:
            if image.ndim == 4:
                return self._crop_volume(chunk, row, image)
            window = self.window_for(chunk, row, image.shape[0], image.shape[1])
            return extract_window(image, window, self.spec.fill_values)

        return [chunk.each_sample(crop)]

    def _crop_volume(self, chunk: Chunk, row: int, volume: np.ndarray) -> np.ndarray:
        """A DHWC volume: the depth window like the others (crop_d, crop_pos_z), through slice's copy."""
        from .slice import (
            extract_region,  # slice imports nothing from here; keeps the 2-D path lean
        )

        s = self.spec
        depth = chunk.arg("crop_d", row, s.crop_d)
        d0, _, d, _ = crop_window(volume.shape[0], 1, None if depth is None else float(depth), 1.0,
                                  float(chunk.arg("crop_pos_z", row, s.pos_z)), 0.0, s.rounding)
        y0, x0, h, w = self.window_for(chunk, row, volume.shape[1], volume.shape[2])
        if s.policy is not OutOfBoundsPolicy.PAD and not 0 <= d0 <= volume.shape[0] - d:
            if s.policy is OutOfBoundsPolicy.ERROR:
                raise SampleError(f"crop window depth {d} at z={d0} does not fit the volume's {volume.shape[0]} "
                                  "planes; use out_of_bounds_policy='pad' or 'trim_to_shape'", chunk.sources[row])
            d0, d = max(d0, 0), min(d0 + d, volume.shape[0]) - max(d0, 0)
        region = ((d0, y0, x0, 0), (d0 + d, y0 + h, x0 + w, volume.shape[3]))
        return extract_region(volume, region, "constant", s.fill_values, channel_dim=3)

    def layout(self, index: int) -> str:
        return "HWC"

@fn_function()
def crop(
    data: DataNode,
    *,
    crop: Sequence[Number] | Number | None = None,
    crop_h: Number | DataNode | None = None,
    crop_w: Number | DataNode | None = None,
    crop_pos_x: Number | DataNode = 0.5,
    crop_pos_y: Number | DataNode = 0.5,
    out_of_bounds_policy: str | OutOfBoundsPolicy = "error",
    fill_values: Number | Sequence[Number] = 0,
    rounding: str = "round",
    crop_d: Number | DataNode | None = None,
    crop_pos_z: Number | DataNode = 0.5,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Cut a window out of HWC images (or DHWC volumes: ``crop=(d, h, w)``, ``crop_d``, ``crop_pos_z``).

    Args:
        crop: ``(height, width)`` of the window (or crop_h / crop_w).
        crop_pos_x: relative horizontal position, 0 = left, 0.5 = centre, 1 = right.
        crop_pos_y: relative vertical position.
        out_of_bounds_policy: ``error``, ``pad`` (with ``fill_values``) or ``trim_to_shape``.
        fill_values: padding value, one or one per channel.
        rounding: anchor rounding, ``round`` (halves away from zero) or ``truncate``.
    """
    constants, per_sample = split_arguments(dict(crop_h=crop_h, crop_w=crop_w, crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y,
                                                 crop_d=crop_d, crop_pos_z=crop_pos_z))
    spec = CropSpec.from_args(
        "crop", crop=crop, crop_h=constants.get("crop_h"), crop_w=constants.get("crop_w"),
        crop_pos_x=constants.get("crop_pos_x", 0.5), crop_pos_y=constants.get("crop_pos_y", 0.5),
        rounding=rounding, out_of_bounds_policy=out_of_bounds_policy, fill_values=fill_values,
        crop_d=constants.get("crop_d"), crop_pos_z=constants.get("crop_pos_z", 0.5),
    )
    if not spec.active and ("crop_h" in per_sample or "crop_w" in per_sample):
        spec = dataclasses.replace(spec, crop_h=1.0, crop_w=1.0)
    return add_node(Crop(spec, name=name), [data], per_sample, device=device)[0]
