"""``fn.random``: per-sample random values, deterministic for a given seed (``streamflow/ops/random.py``)."""

from ..ops.random import beta, choice, coin_flip, normal, uniform

__all__ = ["beta", "choice", "coin_flip", "normal", "uniform"]
