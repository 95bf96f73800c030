"""``ListSource``: the part every reader over a fixed list of items shares.

Epoch order (shards, shuffling, padding; see ``streamflow.sharding``), batch slicing
and deterministic replacements for ``on_error="skip"``. A reader says how
many items it has and how to read some of them (``_read``).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import rng
from ...errors import ReadError, SampleError
from ...io.pools import IOPool
from ...operator import Source, SourceBatch
from ...rng import RandomKey
from ...sharding import EpochInfo, EpochOrder, ShardSpec
from ...types import Device

__all__ = ["ListSource", "split_read_errors"]

# Salt of the random stream that picks replacement samples.
_REPLACEMENT_STREAM = 0x5EED


def split_read_errors(
    results: Sequence[Any], convert: Callable[[Any], Any] | None = None
) -> tuple[list[Any], dict[int, SampleError]]:
    """A batch's read results as (values, failures by row).

    A ``ReadError`` is its row's failure (value ``None``); any other result
    is the row's value, through ``convert`` when given.
    """
    values: list[Any] = []
    failures: dict[int, SampleError] = {}
    for row, result in enumerate(results):
        if isinstance(result, ReadError):
            failures[row] = result
            values.append(None)
        else:
            values.append(result if convert is None else convert(result))
    return values, failures


class ListSource(Source):
    """A source reading items ``0 .. num_items-1`` of a list, epoch by epoch."""

    def __init__(
        self, *, shard: ShardSpec, seed: int | None, name: str | None, device: Device = Device.CPU
    ) -> None:
        super().__init__(device=device, name=name)
        self.shard = shard
        self._seed = seed
        self._order: EpochOrder | None = None
        self._io: IOPool | None = None
        self._batch_size = 1

    @property
    @abc.abstractmethod
    def num_items(self) -> int:
        """How many items the data set has (all shards)."""

    @abc.abstractmethod
    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        """Read ``items`` (indices into the list) as the samples ``ids``."""

    def prepare(self, batch_size: int, seed: int, io: IOPool) -> None:
        self._batch_size = batch_size
        self._io = io
        self._order = EpochOrder(self.num_items, self.shard, batch_size, self._seed if self._seed is not None else seed)

    def _epoch_order(self) -> EpochOrder:
        if self._order is None:  # asked for sizes before the pipeline started
            self._order = EpochOrder(self.num_items, self.shard, self._batch_size, self._seed or 0)
        return self._order

    def epoch_info(self) -> EpochInfo:
        return self._epoch_order().info()

    def start_epoch(self, epoch: int) -> None:
        self._epoch_order().indices(epoch)

    async def read_batch(self, epoch: int, batch_index: int) -> SourceBatch | None:
        items, ids = self._epoch_order().indices(epoch)
        begin = batch_index * self._batch_size
        if begin >= len(items):
            return None
        end = begin + self._batch_size
        return await self._read(items[begin:end], ids[begin:end])

    async def read_replacement(self, epoch: int, sample_id: int, attempt: int) -> SourceBatch:
        """A deterministic other sample of the same shard and epoch."""
        order = self._epoch_order()
        items, _ = order.indices(epoch)
        key = RandomKey(order.seed, _REPLACEMENT_STREAM)
        pick = int(rng.mix(key, epoch, np.array([sample_id]), draw=attempt)[0] % np.uint64(len(items)))
        return await self._read(items[pick : pick + 1], np.array([sample_id], dtype=np.int64))

    def layout(self, index: int) -> str:
        return ""
