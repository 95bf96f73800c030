"""``resize``: DALI's resize operator for HWC images and DHWC volumes.

The output size and source window come from ``resize_geometry.py`` (DALI's
rules and arithmetic, ``subpixel_scale`` included); the pixels from the native
separable resampler (``_native/imgproc``), volumes from ``volume.py``. Ways to
ask for a size: ``resize_x`` / ``resize_y`` (/ ``resize_z``), ``size``
(0: not given), ``resize_shorter`` / ``resize_longer``; ``mode``, ``max_size``,
``roi_start`` / ``roi_end`` / ``roi_relative``; a negative size flips the axis.
The filter of a downscaled axis is ``min_filter``, of the others
``mag_filter`` (both default to ``interp_type``).
"""

from __future__ import annotations

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
from .arguments import RESAMPLING, fn_function
from .resize_geometry import MODES, ResizeGeometry, resize_geometry
from .sequence import add_frames_node
from .volume import resample_volume

__all__ = ["Resize", "ResizeSpec", "output_size", "resize"]


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
    spec = ResizeSpec.from_args(resize_x=resize_x, resize_y=resize_y, resize_shorter=resize_shorter,
                                resize_longer=resize_longer, size=size, mode=mode, max_size=max_size)
    return Resize(spec).geometry(None, 0, (int(in_h), int(in_w))).size  # type: ignore[return-value]


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
    interp: InterpType = InterpType.INTERP_LINEAR  # the filter of downscaled axes (min_filter)
    antialias: bool = True
    dtype: np.dtype | None = None
    roi_start: tuple[float, ...] | None = None
    roi_end: tuple[float, ...] | None = None
    roi_relative: bool = False
    resize_z: float | None = None  # volumes (DHWC) only
    subpixel_scale: bool = True
    mag_interp: InterpType = InterpType.INTERP_LINEAR  # the filter of the other axes (mag_filter)

    @classmethod
    def from_args(cls, **kw: Any) -> ResizeSpec:
        mode = kw.get("mode") or "default"
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
            if isinstance(value, (int, float)) and not np.isfinite(value):
                raise PipelineDefinitionError(f"resize: {key} must be finite, got {value}")
        max_size = kw.get("max_size")  # one value caps every axis (images and volumes alike)
        max_size = (float(max_size),) if isinstance(max_size, (int, float)) else _extents(max_size, "max_size")
        if max_size is not None and any(v < 0 for v in max_size):
            raise PipelineDefinitionError(f"resize: max_size must be >= 0, got {list(max_size)}")
        dtype = kw.get("dtype")
        if dtype is not None:
            dtype = parse_dtype(dtype).numpy
            if dtype not in (np.uint8, np.float32):
                raise PipelineDefinitionError(f"resize: dtype must be UINT8 or FLOAT, got {dtype}")
        interp = _interp(kw.get("interp_type"), "interp_type") or InterpType.INTERP_LINEAR
        return cls(
            resize_x=kw.get("resize_x"),
            resize_y=kw.get("resize_y"),
            resize_shorter=kw.get("resize_shorter"),
            resize_longer=kw.get("resize_longer"),
            size=_extents(kw.get("size"), "size"),
            mode=mode,
            max_size=max_size,
            interp=_interp(kw.get("min_filter"), "min_filter") or interp,
            antialias=bool(kw.get("antialias", True)),
            dtype=dtype,
            roi_start=_extents(kw.get("roi_start"), "roi_start"),
            roi_end=_extents(kw.get("roi_end"), "roi_end"),
            roi_relative=bool(kw.get("roi_relative", False)),
            resize_z=kw.get("resize_z"),
            subpixel_scale=bool(kw.get("subpixel_scale", True)),
            mag_interp=_interp(kw.get("mag_filter"), "mag_filter") or interp,
        )


