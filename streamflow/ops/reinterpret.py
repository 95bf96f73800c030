"""``reinterpret``: a sample's bytes seen with another type, shape and/or layout (no copy), as DALI 2.4.

DALI's ``Reinterpret`` is its ``Reshape`` with a ``dtype``:

* ``dtype`` alone: the innermost extent is rescaled by the element sizes
  (``(2, 3, 4)`` int16 as UINT8 is ``(2, 3, 8)``); its bytes must divide.
* ``shape`` (argument, per-sample argument or second input ``shape_input``):
  one extent may be negative (inferred from the byte size); the byte sizes of
  input and output must match.
* ``rel_shape``: ``out[i] = round(rel_shape[i] * in[src_dims[i]])`` (halves
  away from zero; ``src_dims[i] = -1`` means 1), one negative extent inferred;
  without ``src_dims`` it has at most as many entries as the input has axes.
* ``src_dims`` alone: the input's extents picked (``-1`` inserts an extent 1).
* ``layout``: the output's layout name; when not given the input's is kept
  if the number of dimensions is, else cleared (with per-sample shapes the
  input's is kept and a sample with another number of dimensions fails).

Outputs are views of the inputs (the input's bytes, C order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device
from .arguments import fn_function
from .cast import parse_output_dtype

__all__ = ["Reinterpret", "reinterpret", "reinterpreted_shape"]


def _round(x: float) -> int:
    return int(np.trunc(x + np.copysign(0.5, x)))


def reinterpreted_shape(in_shape: tuple[int, ...], in_size: int, out_size: int, *, shape: Sequence[int] | None,
                        rel_shape: Sequence[float] | None, src_dims: Sequence[int] | None,
                        what: str = "reinterpret") -> tuple[int, ...]:
    """The output shape of one sample (DALI's rules; see the module docstring)."""
    ndim = len(in_shape)
    if src_dims is not None:
        bad = [d for d in src_dims if not -1 <= d < ndim]
        if bad:
            raise SampleError(f"{what}: src_dims {list(src_dims)} has {bad[0]}, outside [-1, {ndim - 1}] "
                              f"for an input of shape {list(in_shape)}")
    if shape is None and rel_shape is None:
        if src_dims is None:
            out = list(in_shape)
            if in_size != out_size:
                if not out:
                    raise SampleError(f"{what}: a scalar cannot change its element size without a shape")
                if (out[-1] * in_size) % out_size:
                    raise SampleError(f"{what}: the innermost extent ({out[-1]} x {in_size} bytes) is not "
                                      f"divisible by the output element size ({out_size} bytes)")
                out[-1] = out[-1] * in_size // out_size
            return tuple(out)
        out = [1 if d == -1 else in_shape[d] for d in src_dims]
        if int(np.prod(out)) != int(np.prod(in_shape)):
            raise SampleError(f"{what}: src_dims {list(src_dims)} give the shape {out} with {int(np.prod(out))} "
                              f"elements but the input {list(in_shape)} has {int(np.prod(in_shape))}")
        if in_size != out_size:
            raise SampleError(f"{what}: src_dims alone cannot change the element size; give shape or rel_shape")
        return tuple(out)
    if rel_shape is not None:
        rel = list(rel_shape)
        if src_dims is not None and len(src_dims) != len(rel):
            raise SampleError(f"{what}: src_dims and rel_shape have different lengths: {len(src_dims)} vs {len(rel)}")
        if src_dims is None and len(rel) > ndim:
            raise SampleError(f"{what}: rel_shape has {len(rel)} entries, more than the input's {ndim} dimensions; "
                              "use src_dims to add dimensions")
        out = []
        for d, r in enumerate(rel):
            src = src_dims[d] if src_dims is not None else d
            out.append(-1 if r < 0 else _round(r * (1 if src == -1 else in_shape[src])))
    else:
        out = [int(v) for v in shape]  # type: ignore[union-attr]
    wild = [d for d, e in enumerate(out) if e < 0]
    if len(wild) > 1:
        raise SampleError(f"{what}: only one extent can be negative, got {out}")
    in_bytes = int(np.prod(in_shape)) * in_size
    if wild:
        out[wild[0]] = 1
        rest = int(np.prod(out))
        if rest == 0:
            raise SampleError(f"{what}: cannot infer extent {wild[0]} when the others' volume is 0")
        out[wild[0]] = in_bytes // (rest * out_size)
    if int(np.prod(out)) * out_size != in_bytes:
        raise SampleError(f"{what}: input and output samples must occupy the same size in bytes: input "
                          f"{list(in_shape)} is {in_bytes} bytes, requested {out} is "
                          f"{int(np.prod(out)) * out_size} bytes")
    return tuple(out)


class Reinterpret(Operator):
    """Views each sample with a new dtype/shape (see the module docstring)."""

    name: ClassVar[str] = "reinterpret"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"shape", "rel_shape", "src_dims"})

    def __init__(self, *, dtype: np.dtype | None, shape: tuple[int, ...] | None, rel_shape: tuple[float, ...] | None,
                 src_dims: tuple[int, ...] | None, layout: str, name: str | None = None) -> None:
        super().__init__(name=name)
        self.dtype, self.shape, self.rel_shape, self.src_dims = dtype, shape, rel_shape, src_dims
        self._layout = layout

    def target(self, chunk: Chunk, row: int, sample: Any) -> tuple[tuple[int, ...], np.dtype]:
        """(output shape, output dtype) of ``sample``."""
        dtype = np.dtype(self.dtype or sample.dtype)
        shape = chunk.arg("shape", row, self.shape)
        if len(chunk.inputs) > 1:  # shape_input
            shape = chunk.inputs[1][row]
        if shape is not None:
            arr = np.asarray(shape)
            if arr.dtype.kind not in "iu":
                raise SampleError(f"reinterpret: the shape must be integers, got {arr.dtype}")
            shape = tuple(int(v) for v in arr.reshape(-1))
        rel = chunk.arg("rel_shape", row, self.rel_shape)
        rel = None if rel is None else tuple(float(v) for v in np.asarray(rel).reshape(-1))
        src = chunk.arg("src_dims", row, self.src_dims)
        src = None if src is None else tuple(int(v) for v in np.asarray(src).reshape(-1))
        out = reinterpreted_shape(tuple(sample.shape), sample.dtype.itemsize, dtype.itemsize,
                                  shape=shape, rel_shape=rel, src_dims=src)
        return out, dtype

    def view_sample(self, chunk: Chunk, row: int, sample: Any, xp: Any = np) -> Any:
        """One sample's bytes seen as the output (an array of ``xp``: numpy, or cupy on the GPU)."""
        arr = xp.asarray(sample, order="C")
        shape, dtype = self.target(chunk, row, arr)
        if self._layout and len(shape) != len(self._layout):
            raise SampleError(f"reinterpret: the layout {self._layout!r} does not fit the {len(shape)}-D output "
                              f"shape {list(shape)}; give the output's layout (layout=...)")
        return arr.reshape(-1).view(np.uint8).view(dtype).reshape(shape)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, sample: self.view_sample(chunk, row, sample))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def reinterpret(
    data: DataNode,
    shape_input: DataNode | None = None,
    *,
    dtype: DataType | str | None = None,
    shape: int | Sequence[int] | DataNode | None = None,
    rel_shape: float | Sequence[float] | DataNode | None = None,
    src_dims: int | Sequence[int] | DataNode | None = None,
    layout: str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """The input's bytes seen as another ``dtype``, ``shape`` and/or ``layout`` (no copy).

    Args:
        data: the samples.
        shape_input: per sample, the output shape (same as ``shape``).
        dtype: output type; without a shape the innermost extent is rescaled.
        shape: output shape; one extent may be -1 (inferred).
        rel_shape: output extents relative to the input's (``src_dims`` picks them).
        src_dims: which input extent each output extent comes from (-1: a new extent 1).
        layout: output layout (default: the input's when the dimensions agree).
    """
    constants, per_sample = split_arguments({"shape": shape, "rel_shape": rel_shape, "src_dims": src_dims})
    given = [k for k in ("shape", "rel_shape") if k in constants and constants[k] is not None or k in per_sample]
    if len(given) + (shape_input is not None) > 1:
        raise PipelineDefinitionError("reinterpret: shape, rel_shape and shape_input are mutually exclusive")

    def ints(value: Any) -> tuple[int, ...] | None:
        return None if value is None else tuple(int(v) for v in np.asarray(value).reshape(-1))

    fixed_shape, fixed_src = ints(constants.get("shape")), ints(constants.get("src_dims"))
    fixed_rel = constants.get("rel_shape")
    fixed_rel = None if fixed_rel is None else tuple(float(v) for v in np.asarray(fixed_rel).reshape(-1))
    for what, values in (("shape", fixed_shape), ("rel_shape", fixed_rel)):
        if values is not None:
            if not values:
                raise PipelineDefinitionError(f"reinterpret: {what} is an empty list")
            if sum(v < 0 for v in values) > 1:
                raise PipelineDefinitionError(f"reinterpret: only one extent of {what} can be negative, got {values}")
            if any(v == 0 for v in values):
                raise PipelineDefinitionError(f"reinterpret: an extent of 0 in {what} is illegal, got {values}")
    in_layout = input_layout(data, "reinterpret")
    if layout is not None:
        out_layout = layout
    else:  # the input's layout when the number of dimensions is known to stay the same
        out_ndim = len(fixed_shape) if fixed_shape is not None else (
            len(fixed_src) if fixed_src is not None else (len(fixed_rel) if fixed_rel is not None else None))
        # Shapes known per sample only keep the input's layout, as DALI (a sample whose number of
        # dimensions then differs fails, asking for a layout).
        out_layout = in_layout if out_ndim is None or out_ndim == len(in_layout) else ""
    op = Reinterpret(dtype=None if dtype is None else parse_output_dtype(dtype, "reinterpret: dtype"),
                     shape=fixed_shape, rel_shape=fixed_rel, src_dims=fixed_src, layout=out_layout, name=name)
    inputs = [data] if shape_input is None else [data, shape_input]
    return add_node(op, inputs, per_sample, device=device)[0]
