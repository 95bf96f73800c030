"""Rank / world-size detection for default sharding (no torch needed)."""

from __future__ import annotations

import sys
import types

import pytest

from streamflow import distributed
from streamflow.distributed import default_device_id, default_shard, world_info


@pytest.fixture(autouse=True)
def no_torch_distributed(monkeypatch):
    # An initialised process group in this interpreter would take precedence.
    monkeypatch.setattr(distributed, "_torch_distributed", lambda: None)


def test_single_process_default():
    assert default_shard({}) == (0, 1)
    assert default_device_id({}) == 0
    assert world_info({}).source == "default"


def test_torchrun_environment():
    env = {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}
    assert default_shard(env) == (3, 8)
    assert default_device_id(env) == 1
    info = world_info(env)
    assert (info.rank, info.world_size, info.local_rank, info.source) == (3, 8, 1, "environment")


def test_reads_os_environ(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert default_shard() == (1, 2)
    assert default_device_id() == 1


@pytest.mark.parametrize(
    "env, match",
    [
        ({"RANK": "1"}, "WORLD_SIZE"),
        ({"WORLD_SIZE": "2"}, "RANK"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, "invalid rank"),
        ({"RANK": "-1", "WORLD_SIZE": "2"}, "invalid rank"),
        ({"RANK": "0", "WORLD_SIZE": "0"}, "invalid rank"),
        ({"RANK": "x", "WORLD_SIZE": "2"}, "not an integer"),
    ],
)
def test_bad_environment_is_explained(env, match):
    with pytest.raises(ValueError, match=match):
        default_shard(env)


def test_bad_local_rank():
    with pytest.raises(ValueError, match="LOCAL_RANK"):
        default_device_id({"LOCAL_RANK": "-2"})
    assert default_device_id({"LOCAL_RANK": ""}) == 0


def test_torch_distributed_takes_precedence(monkeypatch):
    fake_dist = types.SimpleNamespace(
        is_available=lambda: True, is_initialized=lambda: True, get_rank=lambda: 2, get_world_size=lambda: 5
    )
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(distributed=fake_dist))
    monkeypatch.undo()  # drop the autouse stub, keep reading sys.modules
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(distributed=fake_dist))
    assert default_shard({"RANK": "0", "WORLD_SIZE": "1"}) == (2, 5)
    assert world_info({}).source == "torch.distributed"


def test_uninitialised_torch_distributed_is_ignored(monkeypatch):
    monkeypatch.undo()
    fake_dist = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(distributed=fake_dist))
    assert default_shard({"RANK": "1", "WORLD_SIZE": "3"}) == (1, 3)


def test_real_torch_process_group(tmp_path, monkeypatch):
    monkeypatch.undo()
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        assert default_shard({"RANK": "5", "WORLD_SIZE": "9"}) == (0, 1)
    finally:
        dist.destroy_process_group()
    assert torch is not None
