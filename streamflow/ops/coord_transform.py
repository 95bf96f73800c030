"""``coord_transform``: apply ``out = M @ in + T`` to points (or vectors, or colours).

As DALI's ``CoordTransform`` (CPU). The input's last axis holds the ``n``
components of each point (``n`` in 1..6, at least a 2D array); ``M`` is an
``m x n`` matrix (``m`` in 1..6), ``T`` a vector of ``m``; the output has ``m``
components. Arguments:

* ``M``: a list of ``m * n`` values (row-major), a scalar (``n x n`` diagonal),
  or per sample (a 2D matrix or a scalar); default identity.
* ``T``: ``m`` values or a scalar (broadcast); per sample allowed; default 0.
* ``MT``: the block matrix ``[M T]`` (``m x (n + 1)``, e.g. the 2x3 or 3x4
  outputs of ``fn.transforms.*``); exclusive with ``M`` and ``T``.

Arithmetic in float32 as DALI: ``((M[i,0] x0 + M[i,1] x1) + ...) + T[i]``.
Inputs may be uint8, int16, uint16, int32 or float32; the output is float32
(default) or the input's type (rounded half away from zero and saturated).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device, Number
from .arguments import fn_function
from .boxes import F32
from .cast import cast_array, parse_output_dtype
from .sequence import add_frames_node

__all__ = ["CoordTransform", "affine_apply", "coord_transform"]

_INPUT_TYPES = (np.uint8, np.int16, np.uint16, np.int32, np.float32)
_MAX_DIM = 6


def affine_apply(points: Any, matrix: np.ndarray, translation: np.ndarray, xp: Any = np) -> Any:
    """``points @ matrix.T + translation`` in float32, summed in DALI's order (``(..., n) -> (..., m)``).

    ``xp``: the points' array module (numpy, or cupy on the GPU); ``matrix`` and
    ``translation`` are host values.
    """
    x = points.astype(F32, copy=False)
    m = matrix.astype(F32, copy=False)
    out = xp.empty(x.shape[:-1] + (m.shape[0],), dtype=F32)
    for i in range(m.shape[0]):
        acc = (x[..., 0] * m[i, 0]).astype(F32)
        for j in range(1, m.shape[1]):
            acc = (acc + (x[..., j] * m[i, j]).astype(F32)).astype(F32)
        out[..., i] = acc + F32(translation[i])
    return out


def _floats(value: Any, what: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"coord_transform: {what} must be numbers, got {value!r}") from None
    if not np.all(np.isfinite(arr)):
        raise PipelineDefinitionError(f"coord_transform: {what} must be finite, got {value!r}")
    return arr


class CoordTransform(Operator):
    """Applies an affine map to the last axis of each sample."""

    name = "coord_transform"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"M", "T", "MT"})

    def __init__(self, *, M: Any = None, T: Any = None, MT: Any = None, fused: bool = False,
                 dtype: Any = DataType.FLOAT, name: str | None = None) -> None:
        super().__init__(name=name)
        self.fused = fused
        self.M = None if M is None else _floats(M, "MT" if fused else "M")
        self.T = None if T is None else _floats(T, "T")
        if MT is not None:
            self.M = _floats(MT, "MT")
        self.out_dtype = parse_output_dtype(dtype, "coord_transform: dtype")
        self.frame_layout = ""  # a frame's layout when the input is a sequence (kept, as DALI keeps it)

    def _matrix(self, value: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray | None]:
        """(``m x n`` matrix, translation from ``MT`` or ``None``) for points of ``n`` components."""
        what = "MT" if self.fused else "M"
        cols = n + 1 if self.fused else n
        if value is None:
            return np.eye(n), (np.zeros(n) if self.fused else None)
        arr = np.asarray(value, dtype=np.float64)
        if arr.size == 1:
            return np.eye(n) * float(arr.reshape(-1)[0]), (np.zeros(n) if self.fused else None)
        if arr.ndim == 2 and arr.shape[1] != cols:
            raise SampleError(f"coord_transform: {what} has shape {arr.shape} but the points have {n} "
                              f"components: it needs {cols} columns")
        if arr.size % cols:
            raise SampleError(f"coord_transform: cannot form a matrix with {arr.size} elements and {cols} columns "
                              f"({what} for points of {n} components)")
        full = arr.reshape(-1, cols)
        if not 1 <= full.shape[0] <= _MAX_DIM:
            raise SampleError(f"coord_transform: {what} must have 1 to {_MAX_DIM} rows, got {full.shape[0]}")
        if self.fused:
            return full[:, :n], full[:, n]
        return full, None

    def transform_sample(self, chunk: Chunk, row: int, sample: Any, xp: Any = np) -> Any:
        """One sample, transformed; ``xp`` is its array module (numpy, or cupy on the GPU)."""
        x = xp.asarray(sample)
        if x.dtype not in _INPUT_TYPES:
            raise SampleError(f"coord_transform: input type {x.dtype} is not supported "
                              "(uint8, int16, uint16, int32 or float32)")
        if x.ndim < 2:
            raise SampleError(f"coord_transform: the input must have at least 2 dimensions (points x components), "
                              f"got shape {x.shape}")
        if self.out_dtype not in (np.dtype(np.float32), x.dtype):
            raise SampleError(f"coord_transform: the output type must be float32 or the input's ({x.dtype}), "
                              f"got {self.out_dtype}")
        n = x.shape[-1]
        if not 1 <= n <= _MAX_DIM:
            raise SampleError(f"coord_transform: points must have 1 to {_MAX_DIM} components, got {n}")
        key = "MT" if self.fused else "M"
        matrix, fused_t = self._matrix(chunk.arg(key, row, self.M), n)
        m = matrix.shape[0]
        if fused_t is not None:
            t = fused_t
        else:
            value = chunk.arg("T", row, self.T)
            t = np.zeros(m) if value is None else np.asarray(value, dtype=np.float64).reshape(-1)
            if t.size == 1:
                t = np.full(m, float(t[0]))
            if t.size != m:
                raise SampleError(f"coord_transform: T has {t.size} components but M has {m} rows")
        out = affine_apply(x, matrix.astype(F32), t.astype(F32), xp)
        return out if self.out_dtype == np.float32 else cast_array(out, self.out_dtype, xp)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, sample: self.transform_sample(chunk, row, sample))]

    def layout(self, index: int) -> str:
        return self.frame_layout


@fn_function()
def coord_transform(
    data: DataNode,
    *,
    M: Number | Sequence[Number] | DataNode | None = None,
    T: Number | Sequence[Number] | DataNode | None = None,
    MT: Number | Sequence[Number] | DataNode | None = None,
    dtype: DataType | str = DataType.FLOAT,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Transform points: ``out = M @ in + T`` on the last axis of each sample.

    Args:
        data: points, ``(..., n)`` per sample (uint8, int16, uint16, int32 or float32).
        M: ``m x n`` matrix (row-major list), a scalar for a diagonal, or per sample; default identity.
        T: translation, ``m`` values or a scalar; per sample allowed.
        MT: ``[M T]`` as one ``m x (n + 1)`` matrix (e.g. from ``fn.transforms``); exclusive with M and T.
        dtype: float32 (default) or the input's type (rounded and saturated).
    """
    if MT is not None and (M is not None or T is not None):
        raise PipelineDefinitionError("coord_transform: MT is exclusive with M and T; give either MT or M and T")
    constants, per_sample = split_arguments(dict(M=M, T=T, MT=MT))
    op = CoordTransform(M=constants.get("M"), T=constants.get("T"), MT=constants.get("MT"), fused=MT is not None,
                        dtype=dtype, name=name)
    layout = input_layout(data, "coord_transform")
    if layout.startswith("F"):
        op.frame_layout = layout[1:]
        # points per frame (fn.per_frame): frame by frame, with per-frame M / T / MT where given so (DALI)
        return add_frames_node(op, data, per_sample, device=device, frame_layouts=(layout[1:],))
    return add_node(op, [data], per_sample, device=device)[0]
