"""``resize``: output-size rules (DALI's) and the resize operator.

Output sizes round to nearest (halves up). Ways to ask for a size:
``resize_x`` / ``resize_y`` / ``size=(h, w)`` (a missing or 0 extent keeps the
aspect ratio, except in ``stretch`` mode where it keeps the input extent),
``resize_shorter`` / ``resize_longer`` (aspect kept). ``mode``:
``default`` (stretch when both are given), ``stretch``, ``not_larger`` (fit
inside the requested box), ``not_smaller`` (cover it). ``max_size`` caps
the output, scaling both axes down when the aspect ratio is kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._native import imgproc as kernels
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, split_arguments
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
from .sequence import add_frames_node
from .volume import resample_volume, volume_plan

__all__ = ["Resize", "ResizeSpec", "output_size", "resize"]


MODES = ("default", "stretch", "not_larger", "not_smaller")


def _round(x: float) -> int:
    return max(1, int(math.floor(x + 0.5)))


def _pair(value: Any, what: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value), float(value)
    values = [float(v) for v in np.asarray(value).reshape(-1)]
    if len(values) != 2:
        raise PipelineDefinitionError(f"resize: {what} must be one number or (height, width), got {value!r}")
    return values[0], values[1]


def output_size(
    in_h: float,
    in_w: float,
    *,
    resize_x: float | None = None,
    resize_y: float | None = None,
    resize_shorter: float | None = None,
    resize_longer: float | None = None,
    size: Sequence[float] | None = None,
    mode: str = "default",
    max_size: float | Sequence[float] | None = None,
) -> tuple[int, int]:
    """(out_h, out_w) of an ``in_h`` x ``in_w`` image under DALI's resize rules."""
    cap = _pair(max_size, "max_size")
    if resize_shorter or resize_longer:
        target = resize_shorter or resize_longer
        edge = min(in_h, in_w) if resize_shorter else max(in_h, in_w)
        scale = float(target) / edge  # type: ignore[arg-type]
        if cap is not None:
            scale = min(scale, cap[0] / in_h, cap[1] / in_w)
        # The edge that was asked for gets exactly the requested size.
        out_h = float(target) if edge == in_h and scale == float(target) / edge else in_h * scale  # type: ignore[arg-type]
        out_w = float(target) if edge == in_w and scale == float(target) / edge else in_w * scale  # type: ignore[arg-type]
        return _round(out_h), _round(out_w)
    req_h, req_w = (float(size[0]) or None, float(size[1]) or None) if size is not None else (None, None)
    if resize_y:
        req_h = float(resize_y)
    if resize_x:
        req_w = float(resize_x)
    if req_h is None and req_w is None:
        return _round(in_h), _round(in_w)
    if mode == "stretch" or (mode == "default" and req_h and req_w):
        out_h = req_h or in_h
        out_w = req_w or in_w
        if cap is not None:
            out_h, out_w = min(out_h, cap[0]), min(out_w, cap[1])
        return _round(out_h), _round(out_w)
    scales = [r / n for r, n in ((req_h, in_h), (req_w, in_w)) if r]
    scale = min(scales) if mode in ("default", "not_larger") else max(scales)
    if cap is not None:
        scale = min(scale, cap[0] / in_h, cap[1] / in_w)
    out_h = req_h if req_h and scale == req_h / in_h else in_h * scale
    out_w = req_w if req_w and scale == req_w / in_w else in_w * scale
    return _round(out_h), _round(out_w)


