"""Record what DALI 2.4's CPU readers return for the reference shard data sets.

Runnable with any Python that has ``nvidia-dali-cuda130`` (2.4), ``numpy``,
``lmdb`` and ``webdataset`` installed::

    python tests/dali_reference/record_shards.py

It writes the reference data set (tests/shard_writers.py: real JPEGs of
tests/data as WebDataset shards, TFRecord files with index files, an MXNet
RecordIO file, Caffe and Caffe2 LMDBs) into a temporary folder, reads each
with DALI's reader (``device_id=None``, no shuffling, whole shard and
``num_shards=2`` shard 1), and stores per sample the SHA-256 of every
output's bytes, its shape, dtype and (for small outputs) values in
``tests/data/dali/shards/readers.json``. The tests build the same data set
with the same writers and compare streamflow's readers against it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from nvidia.dali import fn, pipeline_def

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
import shard_writers as W

OUT = TESTS / "data" / "dali" / "shards" / "readers.json"


def describe(array: np.ndarray) -> dict:
    a = np.ascontiguousarray(array)
    d = {"sha256": hashlib.sha256(a.tobytes()).hexdigest(), "shape": list(a.shape), "dtype": a.dtype.name}
    if a.size <= 16:
        d["values"] = a.tolist()
    return d


def run(make_outputs, n: int, **shard) -> list[list[dict]]:
    @pipeline_def(batch_size=1, num_threads=1, device_id=None, seed=1)
    def pipe():
        outs = make_outputs(**shard)
        return tuple(outs) if isinstance(outs, (list, tuple)) else (outs,)

    p = pipe()
    p.build()
    samples = []
    for _ in range(n):
        outs = p.run()
        samples.append([describe(np.array(o[0])) for o in outs])
    return samples


def main() -> None:
    import nvidia.dali as dali
    import nvidia.dali.tfrecord as tfrec

    with tempfile.TemporaryDirectory() as tmp:
        paths = W.build_reference(Path(tmp), TESTS / "data")
        feats = {
            "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
            "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
            "image/key": tfrec.FixedLenFeature([], tfrec.string, ""),
            "missing": tfrec.VarLenFeature(tfrec.int64, 0),
        }
        readers = {
            "webdataset": lambda **s: fn.readers.webdataset(paths=paths["wds"], ext=["jpg", "cls"], **s),
            "tfrecord": lambda **s: [
                fn.readers.tfrecord(path=paths["tfrecord"], index_path=paths["tfrecord_idx"], features=feats, **s)[k]
                for k in ("image/encoded", "image/class/label", "image/key")
            ],
            "mxnet": lambda **s: fn.readers.mxnet(path=[paths["rec"]], index_path=[paths["rec_idx"]], **s),
            "caffe": lambda **s: fn.readers.caffe(path=paths["caffe"], **s),
            "caffe2": lambda **s: fn.readers.caffe2(path=paths["caffe2"], **s),
        }
        n = len(W.REFERENCE_FILES)
        record: dict = {"dali_version": dali.__version__, "readers": {}}
        for name, make in readers.items():
            record["readers"][name] = {
                "all": run(make, n),
                "shard1of2": run(make, n // 2, shard_id=1, num_shards=2),
            }
        quirks = {
            "empty": dict(ext=["jpg;png", "cls"]),
            "skip": dict(ext=["jpg;png", "cls"], missing_component_behavior="skip"),
            "case_insensitive": dict(ext=["jpg", "cls"], case_sensitive_extensions=False),
        }
        record["quirks"] = {
            key: run(lambda **s: fn.readers.webdataset(paths=[paths["quirks"]], **args, **s), 4 if key != "skip" else 3)
            for key, args in quirks.items()
        }
        # DALI's index tools (installed beside its Python as wds2idx / tfrecord2idx) on the same files.
        tools = Path(sys.executable).parent
        subprocess.run([str(tools / "wds2idx"), paths["wds"][0], f"{tmp}/dali.idx"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([str(tools / "tfrecord2idx"), paths["tfrecord"][0], f"{tmp}/dali.tfidx"], check=True)
        record["tools"] = {
            "wds2idx": Path(f"{tmp}/dali.idx").read_text(),
            "tfrecord2idx": Path(f"{tmp}/dali.tfidx").read_text(),
        }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
