"""Multi-process sharding under ``torchrun`` (gloo on the CPU).

K processes each build the same pipeline (same seed, shard from
``streamflow.distributed.default_shard()``), iterate 2 epochs with the PyTorch
iterator (PARTIAL, so every real sample appears exactly once), and step in
lock-step (an all_reduce per batch would hang otherwise). Each rank writes the
sample ids and source files it saw per epoch; the test checks that the ranks'
samples are disjoint and together cover the data set in every epoch.

This file is also the worker: ``torchrun ... test_torchrun.py WORKER OUT N BS``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(out: str, n: int, bs: int) -> None:
    import torch
    import torch.distributed as dist

    import streamflow as sf
    from streamflow import fn
    from streamflow.distributed import default_device_id, default_shard
    from streamflow.plugin.pytorch import GenericIterator, LastBatchPolicy

    dist.init_process_group("gloo")
    rank, world = default_shard()
    assert (rank, world) == (dist.get_rank(), dist.get_world_size())
    assert default_device_id() == int(os.environ["LOCAL_RANK"])
    data_dir = Path(out) / "data"
    files = [str(data_dir / f"s{i:03d}.bin") for i in range(n)]

    @sf.pipeline_def(batch_size=bs, num_threads=2, seed=1234)
    def pipe():
        # shard_id / num_shards explicit until fn.readers.file defaults to default_shard()
        _, label = fn.readers.file(files=files, labels=list(range(n)), random_shuffle=True,
                                   shard_id=rank, num_shards=world, name="R")
        return label, fn.random.uniform()

    it = GenericIterator(pipe(), ["id", "u"], reader_name="R",
                         last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True)
    record: dict = {"rank": rank, "world": world, "len": len(it), "epochs": []}
    for epoch in range(2):
        ids: list[int] = []
        sources: list[str] = []
        steps = 0
        for step in it:
            part = step[0]
            ids.extend(int(x) for x in part["id"].reshape(-1))
            sources.extend(it.last_batches[0].sources[: len(part["id"])])
            one = torch.ones(1)
            dist.all_reduce(one)  # hangs unless every rank takes this step
            assert int(one.item()) == world
            steps += 1
        record["epochs"].append({"ids": ids, "sources": sources, "steps": steps})
    it.close()
    Path(out, f"rank{rank}.json").write_text(json.dumps(record))
    dist.barrier()
    dist.destroy_process_group()


@pytest.mark.parametrize("nproc, n, bs", [(2, 64, 10), (3, 64, 7)])
def test_torchrun_shards_disjoint_and_covering(tmp_path, nproc, n, bs):
    pytest.importorskip("torch")
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    data = tmp_path / "data"
    data.mkdir()
    for i in range(n):
        (data / f"s{i:03d}.bin").write_bytes(bytes([i]) * 3)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
           "--master_addr=127.0.0.1", f"--master_port={_free_port()}",
           __file__, "WORKER", str(tmp_path), str(n), str(bs)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=110, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(nproc)]
    assert [r["world"] for r in records] == [nproc] * nproc
    assert len({r["len"] for r in records}) == 1
    orders = []
    for epoch in range(2):
        per_rank = [set(r["epochs"][epoch]["ids"]) for r in records]
        all_ids = [i for r in records for i in r["epochs"][epoch]["ids"]]
        assert sorted(all_ids) == list(range(n)), "every sample exactly once per epoch"
        for a in range(nproc):
            for b in range(a + 1, nproc):
                assert not per_rank[a] & per_rank[b]
        sources = [s for r in records for s in r["epochs"][epoch]["sources"]]
        assert sorted(os.path.basename(s) for s in sources) == [f"s{i:03d}.bin" for i in range(n)]
        assert len({r["epochs"][epoch]["steps"] for r in records}) == 1
        orders.append([r["epochs"][epoch]["ids"] for r in records])
    # shards rotate between epochs, and each shard is shuffled
    assert [set(x) for x in orders[0]] != [set(x) for x in orders[1]]
    assert any(ids != sorted(ids) for ids in orders[0])


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "WORKER":
    _worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
