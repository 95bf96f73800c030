"""``shuffle_after_epoch`` on every reader that has it in DALI: the whole data set permuted every epoch
(epoch 0 included), the same permutation on every rank, each shard reading its part of it. DALI 2.4 does
the same (checked on 8 files and 2 shards) with another random generator, so the orders differ."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from shard_writers import example, write_recordio, write_tfrecord

import streamflow as sf
from streamflow import fn
from streamflow import tfrecord as tfrec
from streamflow.errors import PipelineDefinitionError

N = 8


def _npy(root: Path) -> Callable[..., Any]:
    for i in range(N):
        np.save(root / f"a{i}.npy", np.array([i], dtype=np.int32))
    return lambda **kw: fn.readers.numpy(file_root=str(root), **kw)


def _file(root: Path) -> Callable[..., Any]:
    files = []
    for i in range(N):
        (root / f"f{i}.bin").write_bytes(bytes([i]))
        files.append(str(root / f"f{i}.bin"))
    return lambda **kw: fn.readers.file(files=files, **kw)[0]


def _webdataset(root: Path) -> Callable[..., Any]:
    with tarfile.open(root / "shard.tar", "w") as tar:
        for i in range(N):
            info = tarfile.TarInfo(f"s{i}.bin")
            info.size = 1
            tar.addfile(info, io.BytesIO(bytes([i])))
    return lambda **kw: fn.readers.webdataset(paths=[str(root / "shard.tar")], ext=["bin"], **kw)


def _tfrecord(root: Path) -> Callable[..., Any]:
    write_tfrecord(root / "r.tfrecord", [example({"v": [i]}) for i in range(N)])
    return lambda **kw: fn.readers.tfrecord(path=str(root / "r.tfrecord"),
                                            features={"v": tfrec.FixedLenFeature([1], tfrec.int64, 0)}, **kw)["v"]


def _mxnet(root: Path) -> Callable[..., Any]:
    from shard_writers import irheader

    write_recordio(root / "r.rec", root / "r.idx", [irheader(float(i)) + bytes([i]) for i in range(N)])
    return lambda **kw: fn.readers.mxnet(path=[str(root / "r.rec")], index_path=[str(root / "r.idx")], **kw)[1]


def _nemo_asr(root: Path) -> Callable[..., Any]:
    import soundfile

    lines = []
    for i in range(N):
        soundfile.write(root / f"c{i}.wav", np.full(160, i, dtype=np.int16), 16000, subtype="PCM_16")
        lines.append(json.dumps({"audio_filepath": str(root / f"c{i}.wav"), "duration": 0.01, "text": "x"}))
    (root / "manifest.json").write_text("\n".join(lines) + "\n")
    return lambda **kw: fn.readers.nemo_asr(manifest_filepaths=[str(root / "manifest.json")], dtype=sf.types.INT16,
                                            read_sample_rate=False, read_text=False, **kw)


READERS = {"file": _file, "numpy": _npy, "webdataset": _webdataset, "tfrecord": _tfrecord, "mxnet": _mxnet,
           "nemo_asr": _nemo_asr}


def _first_values(reader: Callable[..., Any], epochs: int, **kw: Any) -> list[list[int]]:
    @sf.pipeline_def(batch_size=1, num_threads=1, seed=5)
    def pipe():  # type: ignore[no-untyped-def]
        return reader(name="r", **kw)

    with pipe() as p:
        return [[int(np.asarray(b[0].at(0)).reshape(-1)[0]) for b in p.iter()] for _ in range(epochs)]


@pytest.mark.parametrize("kind", sorted(READERS))
def test_whole_set_permuted_every_epoch_alike_on_every_rank(kind: str, tmp_path: Path) -> None:
    if kind == "nemo_asr":
        pytest.importorskip("soundfile")
    reader = READERS[kind](tmp_path)
    assert _first_values(reader, 1) == [list(range(N))]  # unshuffled: file order
    e0, e1, e2 = _first_values(reader, 3, shuffle_after_epoch=True)
    assert sorted(e0) == sorted(e1) == sorted(e2) == list(range(N))
    assert e0 != list(range(N)) and len({tuple(e0), tuple(e1), tuple(e2)}) == 3
    (rank1,) = _first_values(reader, 1, shuffle_after_epoch=True, num_shards=2, shard_id=1)
    assert rank1 == e0[N // 2:]
    other_seed = _first_values(reader, 1, shuffle_after_epoch=True, shuffle_after_epoch_seed=11)
    assert sorted(other_seed[0]) == list(range(N)) and other_seed[0] != e0
    with pytest.raises(PipelineDefinitionError, match="shuffle_after_epoch cannot be combined"):
        _first_values(reader, 1, shuffle_after_epoch=True, random_shuffle=True)
    with pytest.raises(PipelineDefinitionError, match="shuffle_after_epoch cannot be combined"):
        _first_values(reader, 1, shuffle_after_epoch=True, stick_to_shard=True)
