"""Epoch order of list readers: shards (DALI's ranges), shuffle buffer, rotation, sample ids."""

from __future__ import annotations

import numpy as np
import pytest

from streamflow.sharding import EpochOrder, ShardSpec, shard_range


def test_shuffle_buffer_limits_how_far_a_sample_moves() -> None:
    order = EpochOrder(1000, ShardSpec(random_shuffle=True, initial_fill=10), batch_size=1, seed=3)
    items, _ = order.indices(0)
    positions = np.empty(1000, dtype=int)
    positions[items] = np.arange(1000)
    # With a buffer of 10, item k cannot come out before position k - 9.
    assert np.all(positions >= np.arange(1000) - 9)
    assert sorted(items) == list(range(1000))


@pytest.mark.parametrize("n,shards", [(64, 1), (64, 3), (10, 4), (7, 7)])
def test_shards_are_disjoint_and_cover_dataset(n: int, shards: int) -> None:
    seen = []
    for shard_id in range(shards):
        order = EpochOrder(n, ShardSpec(shard_id=shard_id, num_shards=shards), batch_size=4, seed=0)
        items, _ = order.indices(0)
        begin, end = shard_range(n, shard_id, shards)
        assert list(items) == list(range(begin, end)) == list(range((shard_id * n) // shards, ((shard_id + 1) * n) // shards))
        seen += list(items)
    assert sorted(seen) == list(range(n))


def test_shard_rotates_per_epoch_unless_stick_to_shard() -> None:
    moving = EpochOrder(12, ShardSpec(shard_id=0, num_shards=3), batch_size=4, seed=0)
    sticky = EpochOrder(12, ShardSpec(shard_id=0, num_shards=3, stick_to_shard=True), batch_size=4, seed=0)
    assert list(moving.indices(1)[0]) == [4, 5, 6, 7]
    assert list(sticky.indices(1)[0]) == [0, 1, 2, 3]


def test_sample_ids_unique_across_shards() -> None:
    ids = []
    for shard_id in range(3):
        order = EpochOrder(30, ShardSpec(shard_id=shard_id, num_shards=3), batch_size=4, seed=0)
        ids += list(order.indices(0)[1])
    assert len(set(ids)) == 30
