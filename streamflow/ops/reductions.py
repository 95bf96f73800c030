"""``reductions.min/max/sum/mean/mean_square/rms/std_dev/variance`` over chosen axes of each sample.

DALI 2.4's behaviour, measured on its CPU operators (``nvidia-dali-cuda130``):

* ``axes`` (ints, negative from the back) or ``axis_names`` (letters of the
  input's layout) pick the reduced axes; neither reduces everything, and
  ``axes=()`` reduces nothing (the output is the input in the output type).
  ``keep_dims`` keeps the reduced axes with extent 1.
* Output types (``dtype`` argument: the accumulator, only the allowed ones):

  ========================  =========================  ===========================
  reduction                 default                    also allowed
  ========================  =========================  ===========================
  min, max                  the input's                (no ``dtype``)
  sum                       uint64 / int64 / float32   the input's, float32
  mean, rms                 float32                    the input's
  mean_square               float32                    uint64 / int64
  std_dev, variance         float32                    (no ``dtype``)
  ========================  =========================  ===========================

  Inputs: 8/16/32/64-bit integers and float32 (float16/float64/bool are
  refused, as in DALI).
* An integer ``dtype`` accumulates in that type, wrapping (``sum(dtype=UINT8)``
  of a photo is its sum modulo 256), and ``mean``/``rms`` then truncate
  (``mean([3, 4], dtype=UINT8)`` is 3).
* ``std_dev(data, mean)`` and ``variance(data, mean)`` take the mean as a
  second input (e.g. ``fn.reductions.mean`` of the same axes, with or without
  ``keep_dims``): ``sum((x - mean)^2) / (N - ddof)``.

Sums are accumulated in float64 (integers exactly in int64/uint64), then
converted: against DALI's recorded outputs, integer sums, min and max are
identical and float results are within relative 5e-7 (largest seen 3.2e-7,
a few float32 ulps; ``tests/unit/ops/test_reductions.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .._native import filters as native
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import DataType, Device
from .arguments import fn_function, ints_argument, resolve_axes, static_layout_axes
from .cast import parse_output_dtype

__all__ = [
    "Reduction",
    "max",
    "mean",
    "mean_square",
    "min",
    "reduce_sample",
    "rms",
    "std_dev",
    "sum",
    "variance",
]

_INPUTS = tuple(np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
                                      np.uint64, np.int64, np.float32))
_F32 = np.dtype(np.float32)


def _wide(dtype: np.dtype) -> np.dtype:
    if dtype.kind == "u":
        return np.dtype(np.uint64)
    if dtype.kind == "i":
        return np.dtype(np.int64)
    return _F32


def output_types(kind: str, in_dtype: np.dtype) -> tuple[np.dtype, tuple[np.dtype, ...]]:
    """(default output type, every allowed ``dtype``) of reduction ``kind`` on ``in_dtype``."""
    if kind in ("min", "max"):
        return in_dtype, (in_dtype,)
    if kind in ("std_dev", "variance"):
        return _F32, (_F32,)
    if kind == "sum":
        return _wide(in_dtype), (in_dtype, _wide(in_dtype), _F32)
    if kind in ("mean", "rms"):
        return _F32, (in_dtype, _F32)
    return _F32, (_wide(in_dtype), _F32)  # mean_square


def _accumulate(x: np.ndarray, axes: tuple[int, ...], acc: np.dtype, square: bool) -> np.ndarray:
    """Sum (of squares) over ``axes`` in ``acc``'s arithmetic: wrapping integers, float64 for floats."""
    wide = np.dtype(np.float64) if acc.kind == "f" else acc
    with np.errstate(over="ignore"):
        if not square:  # numpy converts in buffered blocks: no full-size copy
            return np.asarray(np.sum(x, axis=axes, dtype=wide))
        v = x.astype(wide)
        return np.asarray(np.sum(v * v, axis=axes, dtype=wide))