def _interp(value: Any, what: str) -> InterpType | None:
    if value is None:
        return None
    try:
        return parse_interp(value)
    except (ValueError, KeyError, TypeError) as err:
        raise PipelineDefinitionError(f"resize: {what}: {err}") from None


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

    def geometry(self, chunk: Chunk | None, row: int, in_shape: tuple[int, ...]) -> ResizeGeometry:
        """DALI's output size and source window of one sample of spatial extents ``in_shape``
        ((h, w) or (d, h, w)); per-sample arguments come from ``chunk``.

        Raises:
            SampleError: argument values that do not fit the sample.
        """
        s = self.spec
        ndim = len(in_shape)

        def arg(key: str) -> Any:
            default = getattr(s, key)
            return default if chunk is None else chunk.arg(key, row, default)

        shorter, longer = _scalar(arg("resize_shorter")), _scalar(arg("resize_longer"))
        mode = s.mode
        requested: list[float]
        if shorter or longer:  # the same size on every axis, the aspect kept
            requested = [float(shorter or longer)] * ndim  # type: ignore[arg-type]
            mode = "not_smaller" if shorter else "not_larger"
        else:
            requested = [0.0] * ndim
            size = arg("size")
            if size is not None:
                requested = _axis_values(size, ndim, "size")
            for i, key in enumerate(("resize_z", "resize_y", "resize_x")[3 - ndim:]):
                value = _scalar(arg(key))
                if value:
                    requested[i] = value
        start, end = arg("roi_start"), arg("roi_end")
        try:
            return resize_geometry(
                in_shape, requested, mode=mode,
                max_size=None if s.max_size is None else _axis_values(s.max_size, ndim, "max_size"),
                roi_start=None if start is None else _axis_values(start, ndim, "roi_start"),
                roi_end=None if end is None else _axis_values(end, ndim, "roi_end"),
                roi_relative=s.roi_relative, subpixel_scale=s.subpixel_scale,
            )
        except ValueError as err:
            raise SampleError(f"resize: {err}") from None

    def plan_sample(self, chunk: Chunk, row: int, height: int, width: int) -> tuple[tuple[int, int], tuple[float, float, float, float]]:
        """(output size, source roi ``(y0, x0, y1, x1)``) of one image."""
        geo = self.geometry(chunk, row, (height, width))
        return geo.size, geo.roi()  # type: ignore[return-value]

    def resample(
        self, image: np.ndarray, out_size: tuple[int, int], roi: Any, window: Any = None, out: np.ndarray | None = None
    ) -> np.ndarray:
        return kernels.resample(
            image, out_size, window=window, interp=self.spec.interp, mag_interp=self.spec.mag_interp,
            antialias=self.spec.antialias, roi=roi, out_dtype=self.spec.dtype or image.dtype, out=out,
        )

    def resample_volume(self, chunk: Chunk, row: int, volume: np.ndarray) -> np.ndarray:
        """One DHWC volume resized (``volume.py``'s separable passes)."""
        geo = self.geometry(chunk, row, tuple(volume.shape[:3]))
        return resample_volume(volume, geo, interp=self.spec.interp, mag_interp=self.spec.mag_interp,
                               antialias=self.spec.antialias, out_dtype=self.spec.dtype or volume.dtype)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, image in enumerate(chunk.inputs[0]):
            try:
                if image.ndim == 4:  # a DHWC volume: separable passes (volume.py)
                    out.append(self.resample_volume(chunk, row, image))
                    continue
                size, roi = self.plan_sample(chunk, row, image.shape[0], image.shape[1])
            except (SampleError, ValueError) as err:
                chunk.fail(row, err)
                out.append(None)
                continue
            shape = size if image.ndim == 2 else (*size, image.shape[2])
            target = chunk.output_buffer(row, shape, self.spec.dtype or image.dtype)
            out.append(self.resample(image, size, roi, out=target))
        return [out]

    def layout(self, index: int) -> str:
        return "HWC"


def _scalar(value: Any) -> float | None:
    if value is None or isinstance(value, (int, float)):
        return value
    return float(np.asarray(value).reshape(-1)[0])


