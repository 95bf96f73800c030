"""``slice``: an N-D region of each sample, as DALI 2.4's CPU ``fn.slice``.

The region is given on some axes (``axes`` / ``axis_names``, default ``"WH"``:
x first), the other axes are kept whole. Two ways to give it:

* **positional inputs** ``anchor`` and ``shape`` (constants or per-sample
  data, both float or both integer). Floats are fractions of the extent unless
  ``normalized_anchor`` / ``normalized_shape`` is False; integers are always
  absolute. Computed in double from the float32 values: start ``= a * n``,
  end ``= (a + s) * n`` (both normalized), ``a + s * n``, ``a * n + s`` or
  ``a + s``.
* **named arguments**: one of ``start`` / ``rel_start`` (default 0) and one of
  ``end`` / ``rel_end`` / ``shape`` / ``rel_shape`` (default: the extent).
  As measured on DALI 2.4: ``rel_start * n`` and ``rel_end * n`` are float32
  products; ``rel_start`` with ``rel_shape`` ends at ``rs * n + rsh * n`` in
  double; ``start`` with ``rel_shape`` at ``start + float32(rsh * n)``.

Start and end are then rounded half away from zero; the slice is
``[start, end)``. ``out_of_bounds_policy``: ``error`` (default), ``pad`` /
``constant`` (``fill_values``, one or one per channel), ``edge`` / ``clamp``,
``reflect`` / ``reflect_1001`` (numpy ``symmetric``), ``reflect_101`` (numpy
``reflect``), ``wrap``, ``trim_to_shape``.

Without an input layout the axes names resolve on the default layout of the
sample's dimensions, as DALI: ``HW``, ``HWC``, ``DHWC``. ``dtype``
(``FLOAT``, ``FLOAT16`` or ``UINT8``) converts the output as DALI's slice
kernel does: float to integer truncates toward zero and saturates (NaN -> 0);
an integer fill value is the float truncated and wrapped to the type.
Unlike DALI 2.4's CPU slice (at most 4 dimensions), any number of dimensions
works, and float64 anchors are read as float32.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, require_node, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device, Number, parse_dtype
from .arguments import fn_function, ints_argument, resolve_axes

__all__ = [
    "BORDER_POLICIES",
    "Region",
    "Slice",
    "axes_from_names",
    "border_index",
    "convert_like_slice",
    "typed_fill",
    "default_layout",
    "extract_region",
    "parse_border_policy",
    "slice",
]

#: DALI's out_of_bounds_policy names and the policy each stands for.
BORDER_POLICIES = {
    "error": "error",
    "pad": "constant",
    "constant": "constant",
    "edge": "edge",
    "clamp": "edge",
    "reflect": "reflect_1001",
    "reflect_1001": "reflect_1001",
    "reflect_101": "reflect_101",
    "wrap": "wrap",
    "trim_to_shape": "trim_to_shape",
}
_NUMPY_MODES = {"edge": "edge", "reflect_1001": "symmetric", "reflect_101": "reflect", "wrap": "wrap"}
#: The output types DALI's slice offers.
_OUT_TYPES = (DataType.FLOAT, DataType.FLOAT16, DataType.UINT8)
#: The named region arguments.
_NAMED = ("start", "rel_start", "end", "rel_end", "shape", "rel_shape")

Region = tuple[tuple[int, ...], tuple[int, ...]]
"""(starts, ends) of a region, one per dimension of the sample; half-open."""


def parse_border_policy(value: Any, op_name: str) -> str:
    """The canonical out-of-bounds policy for one of DALI's names (``pad`` -> ``constant``)."""
    key = getattr(value, "value", value)
    if not isinstance(key, str) or key.lower() not in BORDER_POLICIES:
        raise PipelineDefinitionError(
            f"{op_name}: out_of_bounds_policy must be one of {', '.join(BORDER_POLICIES)}, got {value!r}"
        )
    return BORDER_POLICIES[key.lower()]


def default_layout(ndim: int) -> str:
    """DALI's layout for a sample without one: ``HW``, ``HWC``, ``DHWC`` (else none)."""
    return {2: "HW", 3: "HWC", 4: "DHWC"}.get(ndim, "")


