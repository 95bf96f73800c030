"""``tensor_resize`` (and DALI's deprecated ``experimental.tensor_resize``): resize any axes of a
tensor, as DALI 2.4.

The axes resized are ``axes`` / ``axis_names`` (default: all of them; the
others, e.g. channels, are kept). Their output extents come from ``sizes``
(DALI's resize rules per ``mode``: ``default`` scales missing (0) extents by
the geometric mean of the given ones, ``stretch`` keeps them, ``not_larger``
/ ``not_smaller`` keep the aspect ratio; ``max_size`` caps them) or from
``scales`` (``size_rounding``: ``round`` (halves away from zero),
``truncate``, ``ceil``), over the region ``roi_start``..``roi_end`` (pixels,
or fractions with ``roi_relative``; start after end flips). With
``subpixel_scale`` (default) a fractional output extent keeps its exact
scale: the region shrinks or grows about the point ``alignment`` (0 start,
0.5 centre, 1 end).

Resampling is separable: one pass per resized axis with the taps and weights
of the image resampler (``_native/imgproc.resample_plan``: the same filters,
``interp_type`` NN, LINEAR, CUBIC, LANCZOS3, GAUSSIAN, TRIANGULAR, and
``antialias`` when downscaling), accumulated in float32 as DALI does, then
converted to ``dtype`` (the input's, or FLOAT): integers round half to even
and saturate. The passes are written over ``xp``, so the GPU runs this code too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .._native import imgproc
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device, InterpType, Number, parse_dtype, parse_interp
from .arguments import fn_function, ints_argument, resolve_axes, static_layout_axes

__all__ = ["TensorResize", "resample_axis", "tensor_resize"]

F32 = np.float32
ROUNDING = ("round", "truncate", "ceil")


def _ints_round(x: float) -> int:
    return int(math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1))


def resample_axis(xp: Any, x: Any, axis: int, out_len: int, roi: tuple[float, float], interp: InterpType,
                  antialias: bool) -> Any:
    """``x`` (float32) resampled along ``axis`` to ``out_len`` over the source range ``roi``."""
    n = x.shape[axis]
    plan = imgproc.resample_plan((n, 1, 1), (out_len, 1), interp=interp, antialias=antialias,
                                 roi=(roi[0], 0.0, roi[1], 1.0)).y
    taps = xp.asarray(plan.taps) if xp is not np else plan.taps
    weights = xp.asarray(plan.weights) if xp is not np else plan.weights
    shape = [1] * x.ndim
    shape[axis] = out_len
    acc: Any = None
    for k in range(plan.support):  # the C code's order: tap by tap
        term = xp.take(x, taps[:, k], axis=axis) * weights[:, k].reshape(shape)
        acc = term if acc is None else acc + term
    return acc.astype(F32)



def _extents_plan(
    in_shape: Sequence[float], requested: Sequence[float | None], *, mode: str = "default",
    resize_shorter: float | None = None, resize_longer: float | None = None,
    max_size: Sequence[float] | None = None,
) -> tuple[float, ...]:
    """The unrounded output extents under DALI's resize rules (tensor_resize's sizes, any rank)."""
    n = len(in_shape)
    cap = None if max_size is None else [float(v) for v in max_size]
    if resize_shorter or resize_longer:
        target = float(resize_shorter or resize_longer)  # type: ignore[arg-type]
        edge = min(in_shape) if resize_shorter else max(in_shape)
        scale = target / edge
        if cap is not None:
            scale = min(scale, *(c / s for c, s in zip(cap, in_shape)))
        return tuple(target if s == edge and scale == target / edge else s * scale for s in in_shape)
    req = [float(r) if r else None for r in requested]
    given = [(r, s) for r, s in zip(req, in_shape) if r]
    if not given:
        return tuple(float(s) for s in in_shape)
    if mode == "stretch" or (mode == "default" and len(given) == n):
        out = [r if r else s for r, s in zip(req, in_shape)]
        if cap is not None:
            out = [min(o, c) for o, c in zip(out, cap)]
        return tuple(out)
    scales = [r / s for r, s in given]
    if mode == "default":
        scale = math.exp(sum(math.log(v) for v in scales) / len(scales))
        out = [r if r else s * scale for r, s in zip(req, in_shape)]
        if cap is not None:
            out = [min(o, c) for o, c in zip(out, cap)]
        return tuple(out)
    scale = min(scales) if mode == "not_larger" else max(scales)
    if cap is not None:
        scale = min(scale, *(c / s for c, s in zip(cap, in_shape)))
    return tuple(r if r and scale == r / s else s * scale for r, s in zip(req, in_shape))


class TensorResize(Operator):
    """Resizes the chosen axes of each sample (see the module docstring)."""

    name: ClassVar[str] = "tensor_resize"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"sizes", "scales", "roi_start", "roi_end", "alignment"})
    keeps_channels = True

    def __init__(self, *, axes: tuple[int, ...] | None, sizes: tuple[float, ...] | None,
                 scales: tuple[float, ...] | None, mode: str, max_size: tuple[float, ...] | None,
                 size_rounding: str, roi_start: tuple[float, ...] | None, roi_end: tuple[float, ...] | None,
                 roi_relative: bool, subpixel_scale: bool, alignment: tuple[float, ...], interp: InterpType,
                 antialias: bool, dtype: np.dtype | None, layout: str, name: str | None = None) -> None:
        super().__init__(name=name)
        self.axes, self.sizes, self.scales, self.mode, self.max_size = axes, sizes, scales, mode, max_size
        self.size_rounding, self.roi_start, self.roi_end, self.roi_relative = size_rounding, roi_start, roi_end, \
            roi_relative
        self.subpixel_scale, self.alignment, self.interp, self.antialias = subpixel_scale, alignment, interp, antialias
        self.dtype = dtype
        self._layout = layout

    @staticmethod
    def _vals(value: Any, n: int, what: str) -> list[float] | None:
        if value is None:
            return None
        values = [float(v) for v in np.asarray(value).reshape(-1)]
        if len(values) == 1:
            values *= n
        if len(values) != n:
            raise SampleError(f"tensor_resize: {what} has {len(values)} values for {n} resized axes")
        return values

    def plan(self, chunk: Chunk, row: int, shape: tuple[int, ...]) -> list[tuple[int, int, tuple[float, float]]]:
        """Per resized axis: (axis, output extent, source range)."""
        ndim = len(shape)
        axes = list(range(ndim)) if self.axes is None else resolve_axes(self.axes, ndim, "tensor_resize: axes")
        n = len(axes)
        extents = [shape[a] for a in axes]
        start = self._vals(chunk.arg("roi_start", row, self.roi_start), n, "roi_start")
        end = self._vals(chunk.arg("roi_end", row, self.roi_end), n, "roi_end")
        if start is None:
            start = [0.0] * n
        if end is None:
            end = [1.0] * n if self.roi_relative else [float(e) for e in extents]
        if self.roi_relative:
            start = [s * e for s, e in zip(start, extents)]
            end = [v * e for v, e in zip(end, extents)]
        lengths = [abs(b - a) for a, b in zip(start, end)]
        if any(v == 0 for v in lengths):
            raise SampleError(f"tensor_resize: the region {start}..{end} is empty on some axis")
        sizes = self._vals(chunk.arg("sizes", row, self.sizes), n, "sizes")
        scales = self._vals(chunk.arg("scales", row, self.scales), n, "scales")
        cap = self._vals(self.max_size, n, "max_size")
        if scales is not None:
            exact = [s * v for s, v in zip(scales, lengths)]
            if cap is not None:
                exact = [min(x, c) for x, c in zip(exact, cap)]
            rnd: Any = {"round": _ints_round, "truncate": math.trunc, "ceil": math.ceil}[self.size_rounding]
            outs = [max(1, int(rnd(x))) for x in exact]
        elif sizes is not None:
            exact = list(_extents_plan(lengths, [v or None for v in sizes], mode=self.mode, max_size=cap))
            outs = [max(1, _ints_round(x)) for x in exact]
        else:
            exact, outs = [float(v) for v in lengths], [max(1, _ints_round(v)) for v in lengths]
        align = self._vals(chunk.arg("alignment", row, self.alignment), n, "alignment") or [0.5] * n
        plan = []
        for a, o, x, s, e, al in zip(axes, outs, exact, start, end, align):
            if self.subpixel_scale and x != o:  # keep the exact scale: the region follows the rounding
                length = (e - s) * o / x
                center = (1 - al) * s + al * e
                s = center - al * length
                e = s + length
            plan.append((a, o, (s, e)))
        return plan

    def apply(self, xp: Any, chunk: Chunk, row: int, sample: Any) -> Any:
        dtype = np.dtype(self.dtype or sample.dtype)
        if np.dtype(sample.dtype).kind not in "uif":
            raise SampleError(f"tensor_resize: expects numbers, got {sample.dtype}")
        if 0 in sample.shape:
            raise SampleError(f"tensor_resize: the sample is empty, shape {tuple(sample.shape)}")
        x = sample.astype(F32)
        for axis, out_len, roi in self.plan(chunk, row, tuple(sample.shape)):
            if out_len == x.shape[axis] and roi == (0.0, float(out_len)):
                continue  # identity along this axis
            x = resample_axis(xp, x, axis, out_len, roi, self.interp, self.antialias)
        if dtype.kind in "ui":
            info = np.iinfo(dtype)
            return xp.clip(xp.rint(x), info.min, info.max).astype(dtype)
        return x.astype(dtype)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, s: self.apply(np, chunk, row, np.asarray(s)))]

    def layout(self, index: int) -> str:
        return self._layout


def _tuple(value: Any) -> tuple[float, ...] | None:
    return None if value is None else tuple(float(v) for v in np.asarray(value).reshape(-1))


@fn_function()
def tensor_resize(
    input: DataNode,
    *,
    sizes: Number | Sequence[Number] | DataNode | None = None,
    scales: Number | Sequence[Number] | DataNode | None = None,
    axes: int | Sequence[int] | None = None,
    axis_names: str | None = None,
    mode: str = "default",
    max_size: Number | Sequence[Number] | None = None,
    size_rounding: str = "round",
    roi_start: Number | Sequence[Number] | DataNode | None = None,
    roi_end: Number | Sequence[Number] | DataNode | None = None,
    roi_relative: bool = False,
    subpixel_scale: bool = True,
    alignment: Number | Sequence[Number] | DataNode = 0.5,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    min_filter: str | InterpType | None = None,
    mag_filter: str | InterpType | None = None,
    antialias: bool = True,
    dtype: DataType | str | None = None,
    minibatch_size: int = 32,
    temp_buffer_hint: int = 0,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Resize the ``axes`` (default: all) of tensors to ``sizes`` or by ``scales``.

    Args:
        sizes: output extents of the resized axes (0: from the others, per ``mode``).
        scales: scale factors of the resized axes (``size_rounding`` rounds the extents).
        axes, axis_names: the axes resized (default: every axis).
        mode: ``default``, ``stretch``, ``not_larger``, ``not_smaller``.
        max_size: cap on the output extents.
        size_rounding: ``round`` (default), ``truncate`` or ``ceil`` (with ``scales``).
        roi_start, roi_end: the source region (pixels; fractions with ``roi_relative``).
        subpixel_scale: keep exact scales for fractional sizes (default on).
        alignment: the point of the region that stays in place (0.5: its centre).
        interp_type: the filter (default LINEAR); ``min_filter``/``mag_filter`` must agree with it here.
        antialias: widen the filter when downscaling (default on).
        dtype: output type: the input's (default) or FLOAT.
        minibatch_size, temp_buffer_hint: accepted (DALI's GPU tuning).
    """
    what = "tensor_resize"
    if (sizes is None) == (scales is None):
        raise PipelineDefinitionError(f"{what}: give exactly one of sizes and scales")
    if axes is not None and axis_names is not None:
        raise PipelineDefinitionError(f"{what}: axes and axis_names are mutually exclusive")
    if mode not in ("default", "stretch", "not_larger", "not_smaller"):
        raise PipelineDefinitionError(f"{what}: unknown mode {mode!r}")
    if size_rounding not in ROUNDING:
        raise PipelineDefinitionError(f"{what}: size_rounding must be one of {ROUNDING}, got {size_rounding!r}")
    interp = parse_interp(interp_type)
    for extra in (min_filter, mag_filter):
        if extra is not None and parse_interp(extra) is not interp:
            raise PipelineDefinitionError(
                f"{what}: min_filter/mag_filter different from interp_type are not supported; give interp_type")
    layout = input_layout(input, what)
    ax: tuple[int, ...] | None = None
    if axis_names is not None:
        ax = tuple(static_layout_axes(axis_names, layout, f"{what}: axis_names"))
    else:
        ax = ints_argument(axes, f"{what}: axes")
    out_dtype = None
    if dtype is not None:
        out_dtype = parse_dtype(dtype).numpy
    constants, per_sample = split_arguments({"sizes": sizes, "scales": scales, "roi_start": roi_start,
                                             "roi_end": roi_end, "alignment": alignment})
    op = TensorResize(axes=ax, sizes=_tuple(constants.get("sizes")), scales=_tuple(constants.get("scales")),
                      mode=mode, max_size=_tuple(max_size), size_rounding=size_rounding,
                      roi_start=_tuple(constants.get("roi_start")), roi_end=_tuple(constants.get("roi_end")),
                      roi_relative=roi_relative, subpixel_scale=subpixel_scale,
                      alignment=_tuple(constants.get("alignment", 0.5)) or (0.5,), interp=interp,
                      antialias=antialias, dtype=out_dtype, layout=layout, name=name)
    return add_node(op, [input], per_sample, device=device)[0]
