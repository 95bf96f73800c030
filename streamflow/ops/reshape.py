"""``reshape``, ``squeeze``, ``expand_dims``: a sample's shape changed, its elements kept (views when possible).

As DALI 2.4: ``reshape(shape=[-1, 4])`` infers one extent; ``rel_shape``
multiplies the input's extents; the layout is kept only when the number of
dimensions is, unless ``layout`` names the new one. ``squeeze`` drops extent-1
axes (by index or layout letter) and their letters; ``expand_dims`` inserts
extent-1 axes, named by ``new_axis_names``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from .arguments import fn_function, ints_argument, static_layout_axes

__all__ = ["ExpandDims", "Reshape", "Squeeze", "expand_dims", "reshape", "squeeze"]


def _axes_of(axes: int | Sequence[int] | None, axis_names: str | None, layout: str, op: str) -> tuple[int, ...]:
    if axis_names is not None:
        return tuple(static_layout_axes(axis_names, layout, f"{op}: axis_names"))
    return ints_argument(axes, f"{op}: axes") or ()


class Reshape(Operator):
    """Gives each sample a new shape with the same number of elements."""

    name: ClassVar[str] = "reshape"
    per_sample_args = frozenset({"shape", "rel_shape"})

    def __init__(self, shape: Any, rel_shape: Any, layout: str | None, in_layout: str, *, name: str | None = None,
                 src_dims: Sequence[int] | None = None) -> None:
        super().__init__(name=name)
        #: DALI's src_dims: output axis i has the extent of input axis src_dims[i] (-1: a new axis of extent 1)
        self.src_dims = None if src_dims is None else tuple(int(d) for d in src_dims)
        if self.src_dims is not None and shape is not None:
            raise PipelineDefinitionError("reshape: give src_dims or shape, not both")
        self.shape = None if shape is None else tuple(int(v) for v in np.asarray(shape).reshape(-1))
        self.rel_shape = None if rel_shape is None else tuple(float(v) for v in np.asarray(rel_shape).reshape(-1))
        if self.shape is not None and sum(v == -1 for v in self.shape) > 1:
            raise PipelineDefinitionError("reshape: at most one extent can be -1")
        self._layout = layout if layout is not None else in_layout
        self._keep_layout_if_same_ndim = layout is None

    def _source_extents(self, arr: np.ndarray) -> tuple[int, ...]:
        """The extents ``src_dims`` picks (the input's own without it); unpicked axes must have extent 1."""
        if self.src_dims is None:
            return arr.shape
        if any(not -1 <= d < arr.ndim for d in self.src_dims):
            raise SampleError(f"reshape: src_dims {list(self.src_dims)} out of range for a {arr.ndim}-d sample")
        dropped = [i for i in range(arr.ndim) if i not in self.src_dims and arr.shape[i] != 1]
        if dropped:
            raise SampleError(f"reshape: src_dims {list(self.src_dims)} leaves out axes {dropped} of a sample of "
                              f"shape {arr.shape}; only axes of extent 1 can be left out")
        return tuple(1 if d == -1 else arr.shape[d] for d in self.src_dims)

    def _target(self, chunk: Chunk, row: int, arr: np.ndarray) -> tuple[int, ...]:
        shape = chunk.arg("shape", row, self.shape)
        rel = chunk.arg("rel_shape", row, self.rel_shape)
        if shape is not None:
            return tuple(int(v) for v in np.asarray(shape).reshape(-1))
        extents = self._source_extents(arr)
        if rel is not None:
            rel = [float(v) for v in np.asarray(rel).reshape(-1)]
            if len(rel) != len(extents):
                raise SampleError(f"reshape: rel_shape has {len(rel)} values for {len(extents)} dimensions")
            return tuple(int(round(r * n)) for r, n in zip(rel, extents))
        if self.src_dims is not None:
            return extents
        if "shape" not in chunk.args and "rel_shape" not in chunk.args:
            return arr.shape  # only a new layout (DALI: fn.reshape(x, layout="HWC"))
        raise SampleError("reshape: give shape or rel_shape")

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, sample: Any) -> Any:
            arr = np.asarray(sample)
            target = self._target(chunk, row, arr)
            try:
                return arr.reshape(target)
            except ValueError:
                raise SampleError(f"reshape: a sample of shape {arr.shape} ({arr.size} elements) cannot take the "
                                  f"shape {target}") from None

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        if self._keep_layout_if_same_ndim:
            n = len(self.shape) if self.shape is not None else len(self.rel_shape or self.src_dims or ())
            return self._layout if n == len(self._layout) else ""
        return self._layout


