"""``random.uniform``, ``coin_flip``, ``normal``, ``beta``, ``choice``: per-sample random values.

Each value is a pure function of (seed, operator, epoch, sample id), see
``streamflow.rng``: the same seed gives the same values whatever the number of
threads or the chunking of the batch. ``seed=`` fixes an operator's stream
(two operators with the same seed draw the same values, as in DALI); by
default it comes from the pipeline's seed and the operator's place in the graph.

As in DALI 2.4:

* one value per sample, or an array of ``shape``, or of the shape of the
  ``shape_like`` input (each sample's own shape);
* ``dtype`` converts the drawn values (integers: rounded half away from zero
  and clamped, so ``uniform(range=[0, 10), dtype=INT32)`` can give 10);
  defaults: float32, and int32 for ``coin_flip``; ``beta`` gives float32 or
  float64 only;
* ``choice`` picks from a constant list (or ``range(n)``) or from a per-sample
  input: a 1-D array, or a scalar ``n`` meaning ``range(n)`` in its type.

The values themselves differ from DALI's (another generator); their
distributions are checked in ``tests/unit/ops/test_random.py``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import rng
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType
from .arguments import fn_function, shape_argument
from .cast import parse_output_dtype

__all__ = [
    "Beta", "Choice", "CoinFlip", "Normal", "Uniform", "beta", "choice", "coin_flip", "normal", "operator_key",
    "uniform",
]

_INTS = "iu"


def operator_key(chunk: Chunk, seed: int | None, name: str) -> rng.RandomKey:
    """The random stream of an operator: the engine's, or one fixed by ``seed`` (and the operator's name)."""
    if seed is None:
        return chunk.key
    return rng.RandomKey(int(seed), zlib.crc32(name.encode()))


def convert_values(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Drawn float values in ``dtype``: integers rounded half away from zero and clamped, floats cast."""
    if dtype == np.bool_:
        return np.asarray(values != 0)
    if dtype.kind in _INTS:
        info = np.iinfo(dtype)
        v = np.asarray(values, dtype=np.float64)
        v = np.trunc(v + np.copysign(0.5, v))
        hi = float(info.max) if info.bits < 64 else np.nextafter(float(info.max), 0.0)
        return np.clip(v, float(info.min), hi).astype(dtype)
    return np.asarray(values).astype(dtype)


def _dtype(value: Any, what: str, allowed: Sequence[Any]) -> np.dtype | None:
    return None if value is None else parse_output_dtype(value, what, allowed)


_NUMERIC = (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64, np.float32, np.float64)


class _RandomOp(Operator):
    """Shared: the sample shape (``shape`` or the ``shape_like`` input), the stream, uniform draws."""

    def __init__(self, shape: int | Sequence[int] | None, name: str | None, *, seed: int | None = None,
                 shape_like: bool = False) -> None:
        super().__init__(name=name)
        self.shape = () if shape is None else shape_argument(shape, f"{self.name}: shape")
        if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool)):
            raise PipelineDefinitionError(f"{self.name}: seed must be an integer, got {seed!r}")
        self.seed = None if seed is None or int(seed) < 0 else int(seed)  # DALI's -1: not set
        self.shape_like = shape_like

    def sample_shape(self, chunk: Chunk, row: int) -> tuple[int, ...]:
        if self.shape_like:
            return tuple(np.shape(chunk.inputs[-1][row]))
        if "shape" in chunk.args:  # DALI: a per-sample shape (e.g. num_crops[newaxis])
            try:
                return shape_argument(chunk.args["shape"][row], f"{self.name}: shape")
            except PipelineDefinitionError as err:
                raise SampleError(str(err)) from None
        return self.shape

    def _uniforms(self, chunk: Chunk, draw: int = 0) -> list[Any]:
        """Per sample, uniform [0, 1) float64 values of the sample's shape."""
        key = operator_key(chunk, self.seed, self.name)
        if not self.shape and not self.shape_like and "shape" not in chunk.args:
            values = rng.uniform(key, chunk.epoch, chunk.sample_ids, draw)
            return [np.float64(v) for v in values]
        out = []
        for row, sid in enumerate(chunk.sample_ids):
            shape = self.sample_shape(chunk, row)
            gen = rng.sample_generator(key, chunk.epoch, int(sid) * 2 + draw)
            out.append(gen.random(int(np.prod(shape, dtype=np.int64))).reshape(shape))
        return out

    def _generators(self, chunk: Chunk) -> list[np.random.Generator]:
        key = operator_key(chunk, self.seed, self.name)
        return [rng.sample_generator(key, chunk.epoch, int(sid) * 2) for sid in chunk.sample_ids]