@dataclass(frozen=True)
class ResizeSpec:
    """Validated constant arguments of ``fn.resize``."""

    resize_x: float | None = None
    resize_y: float | None = None
    resize_shorter: float | None = None
    resize_longer: float | None = None
    size: tuple[float, ...] | None = None  # (h, w), or (d, h, w) for volumes
    mode: str = "default"
    max_size: tuple[float, ...] | None = None
    interp: InterpType = InterpType.INTERP_LINEAR
    antialias: bool = True
    dtype: np.dtype | None = None
    roi_start: tuple[float, float] | None = None
    roi_end: tuple[float, float] | None = None
    roi_relative: bool = False
    resize_z: float | None = None  # volumes (DHWC) only

    @classmethod
    def from_args(cls, **kw: Any) -> ResizeSpec:
        mode = kw.get("mode", "default")
        if mode not in MODES:
            raise PipelineDefinitionError(f"resize: mode must be one of {MODES}, got {mode!r}")
        if kw.get("resize_shorter") and kw.get("resize_longer"):
            raise PipelineDefinitionError("resize: give resize_shorter or resize_longer, not both")
        explicit = any(kw.get(k) is not None for k in ("resize_x", "resize_y", "resize_z", "size"))
        if explicit and (kw.get("resize_shorter") or kw.get("resize_longer")):
            raise PipelineDefinitionError(
                "resize: resize_shorter/resize_longer cannot be combined with resize_x, resize_y or size"
            )
        for key in ("resize_x", "resize_y", "resize_z", "resize_shorter", "resize_longer"):
            value = kw.get(key)
            if isinstance(value, (int, float)) and value < 0:
                raise PipelineDefinitionError(f"resize: {key} must be >= 0, got {value}")
        dtype = kw.get("dtype")
        if dtype is not None:
            dtype = parse_dtype(dtype).numpy
            if dtype not in (np.uint8, np.float32):
                raise PipelineDefinitionError(f"resize: dtype must be UINT8 or FLOAT, got {dtype}")
        return cls(
            resize_x=kw.get("resize_x"),
            resize_y=kw.get("resize_y"),
            resize_shorter=kw.get("resize_shorter"),
            resize_longer=kw.get("resize_longer"),
            size=_extents(kw.get("size"), "size"),
            mode=mode,
            max_size=_extents(kw.get("max_size"), "max_size"),
            interp=parse_interp(kw.get("interp_type") or InterpType.INTERP_LINEAR),
            antialias=bool(kw.get("antialias", True)),
            dtype=dtype,
            roi_start=_pair(kw.get("roi_start"), "roi_start"),
            roi_end=_pair(kw.get("roi_end"), "roi_end"),
            roi_relative=bool(kw.get("roi_relative", False)),
            resize_z=kw.get("resize_z"),
        )


