"""``fn.random``: per-sample random values (deterministic for a given seed)."""

from __future__ import annotations

from collections.abc import Sequence

from ..graph import DataNode, add_node, split_arguments
from ..ops.random_ops import Choice, CoinFlip, Normal, Uniform

__all__ = ["choice", "coin_flip", "normal", "uniform"]


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


def coin_flip(
    *, probability: float | DataNode = 0.5, shape: int | Sequence[int] | None = None, name: str | None = None
) -> DataNode:
    """int32 1 with ``probability``, otherwise 0 (e.g. ``mirror=fn.random.coin_flip()``)."""
    constants, per_sample = split_arguments({"probability": probability})
    op = CoinFlip(constants.get("probability", 0.5), shape=shape, name=name)
    return add_node(op, [], per_sample)[0]


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
