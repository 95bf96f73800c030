"""Tensors made from constants: ``constant``, ``full``, ``full_like``, ``zeros``, ``zeros_like``,
``ones``, ``ones_like``, as DALI 2.4.

* ``constant(fdata=... | idata=..., shape, dtype, layout)``: the same tensor for
  every sample. ``fdata`` is stored as float32 and gives FLOAT by default,
  ``idata`` gives INT32; one value is repeated to fill ``shape``, otherwise
  there must be exactly ``prod(shape)`` values. Conversion to ``dtype``
  saturates and rounds half away from zero (``idata=[2**40]`` is INT32's max).
* ``full(fill_value, shape)``: ``fill_value`` (per sample) broadcast to
  ``shape`` (default: a scalar), keeping its type, as numpy broadcasts: the
  innermost extents align, each fill extent is 1 or the output's. (DALI 2.4
  also accepts fills larger than the output, e.g. 3 values for a scalar, and
  then picks values in ways numpy does not define; those are errors here.)
* ``full_like(data_like, fill_value)``, ``zeros_like``, ``ones_like``: the
  shape, type and layout of ``data_like`` (``dtype`` overrides the type of
  ``zeros_like``/``ones_like``); values converted as in ``cast``.
* ``zeros(shape, dtype=INT32)``, ``ones(shape, dtype=INT32)``.

``constant_node(array)`` puts an array into a pipeline as is (its type kept).
``as_node`` turns a constant given where DALI expects pipeline data (``fn.full(
np.float32(7), shape=...)``) into a ``constant`` node, as DALI's automatic
``types.Constant`` does: float64 becomes float32 and int64 int32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .. import types as _types
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device
from .arguments import fn_function, shape_argument
from .cast import cast_array, parse_output_dtype

__all__ = [
    "Constant",
    "Fill",
    "as_node",
    "broadcast_fill",
    "constant",
    "constant_node",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]


def _check_layout(layout: str, ndim: int, what: str) -> None:
    if layout and len(layout) != ndim:
        raise SampleError(f"{what}: layout {layout!r} has {len(layout)} dimensions but the output has {ndim}")


def broadcast_fill(fill: Any, shape: tuple[int, ...], what: str, xp: Any = np) -> Any:
    """``fill`` broadcast to ``shape`` as numpy does (innermost extents aligned, each fill extent 1 or
    equal to the output's; extra leading extents of 1 are dropped); other fills are an error."""
    extra = fill.ndim - len(shape)
    if extra > 0 and all(e == 1 for e in fill.shape[:extra]):  # leading extents 1: dropped
        fill = fill.reshape(fill.shape[extra:])
    tail = shape[len(shape) - fill.ndim:] if fill.ndim else ()
    if fill.ndim > len(shape) or any(f not in (1, o) for f, o in zip(fill.shape, tail)):
        raise SampleError(f"{what}: a fill value of shape {list(fill.shape)} can't be broadcast to the output "
                          f"shape {list(shape)} (each of its innermost extents must be 1 or the output's)")
    return xp.broadcast_to(fill, shape)


class Constant(Operator):
    """The same tensor for every sample (``fn.constant``)."""

    name: ClassVar[str] = "constant"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, value: np.ndarray, layout: str = "", *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.value = np.array(value, order="C")  # (not ascontiguousarray: it makes scalars 1-D)
        self.value.flags.writeable = False  # shared by every sample, as DALI's one buffer
        self._layout = layout

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [[self.value] * len(chunk)]

    def layout(self, index: int) -> str:
        return self._layout


class Fill(Operator):
    """``full``, ``full_like``, ``zeros(_like)``, ``ones(_like)``: one constant value or a fill input.

    Inputs, by ``like`` and ``with_fill``: ``[data_like]``, ``[fill_value]``,
    ``[data_like, fill_value]`` or none.
    """

    name: ClassVar[str] = "full"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"shape"})

    def __init__(self, op_name: str, *, value: int | None, like: bool, shape: tuple[int, ...] | None,
                 dtype: np.dtype | None, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        self.op_name = op_name
        self.value = value  # zeros/ones: 0 or 1; full*: None (the fill input)
        self.like = like
        self.shape = shape
        self.dtype = dtype
        self._layout = layout

    def plan(self, chunk: Chunk, row: int) -> tuple[tuple[int, ...], np.dtype, Any]:
        """(shape, dtype, fill array or None) of one output sample."""
        fill = None
        if self.value is None:
            fill = chunk.inputs[1 if self.like else 0][row]
        if self.like:
            like = chunk.inputs[0][row]
            shape, dtype = tuple(like.shape), np.dtype(self.dtype or like.dtype)
        else:
            given = chunk.arg("shape", row, self.shape)
            shape = () if given is None else tuple(int(v) for v in np.asarray(given).reshape(-1))
            if any(s < 0 for s in shape):
                raise SampleError(f"{self.op_name}: shape must not be negative, got {list(shape)}")
            dtype = np.dtype(self.dtype) if self.dtype is not None else (
                np.dtype(fill.dtype) if fill is not None else np.dtype(np.int32))
        if not self.like:
            _check_layout(self._layout, len(shape), self.op_name)
        if fill is not None and fill.dtype.kind not in "biuf":
            raise SampleError(f"{self.op_name}: fill_value must be numeric, got dtype {fill.dtype}")
        return shape, dtype, fill

    def fill_batch(self, chunk: Chunk, xp: Any = np) -> list[Any]:
        """Each row's output, an array of ``xp`` (numpy; cupy on the GPU); a ``SampleError`` fails the row."""

        def one(row: int, _: Any) -> Any:
            shape, dtype, fill = self.plan(chunk, row)
            if fill is None:
                return xp.full(shape, cast_array(np.asarray(self.value), dtype), dtype=dtype)
            values = broadcast_fill(xp.asarray(fill), shape, self.op_name, xp)
            return xp.array(cast_array(values, dtype, xp), order="C")

        return chunk.each_sample(one)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [self.fill_batch(chunk)]

    def layout(self, index: int) -> str:
        return self._layout


def as_node(value: Any, op_name: str) -> DataNode:
    """``value`` itself if pipeline data, else a ``constant`` node holding it (DALI's automatic
    ``types.Constant``: float64 stored as float32, int64 as int32, other types kept)."""
    if isinstance(value, DataNode):
        return value
    arr = np.asarray(value)
    if arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    elif arr.dtype == np.int64:
        arr = cast_array(arr, np.dtype(np.int32))
    if arr.dtype.kind not in "biuf":
        raise PipelineDefinitionError(f"{op_name}: a constant input must be numbers, got {value!r}")
    return add_node(Constant(arr), [])[0]


def constant_node(value: Any, *, layout: str = "", name: str | None = None) -> DataNode:
    """``value`` (a numpy array or anything numpy converts) as pipeline data, the same for every sample,
    its type kept (what DALI's ``types.Constant(array)`` gives), e.g. a lookup table to index with
    per-sample data: ``constant_node(table)[index]``."""
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise PipelineDefinitionError(f"constant: expected numbers, got an array of {array.dtype}")
    if layout and len(layout) != array.ndim:
        raise PipelineDefinitionError(f"constant: layout {layout!r} does not match {array.ndim} dimensions")
    return add_node(Constant(array, layout, name=name), [])[0]


_types.register_tensor_constant(constant_node)  # DALI's types.Constant(array) makes this node


@fn_function()
def constant(
    *,
    fdata: float | Sequence[float] | None = None,
    idata: int | Sequence[int] | None = None,
    shape: int | Sequence[int] | None = None,
    dtype: DataType | str | None = None,
    layout: str = "",
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """The same tensor for every sample, made of ``fdata`` (floats) or ``idata`` (integers).

    Args:
        fdata: the values as floats (stored as float32); the default type is FLOAT.
        idata: the values as integers; the default type is INT32.
        shape: the output's shape (default: 1-D, one element per value); one
            value fills the whole shape.
        dtype: output type; values are converted with saturation.
        layout: the output's layout name (as many letters as dimensions).
    """
    if (fdata is None) == (idata is None):
        raise PipelineDefinitionError("constant: give exactly one of fdata (floats) and idata (integers)")
    values: np.ndarray
    default: np.dtype
    if fdata is not None:
        values = np.asarray(fdata, dtype=np.float32).reshape(-1)
        default = np.dtype(np.float32)
    else:
        values = np.asarray(idata, dtype=np.int64).reshape(-1)
        default = np.dtype(np.int32)
    out_dtype = default if dtype is None else parse_output_dtype(dtype, "constant: dtype")
    out_shape = (values.size,) if shape is None else shape_argument(shape, "constant: shape")
    size = int(np.prod(out_shape))
    if values.size == 1:
        values = np.full(out_shape, values[0], dtype=values.dtype)
    elif values.size != size:
        raise PipelineDefinitionError(
            f"constant: {values.size} values do not fill the shape {list(out_shape)} ({size} elements); "
            "give one value or exactly that many")
    if layout and len(layout) != len(out_shape):
        raise PipelineDefinitionError(
            f"constant: layout {layout!r} has {len(layout)} dimensions but the shape {list(out_shape)} has "
            f"{len(out_shape)}")
    value = cast_array(values.reshape(out_shape), out_dtype)
    return add_node(Constant(value, layout, name=name), [], device=device)[0]


def _fill_node(op_name: str, inputs: list[DataNode], *, value: int | None, like: bool,
               shape: Any = None, dtype: Any = None, layout: str | None = None, device: Any = None,
               name: str | None = None) -> DataNode:
    constants, per_sample = split_arguments({"shape": shape})
    fixed = constants.get("shape")
    out_dtype = None if dtype is None else parse_output_dtype(dtype, f"{op_name}: dtype")
    if like:
        layout = input_layout(inputs[0], op_name)
    fixed_shape = None if fixed is None else shape_argument(fixed, f"{op_name}: shape")
    if layout and fixed_shape is not None and len(layout) != len(fixed_shape):
        raise PipelineDefinitionError(
            f"{op_name}: layout {layout!r} has {len(layout)} dimensions but the shape {list(fixed_shape)} has "
            f"{len(fixed_shape)}")
    op = Fill(op_name, value=value, like=like, shape=fixed_shape, dtype=out_dtype, layout=layout or "", name=name)
    return add_node(op, inputs, per_sample, device=device)[0]


@fn_function()
def full(
    fill_value: Any,
    *,
    shape: int | Sequence[int] | DataNode | None = None,
    layout: str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """``fill_value`` (per sample, or a constant) broadcast to ``shape``, keeping its type.

    Args:
        fill_value: the value(s); shapes align on their innermost extents.
        shape: the output's shape (default: a scalar); may be per sample.
        layout: the output's layout name.
    """
    return _fill_node("full", [as_node(fill_value, "full")], value=None, like=False, shape=shape,
                      layout=layout, device=device, name=name)


@fn_function()
def full_like(
    data_like: DataNode,
    fill_value: Any,
    *,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """The shape, type and layout of ``data_like``, filled with ``fill_value`` (converted with saturation)."""
    return _fill_node("full_like", [data_like, as_node(fill_value, "full_like")], value=None, like=True,
                      device=device, name=name)


@fn_function()
def zeros(
    *,
    shape: int | Sequence[int] | DataNode | None = None,
    dtype: DataType | str = DataType.INT32,
    layout: str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Zeros of ``shape`` (default: a scalar) and ``dtype`` (default INT32)."""
    return _fill_node("zeros", [], value=0, like=False, shape=shape, dtype=dtype, layout=layout, device=device,
                      name=name)


@fn_function()
def ones(
    *,
    shape: int | Sequence[int] | DataNode | None = None,
    dtype: DataType | str = DataType.INT32,
    layout: str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Ones of ``shape`` (default: a scalar) and ``dtype`` (default INT32)."""
    return _fill_node("ones", [], value=1, like=False, shape=shape, dtype=dtype, layout=layout, device=device,
                      name=name)


@fn_function()
def zeros_like(
    data_like: DataNode,
    *,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Zeros with the shape, type (unless ``dtype``) and layout of ``data_like``."""
    return _fill_node("zeros_like", [data_like], value=0, like=True, dtype=dtype, device=device, name=name)


@fn_function()
def ones_like(
    data_like: DataNode,
    *,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Ones with the shape, type (unless ``dtype``) and layout of ``data_like``."""
    return _fill_node("ones_like", [data_like], value=1, like=True, dtype=dtype, device=device, name=name)
