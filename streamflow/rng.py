"""Counter-based randomness: every value is a pure function of its coordinates.

A random value depends on (pipeline seed, operator index, epoch, sample id,
draw number) and on nothing else: not on which thread computed it, how the
batch was split into chunks, or whether the pipeline was restarted from a
checkpoint. Vectorised over samples with a SplitMix64-style mixer (cheap,
well distributed, reproducible on the GPU with the same integer arithmetic).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RandomKey", "mix", "permutation_generator", "sample_generator", "uniform"]


@dataclass(frozen=True)
class RandomKey:
    """Identifies an operator's random stream: (pipeline seed, operator index)."""

    seed: int
    op_index: int

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _splitmix(x: np.ndarray) -> np.ndarray:
    x = x + _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def mix(key: RandomKey, epoch: int, sample_ids: np.ndarray, draw: int = 0) -> np.ndarray:
    """64 random bits per sample for draw number ``draw`` (uint64 array)."""
    with np.errstate(over="ignore"):
        h = _splitmix(np.full(1, key.seed & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64))
        h = _splitmix(h ^ np.uint64(key.op_index))
        h = _splitmix(h ^ np.uint64(epoch & 0xFFFFFFFFFFFFFFFF))
        h = _splitmix(h ^ np.uint64(draw))
        ids = np.asarray(sample_ids, dtype=np.int64).astype(np.uint64)
        return _splitmix(h ^ ids)


def uniform(key: RandomKey, epoch: int, sample_ids: np.ndarray, draw: int = 0) -> np.ndarray:
    """Uniform float64 values in [0, 1), one per sample (53 random bits each)."""
    bits = mix(key, epoch, sample_ids, draw) >> np.uint64(11)
    return bits.astype(np.float64) * (1.0 / (1 << 53))


def sample_generator(key: RandomKey, epoch: int, sample_id: int) -> np.random.Generator:
    """A numpy Generator private to one sample, for draws of variable length."""
    bits = mix(key, epoch, np.array([sample_id]))[0]
    return np.random.Generator(np.random.Philox(key=int(bits)))


def permutation_generator(seed: int, epoch: int, salt: int = 0) -> np.random.Generator:
    """The Generator that orders an epoch (identical on every rank of a job)."""
    return np.random.Generator(np.random.Philox(key=[seed & 0xFFFFFFFFFFFFFFFF, (epoch << 8) ^ salt]))