def _to(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """C conversion: floats truncated toward zero into integers (DALI's integer means)."""
    if dtype.kind in "iu":
        return np.trunc(values).astype(dtype)
    return np.asarray(values).astype(dtype)


def reduce_sample(kind: str, x: np.ndarray, axes: tuple[int, ...], out_dtype: np.dtype,
                  mean: np.ndarray | None = None, ddof: int = 0) -> np.ndarray:
    """Reduction ``kind`` of one sample over ``axes`` (no ``keep_dims``), as DALI computes it."""
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if kind in ("min", "max"):
        if count == 0:
            raise SampleError(f"reductions.{kind}: cannot reduce an empty extent (shape {x.shape})")
        return (np.min if kind == "min" else np.max)(x, axis=axes)
    if kind == "sum":
        return _to(_accumulate(x, axes, out_dtype, False), out_dtype)
    if kind in ("mean", "mean_square", "rms"):
        acc = out_dtype if out_dtype.kind in "iu" else _F32
        total = _accumulate(x, axes, acc, kind != "mean").astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            value = total / count
        if kind == "rms":
            value = np.sqrt(value)
        return _to(value, out_dtype)
    # std_dev / variance around the given mean
    assert mean is not None
    kept = np.expand_dims(np.asarray(mean, np.float64).reshape(_reduced_shape(x.shape, axes, False)), axes)
    dev = x.astype(np.float64) - kept
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.sum(dev * dev, axis=axes) / (count - ddof)
    return (np.sqrt(value) if kind == "std_dev" else value).astype(_F32)


def _histogram_reduce(kind: str, x: np.ndarray, axes: tuple[int, ...], out_dtype: np.dtype,
                      mean: np.ndarray | None, ddof: int) -> np.ndarray | None:
    """uint8 data reduced over all axes, or all but the last (HW of HWC): from per-channel histograms.

    The same values as ``reduce_sample`` (integer sums are exact either way;
    float results are float64 sums rounded once), at a fraction of the cost.
    None when the case does not apply.
    """
    if x.dtype != np.uint8 or x.size == 0:
        return None
    if axes == tuple(range(x.ndim)):
        channels = 1
    elif x.ndim >= 2 and axes == tuple(range(x.ndim - 1)):
        channels = x.shape[-1]
    else:
        return None
    hist = native.histograms(x, channels)
    values = np.arange(256, dtype=np.int64)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if kind in ("min", "max"):
        present = hist > 0
        index = present.argmax(axis=1) if kind == "min" else 255 - present[:, ::-1].argmax(axis=1)
        return index.astype(np.uint8)
    if kind in ("std_dev", "variance"):
        assert mean is not None
        dev = values[None, :] - np.asarray(mean, np.float64).reshape(channels, 1)
        value = (hist * dev * dev).sum(axis=1) / (count - ddof) if count > ddof else np.full(channels, np.nan)
        return (np.sqrt(value) if kind == "std_dev" else value).astype(_F32)
    total = hist @ (values * values if kind in ("mean_square", "rms") else values)
    if out_dtype.kind in "iu":
        total = total.astype(out_dtype)  # the accumulator wraps (sum(dtype=UINT8): modulo 256)
        if kind == "sum":
            return total
    if kind == "sum":
        return total.astype(out_dtype)
    value = total.astype(np.float64) / count
    return _to(np.sqrt(value) if kind == "rms" else value, out_dtype)


def _reduced_shape(shape: Sequence[int], axes: tuple[int, ...], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


class Reduction(Operator):
    """One of DALI's reductions over ``axes`` (or the layout letters ``axis_names``) of each sample."""

    KINDS: ClassVar[tuple[str, ...]] = ("min", "max", "sum", "mean", "mean_square", "rms", "std_dev", "variance")
    name = "reductions"

    def __init__(self, kind: str, *, axes: int | Sequence[int] | None = None, axis_names: str | None = None,
                 keep_dims: bool = False, dtype: Any = None, ddof: int = 0, layout: str = "",
                 name: str | None = None) -> None:
        super().__init__(name=name)
        if kind not in self.KINDS:
            raise PipelineDefinitionError(f"unknown reduction {kind!r}; expected one of {', '.join(self.KINDS)}")
        self.kind = kind
        self.name = f"reductions.{kind}"  # type: ignore[misc]
        if axes is not None and axis_names is not None:
            raise PipelineDefinitionError(f"{self.name}: give axes or axis_names, not both")
        self._input_layout = layout or ""
        self.axes = self._axes_from(axes, axis_names)
        self.keep_dims = bool(keep_dims)
        if int(ddof) < 0:
            raise PipelineDefinitionError(f"{self.name}: ddof must be >= 0, got {ddof}")
        self.ddof = int(ddof)
        self.dtype = None if dtype is None else parse_output_dtype(dtype, self.name)

    def _axes_from(self, axes: int | Sequence[int] | None, axis_names: str | None) -> tuple[int, ...] | None:
        if axis_names is not None:
            return tuple(sorted(static_layout_axes(axis_names, self._input_layout, f"{self.name}: axis_names")))
        out = ints_argument(axes, f"{self.name}: axes")
        if out is not None and len(set(out)) != len(out):
            raise PipelineDefinitionError(f"{self.name}: axes must not repeat, got {axes!r}")
        return out

    def sample_axes(self, ndim: int) -> tuple[int, ...]:
        """The reduced axes of a sample with ``ndim`` dimensions (negative ones resolved)."""
        if self.axes is None:
            return tuple(range(ndim))
        return tuple(sorted(resolve_axes(self.axes, ndim, f"{self.name}: axes")))

    def out_dtype(self, in_dtype: np.dtype) -> np.dtype:
        default, allowed = output_types(self.kind, in_dtype)
        if self.dtype is None:
            return default
        if self.dtype not in allowed:
            names = ", ".join(sorted({d.name for d in allowed}))
            raise SampleError(f"{self.name}: dtype={self.dtype.name} is not supported for {in_dtype.name} input; "
                              f"allowed: {names}")
        return self.dtype

    def _one(self, chunk: Chunk, row: int, x: Any) -> np.ndarray:
        x = np.asarray(x)
        if x.dtype not in _INPUTS:
            names = ", ".join(d.name for d in _INPUTS)
            raise SampleError(f"{self.name}: unsupported input type {x.dtype}; expected one of {names}")
        axes = self.sample_axes(x.ndim)
        out_dtype = self.out_dtype(x.dtype)
        mean = None
        if self.kind in ("std_dev", "variance"):
            mean = np.asarray(chunk.inputs[1][row])
            want = _reduced_shape(x.shape, axes, False)
            if mean.size != int(np.prod(want, dtype=np.int64)):
                raise SampleError(
                    f"{self.name}: the mean (input 1) has shape {mean.shape}; a reduction of shape {x.shape} "
                    f"over axes {list(axes)} needs one value per output, shape {want} (or the same with keep_dims)")
        value = _histogram_reduce(self.kind, x, axes, out_dtype, mean, self.ddof)
        if value is None:
            value = reduce_sample(self.kind, x, axes, out_dtype, mean, self.ddof)
        # np.array, not ascontiguousarray: that one turns a scalar into shape (1,)
        return np.array(value, dtype=out_dtype, order="C").reshape(_reduced_shape(x.shape, axes, self.keep_dims))

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, x: self._one(chunk, row, x))]

    def layout(self, index: int) -> str:
        layout = self._input_layout
        if not layout or self.keep_dims:
            return layout
        if self.axes is None:
            return ""
        ndim = len(layout)
        gone = {a % ndim for a in self.axes if -ndim <= a < ndim}
        return "".join(c for i, c in enumerate(layout) if i not in gone)