class Uniform(_RandomOp):
    """Uniform in ``[lo, hi)``, or a uniform choice among ``values``; float32 unless ``dtype``."""

    name = "random.uniform"
    per_sample_args = frozenset({"range", "values", "shape"})

    def __init__(self, range: Sequence[float] = (-1.0, 1.0), values: Sequence[float] | None = None,
                 shape: int | Sequence[int] | None = None, name: str | None = None, *, dtype: Any = None,
                 seed: int | None = None, shape_like: bool = False) -> None:
        super().__init__(shape, name, seed=seed, shape_like=shape_like)
        self.values = None if values is None else self._check_values(values)
        self.range = self._check_range(range)
        self.dtype = _dtype(dtype, self.name, _NUMERIC) or np.dtype(np.float32)

    @staticmethod
    def _check_values(values: Any) -> np.ndarray:
        arr = np.asarray(values, dtype=np.float32).reshape(-1)
        if arr.size == 0:
            raise PipelineDefinitionError("random.uniform: values must not be empty")
        return arr

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
            given = chunk.arg("values", row, self.values)
            if given is not None:
                vals = self.values if given is self.values and self.values is not None else self._check_values(given)
                index = np.minimum((u * len(vals)).astype(np.int64), len(vals) - 1)
                out.append(convert_values(np.asarray(vals[index], dtype=np.float32), self.dtype))
                continue
            lo, hi = self._check_range(chunk.arg("range", row, self.range))
            value = np.asarray(lo + u * (hi - lo), dtype=np.float32)
            if hi > lo:  # float32 rounding can land on hi; keep the interval half-open
                value = np.where(value >= hi, np.nextafter(np.float32(hi), np.float32(lo)), value).astype(np.float32)
            out.append(convert_values(value, self.dtype))
        return [out]


class CoinFlip(_RandomOp):
    """1 with ``probability``, else 0; int32 unless ``dtype``."""

    name = "random.coin_flip"
    per_sample_args = frozenset({"probability"})

    def __init__(self, probability: float = 0.5, shape: int | Sequence[int] | None = None, name: str | None = None,
                 *, dtype: Any = None, seed: int | None = None, shape_like: bool = False) -> None:
        super().__init__(shape, name, seed=seed, shape_like=shape_like)
        if not 0.0 <= float(probability) <= 1.0:
            raise PipelineDefinitionError(f"random.coin_flip: probability must be in [0, 1], got {probability}")
        self.probability = float(probability)
        self.dtype = _dtype(dtype, self.name, (np.bool_, *_NUMERIC)) or np.dtype(np.int32)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [[
            convert_values(np.asarray(u < float(chunk.arg("probability", row, self.probability))), self.dtype)
            for row, u in enumerate(self._uniforms(chunk))
        ]]


class Normal(_RandomOp):
    """Normal with ``mean`` and ``stddev`` (Box-Muller on two uniform draws); float32 unless ``dtype``."""

    name = "random.normal"
    per_sample_args = frozenset({"mean", "stddev"})

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, shape: int | Sequence[int] | None = None,
                 name: str | None = None, *, dtype: Any = None, seed: int | None = None,
                 shape_like: bool = False) -> None:
        super().__init__(shape, name, seed=seed, shape_like=shape_like)
        if float(stddev) < 0:
            raise PipelineDefinitionError(f"random.normal: stddev must be >= 0, got {stddev}")
        self.mean, self.stddev = float(mean), float(stddev)
        self.dtype = _dtype(dtype, self.name, _NUMERIC) or np.dtype(np.float32)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        u1, u2 = self._uniforms(chunk, 0), self._uniforms(chunk, 1)
        out = []
        for row, (a, b) in enumerate(zip(u1, u2)):
            z = np.sqrt(-2.0 * np.log1p(-np.asarray(a))) * np.cos(2.0 * np.pi * np.asarray(b))
            mean = float(chunk.arg("mean", row, self.mean))
            std = float(chunk.arg("stddev", row, self.stddev))
            out.append(convert_values(np.asarray(mean + std * z, dtype=np.float32), self.dtype))
        return [out]