def axes_from_names(names: str, layout: str, ndim: int, op_name: str) -> tuple[int, ...]:
    """Dimension indices of the letters ``names`` in ``layout`` (or the default layout of ``ndim``)."""
    layout = layout or default_layout(ndim)
    missing = [c for c in names if c not in layout]
    if missing:
        where = f"the layout {layout!r}" if layout else f"a {ndim}-D sample without a layout"
        raise SampleError(
            f"{op_name}: axis {missing[0]!r} is not in {where}; give axes=[...] (dimension indices) "
            "or axis_names that the layout has"
        )
    return tuple(layout.index(c) for c in names)


def _llround(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def _values(value: Any, count: int, what: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "uif":
        raise SampleError(f"slice: {what} must be numbers, got dtype {arr.dtype}")
    arr = arr.reshape(-1)
    if arr.size != count:
        raise SampleError(f"slice: {what} has {arr.size} values; expected {count}, one per sliced axis")
    return arr


def _f32(x: Any) -> float:
    return float(np.float32(x))


def positional_region(
    extents: Sequence[int], axes: Sequence[int], anchor: Any, shape: Any,
    normalized_anchor: bool, normalized_shape: bool,
) -> list[tuple[float, float]]:
    """(start, end) before rounding on each of ``axes`` from anchor/shape inputs."""
    a_arr, s_arr = _values(anchor, len(axes), "anchor"), _values(shape, len(axes), "shape")
    a_float, s_float = a_arr.dtype.kind == "f", s_arr.dtype.kind == "f"
    if a_float != s_float:
        raise SampleError(
            f"slice: anchor and shape must have the same type (both float or both integer), "
            f"got {a_arr.dtype} and {s_arr.dtype}"
        )
    norm_a, norm_s = normalized_anchor and a_float, normalized_shape and s_float
    out = []
    for i, dim in enumerate(axes):
        a = _f32(a_arr[i]) if a_float else float(a_arr[i])
        s = _f32(s_arr[i]) if s_float else float(s_arr[i])
        n = extents[dim]
        if norm_a and norm_s:
            start, end = a * n, (a + s) * n
        else:
            start = a * n if norm_a else a
            end = start + (s * n if norm_s else s)
        out.append((start, end))
    return out


def named_region(extents: Sequence[int], axes: Sequence[int], args: dict[str, Any]) -> list[tuple[float, float]]:
    """(start, end) before rounding on each of ``axes`` from the named arguments (see the module doc)."""
    vals = {k: _values(v, len(axes), k) for k, v in args.items() if v is not None}
    out = []
    for i, dim in enumerate(axes):
        n = extents[dim]
        if "start" in vals:
            start = float(vals["start"][i])
        elif "rel_start" in vals:
            start = float(np.float32(vals["rel_start"][i]) * np.float32(n))
        else:
            start = 0.0
        if "end" in vals:
            end = float(vals["end"][i])
        elif "rel_end" in vals:
            end = float(np.float32(vals["rel_end"][i]) * np.float32(n))
        elif "shape" in vals:
            if vals["shape"][i] < 0:
                raise SampleError(f"slice: shape must be >= 0, got {vals['shape'].tolist()}")
            end = start + float(vals["shape"][i])
        elif "rel_shape" in vals:
            if vals["rel_shape"][i] < 0:
                raise SampleError(f"slice: rel_shape must be >= 0, got {vals['rel_shape'].tolist()}")
            if "rel_start" in vals:
                end = _f32(vals["rel_start"][i]) * n + _f32(vals["rel_shape"][i]) * n
            else:
                end = start + float(np.float32(vals["rel_shape"][i]) * np.float32(n))
        else:
            end = float(n)
        out.append((start, end))
    return out


def round_region(shape: Sequence[int], axes: Sequence[int], bounds: Sequence[tuple[float, float]]) -> Region:
    """Whole extents on the other axes; on ``axes``, the bounds rounded half away from zero."""
    starts, ends = [0] * len(shape), list(shape)
    for dim, (lo, hi) in zip(axes, bounds):
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise SampleError(f"slice: the region on axis {dim} is not finite: start={lo}, end={hi}")
        s, e = _llround(lo), _llround(hi)
        if e < s:
            raise SampleError(f"slice: the end on axis {dim} is before the start: start={lo:g}, end={hi:g}")
        starts[dim], ends[dim] = s, e
    return tuple(starts), tuple(ends)


def typed_fill(fill: Sequence[float], dtype: np.dtype) -> np.ndarray:
    """The fill values in ``dtype``, flat: integers take the float truncated and wrapped, as DALI."""
    values = np.asarray(fill, dtype=np.float64).reshape(-1)
    if np.dtype(dtype).kind in "ui":
        with np.errstate(invalid="ignore"):
            return np.trunc(np.nan_to_num(values)).astype(np.int64).astype(dtype)
    return values.astype(dtype)


def _fill_array(fill: Sequence[float], dtype: np.dtype, ndim: int, channel_dim: int | None,
                channels: int) -> np.ndarray:
    """The fill values in ``dtype`` (``typed_fill``), shaped to broadcast over a region."""
    values = typed_fill(fill, dtype)
    if values.size == 1:
        return values.reshape(())
    if channel_dim is None:
        raise SampleError(
            f"slice: {values.size} fill_values were given but the sample has no channel axis "
            "(no 'C' in its layout); give one fill value"
        )
    # Output channel k takes fill value k (also when the channel axis itself is padded).
    if channels != values.size:
        raise SampleError(
            f"slice: {values.size} fill_values do not match the {channels} channels of the output; "
            "give one value or one per channel"
        )
    shape = [1] * ndim
    shape[channel_dim] = channels
    return values.reshape(shape)


def extract_region(
    sample: np.ndarray, region: Region, policy: str, fill_values: Sequence[float] = (0.0,),
    channel_dim: int | None = None, out: np.ndarray | None = None,
) -> np.ndarray:
    """Copy ``region`` out of ``sample`` (any dimensions), applying the border ``policy``.

    ``policy`` is canonical (see ``parse_border_policy``). ``out`` (the right
    shape and the sample's type), when given, receives the result.
    """
    starts, ends = region
    shape = sample.shape
    inside = all(0 <= s and e <= n for s, e, n in zip(starts, ends, shape))
    if not inside:
        if policy == "error":
            raise SampleError(
                f"slice: the region [{list(starts)}, {list(ends)}) leaves the sample of shape {tuple(shape)}; "
                "use out_of_bounds_policy='pad' (or edge, reflect, wrap, trim_to_shape) or a smaller region"
            )
        if policy == "trim_to_shape":
            starts = tuple(min(max(s, 0), n) for s, n in zip(starts, shape))
            ends = tuple(max(min(e, n), s) for s, e, n in zip(starts, ends, shape))
            inside = True
    out_shape = tuple(e - s for s, e in zip(starts, ends))
    if inside:
        view = sample[tuple(builtins.slice(s, e) for s, e in zip(starts, ends))]
        if out is not None and out.shape == out_shape:
            out[...] = view
            return out
        return np.ascontiguousarray(view)
    result = out if out is not None and out.shape == out_shape else np.empty(out_shape, sample.dtype)
    if policy == "constant":
        c = channel_dim
        channels = out_shape[c] if c is not None else 1
        result[...] = _fill_array(fill_values, sample.dtype, sample.ndim, c, channels)
        lo = [max(s, 0) for s in starts]
        hi = [min(e, n) for e, n in zip(ends, shape)]
        if all(h > low for low, h in zip(lo, hi)):
            dst = tuple(builtins.slice(low - s, h - s) for low, h, s in zip(lo, hi, starts))
            result[dst] = sample[tuple(builtins.slice(low, h) for low, h in zip(lo, hi))]
        return result
    if 0 in shape:
        raise SampleError(f"slice: out_of_bounds_policy={policy!r} cannot extend an empty sample {tuple(shape)}")
    # edge / reflect / wrap: map each axis's output coordinates into the sample, one axis at a time.
    view = sample
    for dim, (s, e, n) in enumerate(zip(starts, ends, shape)):
        if 0 <= s and e <= n:
            view = view[(builtins.slice(None),) * dim + (builtins.slice(s, e),)]
        else:
            view = np.take(view, border_index(np.arange(s, e), n, policy), axis=dim)
    result[...] = view
    return result


def border_index(idx: np.ndarray, n: int, policy: str) -> np.ndarray:
    """Coordinates ``idx`` mapped into ``[0, n)`` by a border policy (DALI's edge/reflect/wrap)."""
    if policy == "edge" or n == 1:
        return np.clip(idx, 0, n - 1)
    if policy == "wrap":
        return np.mod(idx, n)
    if policy == "reflect_1001":  # ... 1 0 | 0 1 2 ... n-1 | n-1 n-2 ...
        m = np.mod(idx, 2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    m = np.mod(idx, 2 * n - 2)  # reflect_101: ... 2 1 | 0 1 2 ... n-1 | n-2 ...
    return np.where(m < n, m, 2 * n - 2 - m)


def convert_like_slice(values: Any, dtype: np.dtype, xp: Any = np) -> Any:
    """DALI's slice conversion: float to integer truncates toward zero and saturates, NaN -> 0.

    ``xp`` is the array module of ``values`` (numpy, or cupy on the GPU).
    """
    if values.dtype == dtype:
        return values
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        if values.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                v = xp.trunc(xp.nan_to_num(values.astype(np.float64), nan=0.0, posinf=info.max, neginf=info.min))
            return xp.clip(v, info.min, info.max).astype(dtype)
        return xp.clip(values, info.min, info.max).astype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(dtype)


@dataclass(frozen=True)
class _Positional:
    """Constant positional anchor and shape (``None``: given per sample as inputs)."""

    anchor: np.ndarray | None
    shape: np.ndarray | None


class Slice(Operator):
    """Cuts an N-D region out of each sample (see the module doc)."""

    keeps_channels = True
    name = "slice"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({*_NAMED, "axes"})

    def __init__(
        self, *, layout: str = "", axes: Sequence[int] | int | None = None, axis_names: str | None = None,
        named: dict[str, Any] | None = None, positional: _Positional | None = None,
        normalized_anchor: bool = True, normalized_shape: bool = True,
        out_of_bounds_policy: str = "error", fill_values: Any = 0.0, dtype: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self._layout = layout or ""
        self.axes = ints_argument(axes, "slice: axes")
        self.axis_names = axis_names
        self.named = {k: None if v is None else np.asarray(v) for k, v in (named or {}).items()}
        self.positional = positional
        self.normalized_anchor, self.normalized_shape = bool(normalized_anchor), bool(normalized_shape)
        self.policy = parse_border_policy(out_of_bounds_policy, "slice")
        fills = np.asarray(fill_values, dtype=np.float64).reshape(-1)
        if fills.size == 0:
            raise PipelineDefinitionError("slice: fill_values must have at least one value")
        self.fill_values = tuple(float(v) for v in fills)
        self.out_dtype: np.dtype | None = None
        if dtype is not None:
            parsed = parse_dtype(dtype)
            if parsed not in _OUT_TYPES:
                raise PipelineDefinitionError(
                    f"slice: dtype must be FLOAT, FLOAT16 or UINT8 (as DALI), got {parsed.name}"
                )
            self.out_dtype = parsed.numpy

    def _axes(self, chunk: Chunk, row: int, ndim: int) -> tuple[int, ...]:
        if self.axis_names is not None:
            return axes_from_names(self.axis_names, self._layout, ndim, self.name)
        axes = chunk.arg("axes", row, self.axes)
        if axes is None:
            return axes_from_names("WH", self._layout, ndim, self.name)
        result = resolve_axes(np.asarray(axes).reshape(-1).tolist(), ndim, "slice: axes")
        if len(set(result)) != len(result):
            raise SampleError(f"slice: axes must be distinct, got {list(np.asarray(axes).reshape(-1))}")
        return tuple(result)

    def region(self, chunk: Chunk, row: int, shape: tuple[int, ...]) -> Region:
        """The (unclipped) region of ``row``'s sample of ``shape``."""
        axes = self._axes(chunk, row, len(shape))
        if self.positional is not None:
            p = self.positional
            anchor = p.anchor if p.anchor is not None else chunk.inputs[1][row]
            size = p.shape if p.shape is not None else chunk.inputs[-1][row]
            bounds = positional_region(shape, axes, anchor, size, self.normalized_anchor, self.normalized_shape)
        else:
            args = {k: chunk.arg(k, row, self.named.get(k)) for k in _NAMED}
            bounds = named_region(shape, axes, args)
        return round_region(shape, axes, bounds)

    def channel_dim(self, ndim: int) -> int | None:
        layout = self._layout or default_layout(ndim)
        return layout.index("C") if "C" in layout and len(layout) == ndim else None

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, sample: Any) -> np.ndarray:
            arr = np.asarray(sample)
            if arr.dtype.kind not in "uif":
                raise SampleError(f"slice: the input must be numeric, got dtype {arr.dtype}")
            region = self.region(chunk, row, arr.shape)
            cdim = self.channel_dim(arr.ndim)
            if self.out_dtype is None or self.out_dtype == arr.dtype:
                starts, ends = region
                buf = None
                if self.policy != "trim_to_shape":
                    buf = chunk.output_buffer(row, tuple(e - s for s, e in zip(starts, ends)), arr.dtype)
                return extract_region(arr, region, self.policy, self.fill_values, cdim, buf)
            # Fill values are converted to the output type, not through the input's.
            cut = extract_region(arr, region, self.policy, (0.0,), cdim)
            converted = convert_like_slice(cut, self.out_dtype)
            if self.policy == "constant":
                starts, ends = region
                mask = _outside_mask(arr.shape, starts, ends)
                if mask is not None:
                    channels = converted.shape[cdim] if cdim is not None else 1
                    fill = _fill_array(self.fill_values, self.out_dtype, arr.ndim, cdim, channels)
                    converted[mask] = np.broadcast_to(fill, converted.shape)[mask]
            return converted

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


def _outside_mask(shape: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> np.ndarray | None:
    """Where a region's elements fall outside the sample (None when nowhere)."""
    inside: np.ndarray | None = None
    for dim, (s, e, n) in enumerate(zip(starts, ends, shape)):
        coords = np.arange(s, e)
        ok = (coords >= 0) & (coords < n)
        if ok.all():
            continue
        view = ok.reshape([-1 if d == dim else 1 for d in range(len(shape))])
        inside = view if inside is None else inside & view
    if inside is None:
        return None
    return np.broadcast_to(~inside, tuple(e - s for s, e in zip(starts, ends)))


def _constant_input(value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "uif":
        raise PipelineDefinitionError(f"slice: {what} must be numbers or pipeline data, got {value!r}")
    return arr.reshape(-1)


@fn_function()
def slice(
    data: DataNode,
    anchor: Sequence[Number] | Number | DataNode | None = None,
    shape_input: Sequence[Number] | Number | DataNode | None = None,
    /,
    *,
    axes: Sequence[int] | int | DataNode | None = None,
    axis_names: str | None = None,
    start: Sequence[int] | int | DataNode | None = None,
    rel_start: Sequence[Number] | Number | DataNode | None = None,
    end: Sequence[int] | int | DataNode | None = None,
    rel_end: Sequence[Number] | Number | DataNode | None = None,
    shape: Sequence[int] | int | DataNode | None = None,
    rel_shape: Sequence[Number] | Number | DataNode | None = None,
    normalized_anchor: bool = True,
    normalized_shape: bool = True,
    out_of_bounds_policy: str = "error",
    fill_values: Number | Sequence[Number] = 0.0,
    dtype: DataType | str | None = None,
    output_dtype: DataType | str | None = None,
    image_type: Any = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Cut a region out of each sample (any number of dimensions), as DALI's ``fn.slice``.

    Args:
        data: the samples.
        anchor: (positional) start of the region, one value per axis of ``axes``.
        shape_input: (positional) size of the region, same order.
        axes: the dimensions the region values refer to (negative from the
            back); default ``[1, 0]`` as DALI, i.e. ``axis_names="WH"``.
        axis_names: the same as layout letters (``"WH"``, ``"D"``, ``"t"``);
            takes priority over ``axes``.
        start, rel_start, end, rel_end, shape, rel_shape: the region as named
            arguments (absolute or relative), instead of ``anchor``/``shape_input``.
        normalized_anchor, normalized_shape: float positional inputs are
            fractions of the extent (default); integers are always absolute.
        out_of_bounds_policy: ``error``, ``pad``/``constant``, ``edge``/``clamp``,
            ``reflect``/``reflect_1001``, ``reflect_101``, ``wrap``, ``trim_to_shape``.
        fill_values: padding value, one or one per channel (``C`` of the layout).
        dtype: output type, ``FLOAT``, ``FLOAT16`` or ``UINT8`` (default: the input's).
        output_dtype: deprecated alias of ``dtype``.
        image_type: unused (DALI no longer uses it either).
    """
    layout = input_layout(data, "slice")
    if output_dtype is not None:
        if dtype is not None:
            raise PipelineDefinitionError("slice: give dtype or its deprecated alias output_dtype, not both")
        dtype = output_dtype
    named_given = {k: v for k, v in dict(start=start, rel_start=rel_start, end=end, rel_end=rel_end,
                                         shape=shape, rel_shape=rel_shape).items() if v is not None}
    constants, per_sample = split_arguments(named_given)
    axes_node = None
    if isinstance(axes, DataNode):
        axes_node, axes = axes, None
    inputs = [data]
    positional = None
    if anchor is not None or shape_input is not None:
        if anchor is None or shape_input is None:
            raise PipelineDefinitionError("slice: give both positional inputs, anchor and shape, or neither")
        if named_given:
            raise PipelineDefinitionError(
                f"slice: the positional anchor and shape cannot be combined with named arguments {sorted(named_given)}"
            )
        anchor_const = None if isinstance(anchor, DataNode) else _constant_input(anchor, "anchor")
        shape_const = None if isinstance(shape_input, DataNode) else _constant_input(shape_input, "shape")
        for node in (anchor, shape_input):
            if isinstance(node, DataNode):
                inputs.append(require_node(node, "slice", len(inputs)))
        positional = _Positional(anchor_const, shape_const)
    else:
        if not named_given:
            raise PipelineDefinitionError(
                "slice: give the region: positional anchor and shape inputs, or named arguments "
                "(start/rel_start with end/rel_end/shape/rel_shape)"
            )
        for a, b in (("start", "rel_start"), ("end", "rel_end"), ("shape", "rel_shape")):
            if a in named_given and b in named_given:
                raise PipelineDefinitionError(f"slice: {a!r} and {b!r} are mutually exclusive")
        ends = [k for k in ("end", "rel_end", "shape", "rel_shape") if k in named_given]
        if len(ends) > 1:
            raise PipelineDefinitionError(f"slice: give one of end, rel_end, shape, rel_shape, got {ends}")
        for key, value in constants.items():
            arr = np.asarray(value).reshape(-1)
            if arr.dtype.kind not in "uif":
                raise PipelineDefinitionError(f"slice: {key} must be numbers, got {value!r}")
            if key in ("shape", "rel_shape") and (arr < 0).any():
                raise PipelineDefinitionError(f"slice: {key} must be >= 0, got {arr.tolist()}")
    if axis_names is not None and layout and any(c not in layout for c in axis_names):
        raise PipelineDefinitionError(f"slice: axis_names {axis_names!r} are not all in the input layout {layout!r}")
    op = Slice(
        layout=layout, axes=axes, axis_names=axis_names, named=constants, positional=positional,
        normalized_anchor=normalized_anchor, normalized_shape=normalized_shape,
        out_of_bounds_policy=out_of_bounds_policy, fill_values=fill_values, dtype=dtype, name=name,
    )
    if axes_node is not None:
        per_sample["axes"] = axes_node
    return add_node(op, inputs, per_sample, device=device)[0]