def _reduce(kind: str, inputs: list[DataNode], axes: Any, axis_names: str | None, keep_dims: bool,
            dtype: Any, ddof: int, device: str | Device | None, name: str | None) -> DataNode:
    layout = input_layout(inputs[0], f"reductions.{kind}")
    op = Reduction(kind, axes=axes, axis_names=axis_names, keep_dims=keep_dims, dtype=dtype, ddof=ddof,
                   layout=layout, name=name)
    return add_node(op, inputs, device=device)[0]


def _doc(what: str) -> str:
    return f"""{what} of each sample over ``axes`` (default: all of them).

    Args:
        axes: axis indices (negative count from the back); ``()`` reduces nothing.
        axis_names: layout letters instead of indices (``"HW"`` of an ``HWC`` image).
        keep_dims: keep the reduced axes with extent 1.
    """


@fn_function(label="reductions.min")
def min(data: DataNode, *, axes: int | Sequence[int] | None = None, axis_names: str | None = None,
        keep_dims: bool = False, device: str | Device | None = None, name: str | None = None) -> DataNode:
    return _reduce("min", [data], axes, axis_names, keep_dims, None, 0, device, name)


@fn_function(label="reductions.max")
def max(data: DataNode, *, axes: int | Sequence[int] | None = None, axis_names: str | None = None,
        keep_dims: bool = False, device: str | Device | None = None, name: str | None = None) -> DataNode:
    return _reduce("max", [data], axes, axis_names, keep_dims, None, 0, device, name)


