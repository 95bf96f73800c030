"""The operators behind ``x[...]`` and ``x.shape()`` on pipeline data (DALI's subscripts and shapes).

``x[1, 2:5, ::2]``, negative indices, ``...``, and per-sample indices
(``x[fn.random.uniform(range=[0, 4], dtype=INT32)]``-style DataNodes, given as
slice bounds or indices) select from every sample as numpy indexing does. As
in DALI, an indexed axis disappears from the layout (``HWC[0]`` -> ``WC``) and a
sliced one keeps its letter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .errors import PipelineDefinitionError, SampleError
from .operator import Chunk, Operator
from .types import parse_dtype

__all__ = ["Index", "NewAxis", "ShapesOp", "SubscriptOp", "newaxis", "parse_key"]


class NewAxis:
    """DALI's ``newaxis``: ``x[newaxis]`` inserts an axis of extent 1; ``newaxis("F")`` names it in the layout."""

    def __init__(self, name: str | None = None) -> None:
        if name is not None and len(name) != 1:
            raise PipelineDefinitionError(f"newaxis: a layout name is one character, got {name!r}")
        self.name = name

    def __call__(self, name: str) -> NewAxis:
        return NewAxis(name)

    def __repr__(self) -> str:
        return "newaxis" if self.name is None else f"newaxis({self.name!r})"


#: ``x[newaxis]``, ``x[:, newaxis]`` (``import streamflow as dali; dali.newaxis``).
newaxis = NewAxis()


@dataclass(frozen=True)
class Index:
    """One entry of a subscript: an index, or a slice; a ``str`` value names a per-sample argument."""

    kind: str  # "index" | "slice" | "ellipsis" | "newaxis" (``at``: its layout name or None)
    at: Any = None
    start: Any = None
    stop: Any = None
    step: Any = None


def parse_key(key: Any, arg_name: Any) -> tuple[tuple[Index, ...], dict[str, Any]]:
    """The key of ``x[key]`` as ``Index`` entries; DataNode bounds become named per-sample arguments.

    ``arg_name(value)`` tells whether ``value`` is pipeline data (returns an argument name) or not (None).
    """
    entries = key if isinstance(key, tuple) else (key,)
    out: list[Index] = []
    args: dict[str, Any] = {}

    def bound(value: Any, where: str) -> Any:
        if value is None:
            return None
        name = arg_name(value)
        if name is not None:
            args[f"{where}"] = value
            return where
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise PipelineDefinitionError(f"subscript: indices must be integers or pipeline data, got {value!r}")
        return int(value)

    for k, e in enumerate(entries):
        if e is Ellipsis:
            if any(i.kind == "ellipsis" for i in out):
                raise PipelineDefinitionError("subscript: at most one ... (Ellipsis)")
            out.append(Index("ellipsis"))
        elif isinstance(e, slice):
            if e.step is not None and not arg_name(e.step) and int(e.step) == 0:
                raise PipelineDefinitionError("subscript: a slice step cannot be 0")
            out.append(Index("slice", start=bound(e.start, f"s{k}_start"), stop=bound(e.stop, f"s{k}_stop"),
                             step=bound(e.step, f"s{k}_step")))
        elif isinstance(e, NewAxis):
            out.append(Index("newaxis", at=e.name))
        elif e is None:
            raise PipelineDefinitionError("subscript: None (new axis) is not supported; use newaxis or fn.expand_dims")
        else:
            out.append(Index("index", at=bound(e, f"i{k}")))
    return tuple(out), args


class SubscriptOp(Operator):
    """``x[key]`` for every sample."""

    name: ClassVar[str] = "subscript"

    def __init__(self, key: tuple[Index, ...], arg_names: frozenset[str], layout: str) -> None:
        super().__init__()
        self.key = key
        self.per_sample_args = arg_names  # type: ignore[misc]
        self._in_layout = layout
        self._layout = self._out_layout(layout)

    def _out_layout(self, layout: str) -> str:
        if not layout:
            return ""
        explicit = [i for i in self.key if i.kind not in ("ellipsis", "newaxis")]
        fill: list[Index | None] = [None] * (len(layout) - len(explicit))
        if len(explicit) > len(layout):
            return ""
        key: list[Index | None] = list(self.key)
        if any(i.kind == "ellipsis" for i in self.key):
            at = [i.kind for i in self.key].index("ellipsis")
            key = key[:at] + fill + key[at + 1:]
        else:
            key += fill
        out = ""
        letters = iter(layout)
        for i in key:
            if i is not None and i.kind == "newaxis":
                if i.at is None:
                    return ""  # an unnamed new axis: DALI drops the layout too
                out += i.at
            else:
                c = next(letters)
                out += "" if i is not None and i.kind == "index" else c
        return out

    def _value(self, chunk: Chunk, row: int, v: Any) -> Any:
        if isinstance(v, str):
            got = np.asarray(chunk.arg(v, row, None)).reshape(-1)
            if got.size != 1 or got.dtype.kind not in "iu":
                raise SampleError(f"subscript: the per-sample index {v} must be one integer, got {got.tolist()}")
            return int(got[0])
        return v

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def select(row: int, sample: Any) -> Any:
            arr = np.asarray(sample)
            key: list[Any] = []
            for i in self.key:
                if i.kind == "ellipsis":
                    key.append(Ellipsis)
                elif i.kind == "newaxis":
                    key.append(None)
                elif i.kind == "slice":
                    key.append(slice(self._value(chunk, row, i.start), self._value(chunk, row, i.stop),
                                     self._value(chunk, row, i.step)))
                else:
                    key.append(self._value(chunk, row, i.at))
            try:
                # np.array, not ascontiguousarray: that one turns a 0-d result into shape (1,).
                return np.array(arr[tuple(key)], order="C")
            except IndexError as err:
                raise SampleError(f"subscript {tuple(key)} of a sample of shape {arr.shape}: {err}") from None

        return [chunk.each_sample(select)]

    def layout(self, index: int) -> str:
        return self._layout


class ShapesOp(Operator):
    """Each sample's shape as a 1-D integer array (``fn.shapes``, ``x.shape()``)."""

    name: ClassVar[str] = "shapes"

    def __init__(self, dtype: Any = np.int64, *, name: str | None = None) -> None:
        super().__init__(name=name)
        try:  # DALI's types.INT32 as well as numpy types and names
            self.dtype = parse_dtype(dtype).numpy
        except ValueError as err:
            raise PipelineDefinitionError(f"shapes: {err}") from None
        if self.dtype.kind not in "iuf":
            raise PipelineDefinitionError(f"shapes: dtype must be numeric, got {self.dtype}")

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [[np.asarray(np.shape(s), dtype=self.dtype) for s in chunk.inputs[0]]]
