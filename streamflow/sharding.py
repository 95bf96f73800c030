"""Which samples a reader yields in each epoch: sharding, shuffling, padding.

Shared by every reader that walks a fixed list of items (files, .npy arrays).
All of it is a pure function of (seed, epoch), so every rank of a job
computes the same order and a resumed pipeline continues exactly.

Shard ``i`` of ``S`` covers items ``[floor(i*N/S), floor((i+1)*N/S))``. Without
``stick_to_shard``, epoch ``e`` reads shard ``(i + e) mod S``. Shuffling uses
a buffer of ``initial_fill`` items, like DALI's readers: the first
``initial_fill`` items fill the buffer, then each step emits a random buffer
slot and refills it with the next item.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .distributed import resolve_shard
from .errors import PipelineDefinitionError
from .rng import permutation_generator

__all__ = ["EpochInfo", "EpochOrder", "ShardSpec", "shard_range"]


@dataclass(frozen=True)
class EpochInfo:
    """What a source knows about the size of an epoch (DALI's reader meta)."""

    epoch_size: int  # samples in the whole data set
    epoch_size_padded: int  # with shard padding (pad_last_batch)
    shard_size: int  # samples this shard yields per epoch
    number_of_shards: int
    shard_id: int
    pad_last_batch: bool
    stick_to_shard: bool


#: The default seed of ``shuffle_after_epoch`` (fixed, as DALI's, so every rank agrees).
_SHUFFLE_AFTER_EPOCH_SEED = 0x5AFE


def shard_range(n: int, shard_id: int, num_shards: int) -> tuple[int, int]:
    """The half-open range of items that shard ``shard_id`` of ``num_shards`` covers."""
    return (shard_id * n) // num_shards, ((shard_id + 1) * n) // num_shards


@dataclass(frozen=True)
class ShardSpec:
    """The sharding and shuffling arguments shared by readers."""

    shard_id: int = 0
    num_shards: int = 1
    stick_to_shard: bool = False
    pad_last_batch: bool = False
    random_shuffle: bool = False
    initial_fill: int = 1024
    #: DALI's ``shuffle_after_epoch``: the whole data set permuted every epoch
    #: (the same permutation on every rank) before sharding.
    shuffle_after_epoch: bool = False
    shuffle_after_epoch_seed: int | None = None

    @classmethod
    def for_reader(cls, shard_id: int | None, num_shards: int | None, **kw: object) -> ShardSpec:
        """A reader's spec: ``shard_id``/``num_shards`` default to the process's rank and world size."""
        shard_id, num_shards = resolve_shard(shard_id, num_shards)
        return cls(shard_id=shard_id, num_shards=num_shards, **kw)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        if self.num_shards < 1:
            raise PipelineDefinitionError(f"num_shards must be >= 1, got {self.num_shards}")
        if not 0 <= self.shard_id < self.num_shards:
            raise PipelineDefinitionError(
                f"shard_id must be in [0, num_shards={self.num_shards}), got {self.shard_id}"
            )
        if self.initial_fill < 1:
            raise PipelineDefinitionError(f"initial_fill must be >= 1, got {self.initial_fill}")
        if self.shuffle_after_epoch and (self.random_shuffle or self.stick_to_shard):
            raise PipelineDefinitionError(
                "shuffle_after_epoch cannot be combined with random_shuffle or stick_to_shard"
            )


def _buffer_shuffle(items: np.ndarray, fill: int, rng: np.random.Generator) -> np.ndarray:
    """Emit ``items`` in the order a shuffle buffer of size ``fill`` gives."""
    n = len(items)
    if fill >= n:
        return items[rng.permutation(n)]
    out = np.empty_like(items)
    buffer = list(items[:fill])
    next_item = fill
    # Draw all slot choices at once; the buffer size only shrinks at the end.
    draws = rng.random(n)
    for i in range(n):
        slot = int(draws[i] * len(buffer))
        out[i] = buffer[slot]
        if next_item < n:
            buffer[slot] = items[next_item]
            next_item += 1
        else:
            buffer[slot] = buffer[-1]
            buffer.pop()
    return out


class EpochOrder:
    """The item order of each epoch for one shard.

    Args:
        n: number of items in the whole data set.
        spec: sharding and shuffling arguments.
        batch_size: used to pad the last batch when ``pad_last_batch``.
        seed: the pipeline seed.
    """

    def __init__(self, n: int, spec: ShardSpec, batch_size: int, seed: int) -> None:
        if n < spec.num_shards:
            raise PipelineDefinitionError(
                f"the data set has {n} samples, fewer than num_shards={spec.num_shards}; "
                "every shard needs at least one sample"
            )
        self.n = n
        self.spec = spec
        self.batch_size = batch_size
        self.seed = seed
        self._cache: tuple[int, np.ndarray, np.ndarray] | None = None

    def shard_of_epoch(self, epoch: int) -> int:
        if self.spec.stick_to_shard:
            return self.spec.shard_id
        return (self.spec.shard_id + epoch) % self.spec.num_shards

    def _padded_size(self, shard_size: int) -> int:
        if not self.spec.pad_last_batch:
            return shard_size
        # Every shard as long as the longest, then whole batches.
        longest = -(-self.n // self.spec.num_shards)
        return -(-longest // self.batch_size) * self.batch_size

    def indices(self, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """(item indices, sample ids) of ``epoch`` for this shard, in reading order.

        A sample id is unique across shards within an epoch (position *
        num_shards + shard), so random augmentations differ between ranks.
        """
        if self._cache is not None and self._cache[0] == epoch:
            return self._cache[1], self._cache[2]
        shard = self.shard_of_epoch(epoch)
        begin, end = shard_range(self.n, shard, self.spec.num_shards)
        items = np.arange(begin, end, dtype=np.int64)
        if self.spec.shuffle_after_epoch:
            # One permutation of the whole set per epoch, from a seed every rank shares.
            whole_seed = self.spec.shuffle_after_epoch_seed
            rng = permutation_generator(_SHUFFLE_AFTER_EPOCH_SEED if whole_seed is None else whole_seed, epoch)
            items = rng.permutation(self.n).astype(np.int64)[begin:end]
        if self.spec.random_shuffle:
            rng = permutation_generator(self.seed, epoch, salt=shard)
            items = _buffer_shuffle(items, self.spec.initial_fill, rng)
        padded = self._padded_size(len(items))
        if padded > len(items):
            items = np.concatenate([items, np.full(padded - len(items), items[-1], dtype=np.int64)])
        ids = np.arange(len(items), dtype=np.int64) * self.spec.num_shards + shard
        self._cache = (epoch, items, ids)
        return items, ids

    def info(self, epoch: int = 0) -> EpochInfo:
        begin, end = shard_range(self.n, self.shard_of_epoch(epoch), self.spec.num_shards)
        size = end - begin
        padded_total = (
            -(-self.n // self.spec.num_shards) * self.spec.num_shards if self.spec.pad_last_batch else self.n
        )
        return EpochInfo(
            epoch_size=self.n,
            epoch_size_padded=padded_total,
            shard_size=self._padded_size(size),
            number_of_shards=self.spec.num_shards,
            shard_id=self.spec.shard_id,
            pad_last_batch=self.spec.pad_last_batch,
            stick_to_shard=self.spec.stick_to_shard,
        )