@fn_function(label="reductions.sum")
def sum(data: DataNode, *, axes: int | Sequence[int] | None = None, axis_names: str | None = None,
        keep_dims: bool = False, dtype: DataType | str | None = None, device: str | Device | None = None,
        name: str | None = None) -> DataNode:
    return _reduce("sum", [data], axes, axis_names, keep_dims, dtype, 0, device, name)


@fn_function(label="reductions.mean")
def mean(data: DataNode, *, axes: int | Sequence[int] | None = None, axis_names: str | None = None,
         keep_dims: bool = False, dtype: DataType | str | None = None, device: str | Device | None = None,
         name: str | None = None) -> DataNode:
    return _reduce("mean", [data], axes, axis_names, keep_dims, dtype, 0, device, name)


@fn_function(label="reductions.mean_square")
def mean_square(data: DataNode, *, axes: int | Sequence[int] | None = None, axis_names: str | None = None,
                keep_dims: bool = False, dtype: DataType | str | None = None, device: str | Device | None = None,
                name: str | None = None) -> DataNode:
    return _reduce("mean_square", [data], axes, axis_names, keep_dims, dtype, 0, device, name)


@fn_function(label="reductions.rms")
def rms(data: DataNode, *, axes: int | Sequence[int] | None = None, axis_names: str | None = None,
        keep_dims: bool = False, dtype: DataType | str | None = None, device: str | Device | None = None,
        name: str | None = None) -> DataNode:
    return _reduce("rms", [data], axes, axis_names, keep_dims, dtype, 0, device, name)


@fn_function(label="reductions.std_dev")
def std_dev(data: DataNode, mean: DataNode, *, axes: int | Sequence[int] | None = None,
            axis_names: str | None = None, keep_dims: bool = False, ddof: int = 0,
            device: str | Device | None = None, name: str | None = None) -> DataNode:
    return _reduce("std_dev", [data, mean], axes, axis_names, keep_dims, None, ddof, device, name)


@fn_function(label="reductions.variance")
def variance(data: DataNode, mean: DataNode, *, axes: int | Sequence[int] | None = None,
             axis_names: str | None = None, keep_dims: bool = False, ddof: int = 0,
             device: str | Device | None = None, name: str | None = None) -> DataNode:
    return _reduce("variance", [data, mean], axes, axis_names, keep_dims, None, ddof, device, name)


min.__doc__ = _doc("The smallest element")
max.__doc__ = _doc("The largest element")
sum.__doc__ = _doc("The sum (``dtype``: the accumulator type; integers wrap)")
mean.__doc__ = _doc("The mean")
mean_square.__doc__ = _doc("The mean of the squares")
rms.__doc__ = _doc("The root mean square")
std_dev.__doc__ = _doc("The standard deviation around ``mean`` (input 1), ``sqrt(sum((x - mean)^2) / (N - ddof))``")
variance.__doc__ = _doc("The variance around ``mean`` (input 1), ``sum((x - mean)^2) / (N - ddof)``")