class Beta(_RandomOp):
    """Beta(``alpha``, ``beta``) values in [0, 1]; float32 or float64."""

    name = "random.beta"
    per_sample_args = frozenset({"alpha", "beta"})

    def __init__(self, alpha: float = 1.0, beta: float = 1.0, shape: int | Sequence[int] | None = None,
                 name: str | None = None, *, dtype: Any = None, seed: int | None = None,
                 shape_like: bool = False) -> None:
        super().__init__(shape, name, seed=seed, shape_like=shape_like)
        self.alpha = self._positive(alpha, "alpha")
        self.beta = self._positive(beta, "beta")
        self.dtype = _dtype(dtype, self.name, (np.float32, np.float64)) or np.dtype(np.float32)

    @staticmethod
    def _positive(value: Any, what: str) -> float:
        v = float(np.asarray(value, dtype=np.float64).reshape(-1)[0])
        if not v > 0 or not np.isfinite(v):
            raise PipelineDefinitionError(f"random.beta: {what} must be a positive number, got {value!r}")
        return v

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, gen in enumerate(self._generators(chunk)):
            try:
                a = self._positive(chunk.arg("alpha", row, self.alpha), "alpha")
                b = self._positive(chunk.arg("beta", row, self.beta), "beta")
            except PipelineDefinitionError as err:
                chunk.fail(row, SampleError(str(err)))
                out.append(None)
                continue
            shape = self.sample_shape(chunk, row)
            out.append(np.asarray(gen.beta(a, b, size=shape), dtype=self.dtype))
        return [out]


class Choice(_RandomOp):
    """A random element of ``values`` (or of ``range(n)`` for an int), with probabilities ``p``.

    Like DALI's ``random.choice``: an int ``n`` gives int32 values in
    ``[0, n)``; a list keeps its element type (python floats: float32,
    python ints: int32, numpy arrays: their dtype). ``p`` (default uniform)
    must have one non-negative entry per value and sum to 1; it may be given
    per sample. With ``a`` given as pipeline data (``from_input``), each
    sample's own values are used: a 1-D array, or a scalar ``n`` (``range(n)``
    in its integer type).
    """

    name = "random.choice"
    per_sample_args = frozenset({"p"})

    def __init__(self, a: Any, p: Sequence[float] | None = None, shape: int | Sequence[int] | None = None,
                 name: str | None = None, *, seed: int | None = None, shape_like: bool = False,
                 from_input: bool = False) -> None:
        super().__init__(shape, name, seed=seed, shape_like=shape_like)
        self.from_input = from_input
        self.values = None if from_input else self._values(a, PipelineDefinitionError)
        self.p = None if p is None or self.values is None else self._check_p(p, len(self.values))
        self._p_const = p

    @staticmethod
    def _values(a: Any, error: type[Exception]) -> np.ndarray:
        if isinstance(a, (bool, np.bool_)):
            raise error(f"random.choice: a must be an int n or a list of values, got {a!r}")
        if isinstance(a, (int, np.integer)) or (isinstance(a, np.ndarray) and a.ndim == 0 and a.dtype.kind in _INTS):
            n = int(a)
            if n <= 0:
                raise error(f"random.choice: n must be positive, got {n}")
            return np.arange(n, dtype=a.dtype if isinstance(a, np.ndarray) else np.int32)
        arr = np.asarray(a)
        if arr.ndim != 1 or arr.size == 0:
            raise error(f"random.choice: a must be an int n or a non-empty 1-d list of values, got {a!r}")
        if not isinstance(a, np.ndarray):
            if arr.dtype.kind == "f":
                arr = arr.astype(np.float32)
            elif arr.dtype.kind in _INTS:
                arr = arr.astype(np.int32)
        if arr.dtype.kind not in "biuf":
            raise error(f"random.choice: values must be numbers, got dtype {arr.dtype}")
        return arr

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
        out: list[Any] = []
        for row, u in enumerate(self._uniforms(chunk)):
            try:
                values = self.values if self.values is not None else self._values(chunk.inputs[0][row], SampleError)
                n = len(values)
                given = chunk.arg("p", row, self.p if self.values is not None else self._p_const)
                if given is None:
                    index = np.minimum((np.asarray(u) * n).astype(np.int64), n - 1)
                else:
                    probs = self.p if given is self.p and self.p is not None else self._check_p(given, n)
                    cdf = np.cumsum(probs)
                    cdf /= cdf[-1]
                    index = np.minimum(np.searchsorted(cdf, np.asarray(u), side="right"), n - 1)
            except (SampleError, PipelineDefinitionError) as err:
                chunk.fail(row, err if isinstance(err, SampleError) else SampleError(str(err)))
                out.append(None)
                continue
            out.append(np.asarray(values[index]))
        return [out]