def _axis_values(value: Any, ndim: int, what: str) -> list[float]:
    """One value per spatial axis: ``ndim`` values, or one for all of them."""
    if isinstance(value, tuple):  # a constant (ResizeSpec): already floats
        values = list(value)
    else:
        values = [float(v) for v in np.asarray(value, dtype=np.float64).reshape(-1)]
    if len(values) == 1:
        values *= ndim
    if len(values) != ndim:
        raise SampleError(f"resize: {what} must have {ndim} values for this sample, got {values}")
    return values


def _extents(value: Any, what: str) -> tuple[float, ...] | None:
    """One value (all axes), (h, w), or (d, h, w) for volumes."""
    if value is None or isinstance(value, (int, float, np.integer, np.floating)):
        return _pair(value, what)
    values = tuple(float(v) for v in np.asarray(value).reshape(-1))
    if len(values) not in (2, 3):
        raise PipelineDefinitionError(f"resize: {what} must be (height, width) or (depth, height, width), got {value!r}")
    return values

@fn_function(RESAMPLING)
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
    antialias: bool = True,
    dtype: DataType | str | None = None,
    roi_start: Sequence[Number] | DataNode | None = None,
    roi_end: Sequence[Number] | DataNode | None = None,
    roi_relative: bool = False,
    subpixel_scale: bool = True,
    min_filter: str | InterpType | None = None,
    mag_filter: str | InterpType | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Resize HWC images (and DHWC volumes), as DALI's ``fn.resize``.

    Args:
        resize_x: output width; alone, the height keeps the aspect ratio
            (negative: flip horizontally).
        resize_y: output height; alone, the width keeps the aspect ratio.
        resize_z: output depth of DHWC volumes (missing extents of a volume
            take the geometric mean of the given scales).
        resize_shorter: length of the shorter edge (aspect kept).
        resize_longer: length of the longer edge (aspect kept).
        size: ``(height, width)`` (volumes: ``(depth, height, width)``); a 0 extent keeps the aspect ratio.
        mode: ``default``, ``stretch``, ``not_larger``, ``not_smaller``.
        max_size: cap on the output extent(s): one value or one per axis.
        interp_type: ``INTERP_NN``, ``INTERP_LINEAR`` (default), ``INTERP_CUBIC``,
            ``INTERP_LANCZOS3``, ``INTERP_GAUSSIAN``, ``INTERP_TRIANGULAR``.
        antialias: widen the filter when downscaling (on by default, like DALI).
        dtype: output type, ``UINT8`` or ``FLOAT`` (default: the input's).
        roi_start: ``(y, x)`` start of the input region to resize (with ``roi_end``).
        roi_end: ``(y, x)`` end of the input region (before start: flipped).
        roi_relative: the roi is given as fractions of the input size.
        subpixel_scale: a fractional output size keeps its exact scale (the
            source window is adjusted about its centre); ``False``: the
            rounded size covers the whole window.
        min_filter: the filter of downscaled axes (default ``interp_type``).
        mag_filter: the filter of upscaled axes (default ``interp_type``; never antialiased).
        device: ``"cpu"`` or ``"gpu"``.
    """
    constants, per_sample = split_arguments(dict(
        resize_x=resize_x, resize_y=resize_y, resize_z=resize_z, resize_shorter=resize_shorter,
        resize_longer=resize_longer, size=size, roi_start=roi_start, roi_end=roi_end,
    ))
    if (roi_start is None) != (roi_end is None):
        raise PipelineDefinitionError("resize: give roi_start and roi_end together")
    spec = ResizeSpec.from_args(
        **constants, mode=mode, max_size=max_size, interp_type=interp_type,
        antialias=antialias, dtype=dtype, roi_relative=roi_relative, subpixel_scale=subpixel_scale,
        min_filter=min_filter, mag_filter=mag_filter,
    )
    if not per_sample and not any(
        v is not None for v in (spec.resize_x, spec.resize_y, spec.resize_z, spec.resize_shorter, spec.resize_longer,
                                spec.size)
    ):
        raise PipelineDefinitionError(
            "resize: say what size to produce (resize_x, resize_y, resize_shorter, resize_longer or size)"
        )
    return add_frames_node(Resize(spec, name=name), data, per_sample, device=device)