class Squeeze(Operator):
    """Drops extent-1 axes."""

    name: ClassVar[str] = "squeeze"

    def __init__(self, axes: tuple[int, ...], layout: str, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.axes = axes
        self._layout = "".join(c for i, c in enumerate(layout) if i not in {a % max(len(layout), 1) for a in axes}) \
            if layout else ""

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, sample: Any) -> Any:
            arr = np.asarray(sample)
            axes = self.axes or tuple(i for i, n in enumerate(arr.shape) if n == 1)
            try:
                return np.squeeze(arr, axis=axes)
            except ValueError:
                raise SampleError(f"squeeze: axes {list(axes)} of a sample of shape {arr.shape} are not all 1") from None

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


class ExpandDims(Operator):
    """Inserts extent-1 axes at ``axes`` (positions in the output)."""

    name: ClassVar[str] = "expand_dims"

    def __init__(self, axes: tuple[int, ...], new_axis_names: str | None, layout: str, *, name: str | None = None) -> None:
        super().__init__(name=name)
        if not axes:
            raise PipelineDefinitionError("expand_dims: give the axes to insert")
        if new_axis_names is not None and len(new_axis_names) != len(axes):
            raise PipelineDefinitionError("expand_dims: give one new axis name per axis")
        self.axes = axes
        self._layout = ""
        if layout and new_axis_names:  # output position -> new name, else the next input letter
            names = dict(zip(axes, new_axis_names))
            rest = iter(layout)
            self._layout = "".join(names[i] if i in names else next(rest, "") for i in range(len(layout) + len(axes)))

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, sample: Any) -> Any:
            try:
                return np.expand_dims(np.asarray(sample), axis=self.axes)
            except Exception as err:
                raise SampleError(f"expand_dims: {err}") from None

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def reshape(data: DataNode, *, shape: Sequence[int] | DataNode | None = None,
            rel_shape: Sequence[float] | DataNode | None = None, layout: str | None = None,
            src_dims: Sequence[int] | None = None,
            device: str | None = None, name: str | None = None) -> DataNode:
    """A new shape for every sample (same elements): ``shape`` (one extent may be -1) or ``rel_shape``.

    ``src_dims`` (DALI's): output axis i takes input axis ``src_dims[i]``'s extent
    (``-1``: a new axis of extent 1; left-out axes must have extent 1), scaled by
    ``rel_shape`` if given; the elements keep their order (no transposition).
    """
    constants, per_sample = split_arguments(dict(shape=shape, rel_shape=rel_shape))
    if shape is None and rel_shape is None and layout is None and src_dims is None:
        raise PipelineDefinitionError("reshape: give shape, rel_shape, src_dims or layout")
    if shape is not None and rel_shape is not None:
        raise PipelineDefinitionError("reshape: give shape or rel_shape, not both")
    op = Reshape(constants.get("shape"), constants.get("rel_shape"), layout, input_layout(data, "reshape"), name=name,
                 src_dims=src_dims)
    return add_node(op, [data], per_sample, device=device)[0]


@fn_function()
def squeeze(data: DataNode, *, axes: int | Sequence[int] | None = None, axis_names: str | None = None,
            device: str | None = None, name: str | None = None) -> DataNode:
    """Drop extent-1 axes (``axes`` or ``axis_names``; default: all of them)."""
    layout = input_layout(data, "squeeze")
    op = Squeeze(_axes_of(axes, axis_names, layout, "squeeze"), layout, name=name)
    return add_node(op, [data], device=device)[0]


@fn_function()
def expand_dims(data: DataNode, *, axes: int | Sequence[int], new_axis_names: str | None = None,
                device: str | None = None, name: str | None = None) -> DataNode:
    """Insert extent-1 axes at ``axes`` (output positions), named ``new_axis_names``."""
    layout = input_layout(data, "expand_dims")
    op = ExpandDims(_axes_of(axes, None, layout, "expand_dims"), new_axis_names, layout, name=name)
    return add_node(op, [data], device=device)[0]