class Resize(Operator):
    """Resizes HWC images with a separable filter (native kernel, GIL released)."""

    keeps_channels = True
    name = "resize"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"resize_x", "resize_y", "resize_z", "resize_shorter", "resize_longer", "size",
                                 "roi_start", "roi_end"})

    def __init__(self, spec: ResizeSpec, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.spec = spec

    def plan_sample(self, chunk: Chunk, row: int, height: int, width: int) -> tuple[tuple[int, int], tuple[float, float, float, float] | None]:
        """(full output size, source roi) of one sample."""
        s = self.spec
        roi = None
        start, end = chunk.arg("roi_start", row, s.roi_start), chunk.arg("roi_end", row, s.roi_end)
        if start is not None or end is not None:
            y0, x0 = (0.0, 0.0) if start is None else (float(start[0]), float(start[1]))
            y1, x1 = (1.0, 1.0) if end is None and s.roi_relative else (
                (float(height), float(width)) if end is None else (float(end[0]), float(end[1]))
            )
            if s.roi_relative:
                y0, y1, x0, x1 = y0 * height, y1 * height, x0 * width, x1 * width
            roi = (y0, x0, y1, x1)
        in_h = abs(roi[2] - roi[0]) if roi else height
        in_w = abs(roi[3] - roi[1]) if roi else width
        size = chunk.arg("size", row, s.size)
        out = output_size(
            in_h or 1, in_w or 1,
            resize_x=_scalar(chunk.arg("resize_x", row, s.resize_x)),
            resize_y=_scalar(chunk.arg("resize_y", row, s.resize_y)),
            resize_shorter=_scalar(chunk.arg("resize_shorter", row, s.resize_shorter)),
            resize_longer=_scalar(chunk.arg("resize_longer", row, s.resize_longer)),
            size=None if size is None else _pair(size, "size"),
            mode=s.mode,
            max_size=None if s.max_size is None else _pair(s.max_size, "max_size"),
        )
        return out, roi

    def plan_volume(self, chunk: Chunk, row: int, shape: tuple[int, ...]) -> tuple[float, ...]:
        """Unrounded (out_d, out_h, out_w) of a DHWC volume (DALI's 3-D rules; see ``volume.py``)."""
        s = self.spec
        if chunk.arg("roi_start", row, s.roi_start) is not None or chunk.arg("roi_end", row, s.roi_end) is not None:
            raise SampleError("resize: roi_start/roi_end are not supported for volumes")
        size = chunk.arg("size", row, s.size)
        requested: list[float | None] = [None, None, None]
        if size is not None:
            values = [float(v) for v in np.asarray(size).reshape(-1)]
            if len(values) != 3:
                raise SampleError(f"resize: a volume's size must be (depth, height, width), got {values}")
            requested = [v or None for v in values]
        for i, key in enumerate(("resize_z", "resize_y", "resize_x")):
            value = _scalar(chunk.arg(key, row, getattr(s, key)))
            if value:
                requested[i] = value
        cap = None if s.max_size is None else (list(s.max_size) * 3)[:3] if len(s.max_size) == 1 else s.max_size
        if cap is not None and len(cap) != 3:
            raise SampleError(f"resize: a volume's max_size must have 1 or 3 values, got {list(cap)}")
        return volume_plan(
            shape[:3], requested, mode=s.mode, max_size=cap,
            resize_shorter=_scalar(chunk.arg("resize_shorter", row, s.resize_shorter)),
            resize_longer=_scalar(chunk.arg("resize_longer", row, s.resize_longer)),
        )

    def resample(
        self, image: np.ndarray, out_size: tuple[int, int], roi: Any, window: Any = None, out: np.ndarray | None = None
    ) -> np.ndarray:
        return kernels.resample(
            image, out_size, window=window, interp=self.spec.interp, antialias=self.spec.antialias,
            roi=roi, out_dtype=self.spec.dtype or image.dtype, out=out,
        )

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, image in enumerate(chunk.inputs[0]):
            if image.ndim == 4:  # a DHWC volume: separable passes (volume.py)
                try:
                    dhw = self.plan_volume(chunk, row, image.shape)
                    out.append(resample_volume(image, dhw, interp=self.spec.interp, antialias=self.spec.antialias,
                                               out_dtype=self.spec.dtype or image.dtype))
                except (SampleError, ValueError) as err:
                    chunk.fail(row, err)
                    out.append(None)
                continue
            size, roi = self.plan_sample(chunk, row, image.shape[0], image.shape[1])
            shape = size if image.ndim == 2 else (*size, image.shape[2])
            target = chunk.output_buffer(row, shape, self.spec.dtype or image.dtype)
            out.append(self.resample(image, size, roi, out=target))
        return [out]

    def layout(self, index: int) -> str:
        return "HWC"


def _scalar(value: Any) -> float | None:
    return None if value is None else float(np.asarray(value).reshape(-1)[0])


def _extents(value: Any, what: str) -> tuple[float, ...] | None:
    """One value (all axes), (h, w), or (d, h, w) for volumes."""
    if value is None or isinstance(value, (int, float, np.integer, np.floating)):
        return _pair(value, what)
    values = tuple(float(v) for v in np.asarray(value).reshape(-1))
    if len(values) not in (2, 3):
        raise PipelineDefinitionError(f"resize: {what} must be (height, width) or (depth, height, width), got {value!r}")
    return values

def _one_filter(interp_type: Any, min_filter: Any, mag_filter: Any) -> InterpType:
    """DALI's ``min_filter`` / ``mag_filter`` folded into the one filter the resampler takes.

    ``INTERP_TRIANGULAR`` given as ``min_filter`` is the antialiased linear filter, which
    ``INTERP_LINEAR`` already is when downscaling (measured: identical in DALI 2.4).
    """
    def parse(value: Any) -> InterpType:
        return parse_interp(value) if isinstance(value, str) else value

    def kind(interp: InterpType) -> InterpType:
        return InterpType.INTERP_LINEAR if interp is InterpType.INTERP_TRIANGULAR else interp

    base = parse(interp_type or InterpType.INTERP_LINEAR)
    down = base if min_filter is None else parse(min_filter)
    up = base if mag_filter is None else parse(mag_filter)
    if kind(down) is not kind(up):
        raise PipelineDefinitionError(
            f"resize: min_filter {down.name} differs from mag_filter {up.name}; one filter for downscaling and "
            "upscaling is supported (INTERP_TRIANGULAR counts as INTERP_LINEAR)"
        )
    return base if kind(base) is kind(down) else kind(down)


@fn_function()
def resize(
    data: DataNode,
    *,
    resize_x: Number | DataNode | None = None,
    resize_y: Number | DataNode | None = None,
    resize_z: Number | DataNode | None = None,
    resize_shorter: Number | DataNode | None = None,
    resize_longer: Number | DataNode | None = None,
    size: Number | Sequence[Number] | DataNode | None = None,
    mode: str = "default",
    max_size: Number | Sequence[Number] | None = None,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    min_filter: str | InterpType | None = None,
    mag_filter: str | InterpType | None = None,
    antialias: bool = True,
    dtype: DataType | str | None = None,
    roi_start: Sequence[Number] | DataNode | None = None,
    roi_end: Sequence[Number] | DataNode | None = None,
    roi_relative: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Resize HWC images.

    Args:
        resize_x: output width; alone, the height keeps the aspect ratio.
        resize_y: output height; alone, the width keeps the aspect ratio.
        resize_z: output depth of DHWC volumes (missing extents of a volume
            take the geometric mean of the given scales).
        resize_shorter: length of the shorter edge (aspect kept).
        resize_longer: length of the longer edge (aspect kept).
        size: ``(height, width)`` (volumes: ``(depth, height, width)``); a 0 extent keeps the aspect ratio.
        mode: ``default``, ``stretch``, ``not_larger``, ``not_smaller``.
        max_size: cap on the output extent(s).
        interp_type: ``INTERP_NN``, ``INTERP_LINEAR`` (default), ``INTERP_CUBIC``,
            ``INTERP_LANCZOS3``, ``INTERP_GAUSSIAN``.
        min_filter, mag_filter: DALI's filters for downscaling / upscaling (default:
            ``interp_type``); ``INTERP_TRIANGULAR`` is ``INTERP_LINEAR`` (its triangle
            filter is the antialiased linear one). Different filters for the two are not supported.
        antialias: widen the filter when downscaling (on by default, like DALI).
        dtype: output type, ``UINT8`` or ``FLOAT`` (default: the input's).
        roi_start: ``(y, x)`` start of the input region to resize.
        roi_end: ``(y, x)`` end of the input region (before start: flipped).
        roi_relative: the roi is given as fractions of the input size.
        device: ``"cpu"`` or ``"gpu"``.
    """
    constants, per_sample = split_arguments(dict(
        resize_x=resize_x, resize_y=resize_y, resize_z=resize_z, resize_shorter=resize_shorter,
        resize_longer=resize_longer, size=size, roi_start=roi_start, roi_end=roi_end,
    ))
    spec = ResizeSpec.from_args(
        **constants, mode=mode, max_size=max_size, interp_type=_one_filter(interp_type, min_filter, mag_filter),
        antialias=antialias, dtype=dtype, roi_relative=roi_relative,
    )
    if not per_sample and not any(
        v is not None for v in (spec.resize_x, spec.resize_y, spec.resize_z, spec.resize_shorter, spec.resize_longer,
                                spec.size)
    ):
        raise PipelineDefinitionError(
            "resize: say what size to produce (resize_x, resize_y, resize_shorter, resize_longer or size)"
        )
    return add_frames_node(Resize(spec, name=name), data, per_sample, device=device)
