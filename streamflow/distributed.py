"""Where this process stands in a distributed job: rank, world size, local rank.

Read, in order of preference, from

1. ``torch.distributed`` when it is initialised (only if torch is already
   imported: streamflow never imports torch for this);
2. the environment that ``torchrun`` (and most launchers) set: ``RANK``,
   ``WORLD_SIZE``, ``LOCAL_RANK``;
3. otherwise a single process: rank 0 of 1.

Readers use ``default_shard()`` when ``shard_id`` / ``num_shards`` are not
given, so every rank reads its own, disjoint part of the data set; every rank
computes the same shuffling (a pure function of the pipeline seed and the
epoch), so give all ranks the same ``seed``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["WorldInfo", "default_device_id", "default_shard", "world_info"]


@dataclass(frozen=True)
class WorldInfo:
    """Rank and sizes of this process; ``source`` says where they came from."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    source: str = "default"  # "torch.distributed" | "environment" | "default"


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name)
    if value is None or value.strip() == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def _torch_distributed() -> tuple[int, int] | None:
    """(rank, world size) from an initialised torch.distributed, else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    dist = getattr(torch, "distributed", None)
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        return int(dist.get_rank()), int(dist.get_world_size())
    except (RuntimeError, AttributeError, ValueError):
        return None


def world_info(env: Mapping[str, str] | None = None) -> WorldInfo:
    """This process's place in the job (see the module docstring)."""
    env = os.environ if env is None else env
    rank, world = _env_int(env, "RANK"), _env_int(env, "WORLD_SIZE")
    local = _env_int(env, "LOCAL_RANK")
    from_torch = _torch_distributed()
    if from_torch is not None:
        rank, world = from_torch
        source = "torch.distributed"
    elif rank is None and world is None:
        return WorldInfo(0, 1, local or 0, "default")
    else:
        if rank is None or world is None:
            missing = "RANK" if rank is None else "WORLD_SIZE"
            raise ValueError(
                f"{'WORLD_SIZE' if rank is None else 'RANK'} is set but {missing} is not; a distributed "
                "launcher (torchrun) sets both. Unset it, or pass shard_id= and num_shards= explicitly"
            )
        source = "environment"
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"invalid rank {rank} for world size {world} (from {source})")
    if local is not None and local < 0:
        raise ValueError(f"LOCAL_RANK must be >= 0, got {local}")
    return WorldInfo(rank, world, local if local is not None else 0, source)


def default_shard(env: Mapping[str, str] | None = None) -> tuple[int, int]:
    """``(shard_id, num_shards)`` for this process: ``(rank, world_size)``."""
    info = world_info(env)
    return info.rank, info.world_size


def resolve_shard(shard_id: int | None, num_shards: int | None) -> tuple[int, int]:
    """Fill in what a reader was not told from the process's rank and world size."""
    if shard_id is not None and num_shards is not None:
        return shard_id, num_shards
    env_shard, env_shards = default_shard()
    return (env_shard if shard_id is None else shard_id), (env_shards if num_shards is None else num_shards)


def default_device_id(env: Mapping[str, str] | None = None) -> int:
    """The GPU this process should use: ``LOCAL_RANK`` (0 when unset)."""
    env = os.environ if env is None else env
    local = _env_int(env, "LOCAL_RANK")
    if local is None:
        return 0
    if local < 0:
        raise ValueError(f"LOCAL_RANK must be >= 0, got {local}")
    return local
