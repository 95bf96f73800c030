"""``ndd.pytorch.nodes`` (DALI's torchdata nodes): Reader, DictMapper, ToTorch with torchdata's Loader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import streamflow.experimental.dynamic as ndd
from streamflow.errors import PipelineDefinitionError

torch = pytest.importorskip("torch")
tn = pytest.importorskip("torchdata.nodes")


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    paths = []
    for i in range(5):
        path = tmp_path / f"f{i}.bin"
        path.write_bytes(bytes([i, i]))
        paths.append(str(path))
    return paths


def test_reader_mapper_to_torch_through_a_loader(files: list[str]) -> None:
    reader = ndd.pytorch.nodes.Reader(ndd.readers.File, batch_size=2, files=files, labels=[10, 11, 12, 13, 14])
    mapped = ndd.pytorch.nodes.DictMapper(reader, map_fn=lambda data: ndd.cast(data, dtype=ndd.DataType.INT32) * 2)
    loader = tn.Loader(tn.Prefetcher(ndd.pytorch.nodes.ToTorch(mapped), prefetch_factor=2))
    for _ in range(2):  # the Loader resets the nodes every epoch
        steps = [(d.tolist(), lab.ravel().tolist()) for d, lab in loader]
        assert steps == [([[0, 0], [2, 2]], [10, 11]), ([[4, 4], [6, 6]], [12, 13]), ([[8, 8]], [14])]
        assert all(isinstance(t, torch.Tensor) for t in next(iter(loader)))


def test_output_names_state_and_errors(files: list[str]) -> None:
    named = ndd.pytorch.nodes.Reader(ndd.readers.File, batch_size=5, files=files, output_names=["x", "y"])
    named.reset()
    assert sorted(named.next()) == ["x", "y"]
    assert named.get_state() == {}
    with pytest.raises(PipelineDefinitionError, match="output_names has 1 names"):
        ndd.pytorch.nodes.Reader(ndd.readers.File, batch_size=2, files=files, output_names=["x"])
    with pytest.raises(PipelineDefinitionError, match="cannot resume"):
        named.reset({"epoch": 1})
    with pytest.raises(RuntimeError, match="before reset"):
        ndd.pytorch.nodes.Reader(ndd.readers.File, batch_size=2, files=files).next()
    single = ndd.pytorch.nodes.Reader(ndd.readers.File, batch_size=None, files=files)
    single.reset()
    assert np.asarray(single.next()["data"]).tolist() == [0, 0]  # batch_size=None: one sample at a time