def _add(op: _RandomOp, shape_like: DataNode | None, per_sample: dict[str, DataNode],
         inputs: list[DataNode] | None = None) -> DataNode:
    nodes = list(inputs or []) + ([shape_like] if shape_like is not None else [])
    return add_node(op, nodes, per_sample)[0]


@fn_function(label="random.uniform")
def uniform(
    shape_like: DataNode | None = None,
    *,
    range: Sequence[float] | DataNode = (-1.0, 1.0),
    values: Sequence[float] | DataNode | None = None,
    shape: int | Sequence[int] | DataNode | None = None,
    dtype: DataType | str | None = None,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode:
    """Uniform in ``[range[0], range[1])``, or a uniform choice among ``values``.

    Args:
        shape_like: draw an array of each sample's shape of this input.
        values: choose among these (equal probability; ``range`` is then ignored).
        shape: draw an array of this shape per sample instead of a scalar (per sample allowed).
        dtype: output type (default float32); integers round half away from zero.
        seed: a fixed seed for this operator (default: from the pipeline's seed).
    """
    constants, per_sample = split_arguments({"range": range, "values": values, "shape": shape})
    op = Uniform(constants.get("range", (-1.0, 1.0)), values=constants.get("values"), shape=constants.get("shape"),
                 name=name,
                 dtype=dtype, seed=seed, shape_like=shape_like is not None)
    return _add(op, shape_like, per_sample)


@fn_function(label="random.coin_flip")
def coin_flip(
    shape_like: DataNode | None = None,
    *,
    probability: float | DataNode = 0.5,
    shape: int | Sequence[int] | None = None,
    dtype: DataType | str | None = None,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode:
    """1 with ``probability``, otherwise 0 (int32 by default; e.g. ``mirror=fn.random.coin_flip()``)."""
    constants, per_sample = split_arguments({"probability": probability})
    op = CoinFlip(constants.get("probability", 0.5), shape=shape, name=name, dtype=dtype, seed=seed,
                  shape_like=shape_like is not None)
    return _add(op, shape_like, per_sample)


@fn_function(label="random.normal")
def normal(
    shape_like: DataNode | None = None,
    *,
    mean: float | DataNode = 0.0,
    stddev: float | DataNode = 1.0,
    shape: int | Sequence[int] | None = None,
    dtype: DataType | str | None = None,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode:
    """Normally distributed values (float32 by default)."""
    constants, per_sample = split_arguments({"mean": mean, "stddev": stddev})
    op = Normal(constants.get("mean", 0.0), constants.get("stddev", 1.0), shape=shape, name=name, dtype=dtype,
                seed=seed, shape_like=shape_like is not None)
    return _add(op, shape_like, per_sample)


@fn_function(label="random.beta")
def beta(
    shape_like: DataNode | None = None,
    *,
    alpha: float | DataNode = 1.0,
    beta: float | DataNode = 1.0,
    shape: int | Sequence[int] | None = None,
    dtype: DataType | str | None = None,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode:
    """Beta-distributed values in [0, 1] (density ``x^(alpha-1) (1-x)^(beta-1)``).

    Args:
        alpha, beta: positive shape parameters; may be per sample.
        dtype: ``FLOAT`` (default) or ``FLOAT64``.
    """
    constants, per_sample = split_arguments({"alpha": alpha, "beta": beta})
    op = Beta(constants.get("alpha", 1.0), constants.get("beta", 1.0), shape=shape, name=name, dtype=dtype,
              seed=seed, shape_like=shape_like is not None)
    return _add(op, shape_like, per_sample)


@fn_function(label="random.choice")
def choice(
    a: int | Sequence[float] | Sequence[int] | DataNode,
    shape_like: DataNode | None = None,
    *,
    p: Sequence[float] | DataNode | None = None,
    shape: int | Sequence[int] | None = None,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode:
    """A random element of ``a`` per sample; an int ``n`` means ``range(n)`` (int32).

    Args:
        a: an int ``n``, a list of values (their type is kept: floats as
            float32), or pipeline data (per sample: a 1-D array or a scalar ``n``).
        p: probabilities, one per value (default: uniform); may be per sample.
        shape: draw an array of this shape per sample instead of a scalar.
    """
    constants, per_sample = split_arguments({"p": p})
    from_input = isinstance(a, DataNode)
    op = Choice(None if from_input else a, p=constants.get("p"), shape=shape, name=name, seed=seed,
                shape_like=shape_like is not None, from_input=from_input)
    return _add(op, shape_like, per_sample, [a] if from_input else None)  # type: ignore[list-item]
