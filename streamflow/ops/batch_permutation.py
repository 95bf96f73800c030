"""``batch_permutation``: per sample an index into the batch, together a random permutation (DALI 2.4).

Outputs one int32 scalar per sample; ``fn.permute_batch(x, indices=
fn.batch_permutation())`` shuffles a batch. ``allow_repetitions=True`` draws
each index uniformly (repetitions and omissions); ``no_fixed_points=True``
never gives ``out[i] == i`` (ignored for a batch of one sample).

The whole batch is drawn at once (``Operator.whole_batch``) from a generator
keyed on (seed, operator, epoch, the batch's first sample id): the same
permutation whatever the threads or the chunking, a new one per batch and epoch.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .. import rng
from ..graph import DataNode, add_node
from ..operator import Chunk, Operator
from .arguments import fn_function
from .random_crop_window import random_crop_key

__all__ = ["BatchPermutation", "batch_permutation", "draw_permutation"]


def draw_permutation(n: int, gen: np.random.Generator, *, allow_repetitions: bool,
                     no_fixed_points: bool) -> np.ndarray:
    """``n`` indices in ``[0, n)`` drawn from ``gen`` (see the module docstring)."""
    if n <= 1:
        return np.zeros(n, dtype=np.int32)
    if allow_repetitions:
        if not no_fixed_points:
            return gen.integers(0, n, n).astype(np.int32)
        # uniform over [0, n) without i: draw in [0, n - 1) and skip i
        draws = gen.integers(0, n - 1, n)
        return (draws + (draws >= np.arange(n))).astype(np.int32)
    while True:  # a derangement is accepted with probability about 1/e
        perm = gen.permutation(n)
        if not no_fixed_points or not np.any(perm == np.arange(n)):
            return perm.astype(np.int32)


class BatchPermutation(Operator):
    """A random permutation of ``range(batch_size)``, one index per sample."""

    name: ClassVar[str] = "batch_permutation"
    whole_batch = True

    def __init__(self, *, allow_repetitions: bool = False, no_fixed_points: bool = False, seed: int | None = None,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.allow_repetitions = bool(allow_repetitions)
        self.no_fixed_points = bool(no_fixed_points)
        self.seed = seed

    def run(self, chunk: Chunk) -> list[list[Any]]:
        n = len(chunk)
        first = int(chunk.sample_ids[0]) if n else 0
        gen = rng.sample_generator(random_crop_key(chunk, self.seed), chunk.epoch, first)
        perm = draw_permutation(n, gen, allow_repetitions=self.allow_repetitions,
                                no_fixed_points=self.no_fixed_points)
        return [[np.asarray(v, dtype=np.int32) for v in perm]]


@fn_function()
def batch_permutation(
    *,
    allow_repetitions: bool = False,
    no_fixed_points: bool = False,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode:
    """Per sample an int32 index into the batch; together a random permutation of the batch.

    Args:
        allow_repetitions: draw every index independently (repetitions and omissions).
        no_fixed_points: never ``out[i] == i`` (ignored for a batch of one).
        seed: a fixed random stream for this operator (default: the pipeline's).
    """
    op = BatchPermutation(allow_repetitions=allow_repetitions, no_fixed_points=no_fixed_points,
                          seed=None if seed is None or seed < 0 else seed, name=name)
    return add_node(op, [])[0]
