"""``random.uniform``, ``random.coin_flip``, ``random.normal``, ``random.choice``: per-sample random values.

Each value is a pure function of (seed, operator, epoch, sample id), see
``streamflow.rng``: the same seed gives the same values whatever the number of
threads or the chunking of the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import rng
from ..errors import PipelineDefinitionError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import parse_dtype
from .arguments import fn_function

__all__ = ["Choice", "CoinFlip", "Normal", "Uniform", "choice", "coin_flip", "normal", "uniform"]


def _shape(shape: int | Sequence[int] | None) -> tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, int):
        return (shape,)
    try:
        result = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"shape must be an int or a list of ints, got {shape!r}") from None
    if any(s < 0 for s in result):
        raise PipelineDefinitionError(f"shape must not be negative, got {shape!r}")
    return result


class _RandomOp(Operator):

    def __init__(self, shape: int | Sequence[int] | None, name: str | None) -> None:
        super().__init__(name=name)
        self.shape = _shape(shape)

    def _uniforms(self, chunk: Chunk, draw: int = 0) -> list[np.ndarray]:
        """Per sample, uniform [0, 1) float64 values of ``self.shape``."""
        if not self.shape:
            values = rng.uniform(chunk.key, chunk.epoch, chunk.sample_ids, draw)
            return [np.float64(v) for v in values]  # type: ignore[misc]
        size = int(np.prod(self.shape))
        out = []
        for sid in chunk.sample_ids:
            gen = rng.sample_generator(chunk.key, chunk.epoch, int(sid) * 2 + draw)
            out.append(gen.random(size).reshape(self.shape))
        return out


class Uniform(_RandomOp):
    """float32 uniform in ``[lo, hi)``, or a uniform choice among ``values``."""

    name = "random.uniform"
    per_sample_args = frozenset({"range"})

    def __init__(self, range: Sequence[float] = (-1.0, 1.0), values: Sequence[float] | None = None,
                 shape: int | Sequence[int] | None = None, name: str | None = None) -> None:
        super().__init__(shape, name)
        self.values = None if values is None else np.asarray(values, dtype=np.float32)
        if self.values is not None and self.values.size == 0:
            raise PipelineDefinitionError("random.uniform: values must not be empty")
        self.range = self._check_range(range)

    @staticmethod
    def _check_range(value: Any) -> tuple[float, float]:
        try:
            lo, hi = (float(v) for v in np.asarray(value).reshape(-1))
        except ValueError:
            raise PipelineDefinitionError(f"random.uniform: range must be [lo, hi], got {value!r}") from None
        if not hi >= lo:
            raise PipelineDefinitionError(f"random.uniform: range [lo, hi] needs hi >= lo, got {value!r}")
        return lo, hi

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out = []
        for row, u in enumerate(self._uniforms(chunk)):
            if self.values is not None:
                index = np.minimum((u * len(self.values)).astype(np.int64), len(self.values) - 1)
                out.append(np.asarray(self.values[index], dtype=np.float32))
                continue
            lo, hi = self._check_range(chunk.arg("range", row, self.range))
            value = np.asarray(lo + u * (hi - lo), dtype=np.float32)
            # float32 rounding can land on hi; keep the interval half-open
            out.append(np.where(value >= hi, np.nextafter(np.float32(hi), np.float32(lo)), value).astype(np.float32) if hi > lo else value)
        return [out]


class CoinFlip(_RandomOp):
    """int32 1 with ``probability``, else 0."""

    name = "random.coin_flip"
    per_sample_args = frozenset({"probability"})

    def __init__(self, probability: float = 0.5, shape: int | Sequence[int] | None = None, name: str | None = None,
                 dtype: Any = None) -> None:
        super().__init__(shape, name)
        if not 0.0 <= float(probability) <= 1.0:
            raise PipelineDefinitionError(f"random.coin_flip: probability must be in [0, 1], got {probability}")
        self.probability = float(probability)
        try:
            self.dtype = np.int32 if dtype is None else parse_dtype(dtype).numpy
        except ValueError as err:
            raise PipelineDefinitionError(f"random.coin_flip: dtype: {err}") from None

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [[
            np.asarray(u < float(chunk.arg("probability", row, self.probability)), dtype=self.dtype)
            for row, u in enumerate(self._uniforms(chunk))
        ]]


class Normal(_RandomOp):
    """float32 normal with ``mean`` and ``stddev`` (Box-Muller on two uniform draws)."""

    name = "random.normal"
    per_sample_args = frozenset({"mean", "stddev"})

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, shape: int | Sequence[int] | None = None, name: str | None = None) -> None:
        super().__init__(shape, name)
        if float(stddev) < 0:
            raise PipelineDefinitionError(f"random.normal: stddev must be >= 0, got {stddev}")
        self.mean, self.stddev = float(mean), float(stddev)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        u1, u2 = self._uniforms(chunk, 0), self._uniforms(chunk, 1)
        out = []
        for row, (a, b) in enumerate(zip(u1, u2)):
            z = np.sqrt(-2.0 * np.log1p(-np.asarray(a))) * np.cos(2.0 * np.pi * np.asarray(b))
            mean = float(chunk.arg("mean", row, self.mean))
            std = float(chunk.arg("stddev", row, self.stddev))
            out.append(np.asarray(mean + std * z, dtype=np.float32))
        return [out]


class Choice(_RandomOp):
    """A random element of ``values`` (or of ``range(n)`` for an int), with probabilities ``p``.

    Like DALI's ``random.choice``: an int ``n`` gives int32 values in
    ``[0, n)``; a list keeps its element type (python floats: float32,
    python ints: int32, numpy arrays: their dtype). ``p`` (default uniform)
    must have one non-negative entry per value and sum to 1; it may be given
    per sample.
    """

    name = "random.choice"
    per_sample_args = frozenset({"p"})

    def __init__(self, a: Any, p: Sequence[float] | None = None, shape: int | Sequence[int] | None = None,
                 name: str | None = None) -> None:
        super().__init__(shape, name)
        if isinstance(a, (bool, np.bool_)):
            raise PipelineDefinitionError(f"random.choice: a must be an int n or a list of values, got {a!r}")
        if isinstance(a, (int, np.integer)):
            if int(a) <= 0:
                raise PipelineDefinitionError(f"random.choice: n must be positive, got {a}")
            self.values = np.arange(int(a), dtype=np.int32)
        else:
            arr = np.asarray(a)
            if arr.ndim != 1 or arr.size == 0:
                raise PipelineDefinitionError(
                    f"random.choice: a must be an int n or a non-empty 1-d list of values, got {a!r}")
            if not isinstance(a, np.ndarray):
                if arr.dtype.kind == "f":
                    arr = arr.astype(np.float32)
                elif arr.dtype.kind in "iu":
                    arr = arr.astype(np.int32)
            if arr.dtype.kind not in "biuf":
                raise PipelineDefinitionError(f"random.choice: values must be numbers, got dtype {arr.dtype}")
            self.values = arr
        self.p = None if p is None else self._check_p(p, len(self.values))

    @staticmethod
    def _check_p(p: Any, n: int) -> np.ndarray:
        try:
            arr = np.asarray(p, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise PipelineDefinitionError(f"random.choice: p must be a list of probabilities, got {p!r}") from None
        if arr.size != n:
            raise PipelineDefinitionError(f"random.choice: p must have {n} entries (one per value), got {arr.size}")
        if np.any(arr < 0) or not np.isfinite(arr).all() or abs(float(arr.sum()) - 1.0) > 1e-4:
            raise PipelineDefinitionError(f"random.choice: p must be non-negative and sum to 1, got {p!r}")
        return arr

    def run(self, chunk: Chunk) -> list[list[Any]]:
        n = len(self.values)
        out = []
        for row, u in enumerate(self._uniforms(chunk)):
            given = chunk.arg("p", row, self.p)
            if given is None:
                index = np.minimum((np.asarray(u) * n).astype(np.int64), n - 1)
            else:
                probs = self.p if given is self.p and self.p is not None else self._check_p(given, n)
                cdf = np.cumsum(probs)
                cdf /= cdf[-1]
                index = np.minimum(np.searchsorted(cdf, np.asarray(u), side="right"), n - 1)
            out.append(np.asarray(self.values[index]))
        return [out]

@fn_function()
def uniform(
    *,
    range: Sequence[float] | DataNode = (-1.0, 1.0),
    values: Sequence[float] | None = None,
    shape: int | Sequence[int] | None = None,
    name: str | None = None,
) -> DataNode:
    """float32 uniform in ``[range[0], range[1])``, or a uniform choice among ``values``.

    With ``values`` (a non-empty list), each value is one of ``values`` with
    equal probability, as float32 (``range`` is then ignored).
    """
    constants, per_sample = split_arguments({"range": range})
    op = Uniform(constants.get("range", (-1.0, 1.0)), values=values, shape=shape, name=name)
    return add_node(op, [], per_sample)[0]


@fn_function()
def coin_flip(
    *, probability: float | DataNode = 0.5, shape: int | Sequence[int] | None = None, dtype: Any = None,
    name: str | None = None,
) -> DataNode:
    """1 with ``probability``, otherwise 0 (e.g. ``mirror=fn.random.coin_flip()``); int32 unless ``dtype``."""
    constants, per_sample = split_arguments({"probability": probability})
    op = CoinFlip(constants.get("probability", 0.5), shape=shape, name=name, dtype=dtype)
    return add_node(op, [], per_sample)[0]


@fn_function()
def normal(
    *,
    mean: float | DataNode = 0.0,
    stddev: float | DataNode = 1.0,
    shape: int | Sequence[int] | None = None,
    name: str | None = None,
) -> DataNode:
    """float32 normally distributed values."""
    constants, per_sample = split_arguments({"mean": mean, "stddev": stddev})
    op = Normal(constants.get("mean", 0.0), constants.get("stddev", 1.0), shape=shape, name=name)
    return add_node(op, [], per_sample)[0]


@fn_function()
def choice(
    a: int | Sequence[float] | Sequence[int],
    *,
    p: Sequence[float] | DataNode | None = None,
    shape: int | Sequence[int] | None = None,
    name: str | None = None,
) -> DataNode:
    """A random element of ``a`` per sample; an int ``n`` means ``range(n)`` (int32).

    Args:
        a: an int ``n`` or a list of values (their type is kept: floats as float32).
        p: probabilities, one per value (default: uniform); may be per sample.
        shape: draw an array of this shape per sample instead of a scalar.
    """
    constants, per_sample = split_arguments({"p": p})
    op = Choice(a, p=constants.get("p"), shape=shape, name=name)
    return add_node(op, [], per_sample)[0]
