"""Pipelines and iterator loops that use the features of DALI's PyTorch tutorials.

This project's own code (DALI's notebooks are not copied): each case uses the
operators, arguments, iterator classes and loop patterns a user following the
tutorial writes, on the real JPEGs of tests/data written as Caffe / Caffe2
LMDB, RecordIO, TFRecord and a file tree (``shard_writers.build_reference``).
A case is ``case(lib, data) -> {key: array}``, so the very same code runs under
DALI 2.4 (``record_frameworks.py``) and under streamflow
(``tests/integration/test_dali_framework_notebooks.py``). Parameters the
tutorials draw at random (resize and crop positions) are constants here, and
shuffling is off or done by the case itself, since the two libraries draw
different random numbers; the tests run the random versions on streamflow and
check their properties.
"""

from __future__ import annotations

import random
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

TESTS = Path(__file__).resolve().parents[1]
DATA = TESTS / "data"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
import shard_writers as W

Out = dict[str, np.ndarray]
BATCH = 3


def build_data(root: Path) -> dict[str, Any]:
    """The reference samples (8 JPEGs, labels i % 3) in every format the cases read."""
    data = W.build_reference(root / "shards", DATA)
    images = root / "images"
    lines = []
    for key, jpeg, label in W.reference_samples(DATA):
        path = images / f"class{label}" / f"{key}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg)
        lines.append(f"class{label}/{key}.jpg {label}")
    (images / "file_list.txt").write_text("\n".join(lines) + "\n")
    data["images"] = str(images)
    return data


def libraries(kind: str) -> SimpleNamespace:
    """What a user imports: DALI's (``"dali"``) or streamflow's (``"streamflow"``) modules."""
    import torch

    if kind == "dali":
        import nvidia.dali.experimental.dynamic as ndd
        import nvidia.dali.fn as fn
        import nvidia.dali.ops as ops
        import nvidia.dali.plugin.pytorch as plugin
        import nvidia.dali.tfrecord as tfrec
        import nvidia.dali.types as types
        from nvidia.dali import pipeline_def
        from nvidia.dali.pipeline import Pipeline
    else:
        import streamflow.experimental.dynamic as ndd  # type: ignore[no-redef]
        import streamflow.fn as fn  # type: ignore[no-redef]
        import streamflow.ops as ops  # type: ignore[no-redef]
        import streamflow.plugin.pytorch as plugin  # type: ignore[no-redef]
        import streamflow.tfrecord as tfrec  # type: ignore[no-redef]
        import streamflow.types as types  # type: ignore[no-redef]
        from streamflow import pipeline_def  # type: ignore[no-redef]
        from streamflow.pipeline import Pipeline  # type: ignore[no-redef]
    # external_source is fed torch tensors as in the tutorial; DALI 2.4 asks a CPU-only torch for
    # its CUDA stream when fed a torch tensor (an error), so the recording feeds numpy labels.
    label = ((lambda v: np.array([v], dtype=np.uint8)) if kind == "dali"
             else (lambda v: torch.tensor([v], dtype=torch.uint8)))
    return SimpleNamespace(fn=fn, ops=ops, plugin=plugin, tfrec=tfrec, types=types,
                           pipeline_def=pipeline_def, Pipeline=Pipeline, torch=torch, label=label, ndd=ndd)


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


# --- pytorch-basic_example, pytorch-various-readers ---------------------------------------
def various_readers(lib: SimpleNamespace, data: dict[str, Any], randoms: bool = False) -> Out:
    """Five readers (caffe, caffe2, mxnet, file, tfrecord) named "Reader", sharded over two
    pipelines, feeding decode -> resize_shorter -> crop_mirror_normalize, iterated by
    ``DALIGenericIterator(pipes, ["data", "label"], reader_name="Reader")``."""
    fn, types, tfrec = lib.fn, lib.types, lib.tfrec
    common_args = dict(name="Reader", random_shuffle=randoms)

    def augment(jpegs: Any, labels: Any) -> tuple[Any, Any]:
        images = fn.decoders.image(jpegs, device="cpu")
        shorter = fn.random.uniform(range=(20, 30)) if randoms else 24.0
        images = fn.resize(images, resize_shorter=shorter, interp_type=types.INTERP_LINEAR)
        pos = (fn.random.uniform(range=(0.0, 1.0)), fn.random.uniform(range=(0.0, 1.0))) if randoms else (0.25, 0.75)
        images = fn.crop_mirror_normalize(images, crop_pos_x=pos[0], crop_pos_y=pos[1], dtype=types.FLOAT,
                                          crop=(16, 16), mean=[128.0, 128.0, 128.0], std=[1.0, 1.0, 1.0])
        return images, labels

    readers: dict[str, Callable[[int, int], tuple[Any, Any]]] = {
        "caffe": lambda s, n: fn.readers.caffe(path=data["caffe"], shard_id=s, num_shards=n, **common_args),
        "caffe2": lambda s, n: fn.readers.caffe2(path=data["caffe2"], shard_id=s, num_shards=n, **common_args),
        "mxnet": lambda s, n: fn.readers.mxnet(path=[data["rec"]], index_path=[data["rec_idx"]], shard_id=s,
                                               num_shards=n, **common_args),
        "file": lambda s, n: fn.readers.file(file_root=data["images"], shard_id=s, num_shards=n, **common_args),
        "tfrecord": lambda s, n: (lambda f: (f["image/encoded"], f["image/class/label"]))(fn.readers.tfrecord(
            path=data["tfrecord"], index_path=data["tfrecord_idx"], shard_id=s, num_shards=n,
            features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                      "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)},
            **common_args)),
    }
    out: Out = {}
    for name, reader in readers.items():
        @lib.pipeline_def
        def pipe(num_gpus: int, shard: int) -> tuple[Any, Any]:
            return augment(*reader(shard, num_gpus))

        pipes = [pipe(batch_size=BATCH, num_threads=2, device_id=None, seed=3, num_gpus=2, shard=s) for s in range(2)]
        for p in pipes:
            p.build()
        it = lib.plugin.DALIGenericIterator(pipes, ["data", "label"], reader_name="Reader")
        out[f"{name}/len"] = np.array(len(it))
        for i, step in enumerate(it):
            for k, d in enumerate(step):
                label = d["label"]
                with warnings.catch_warnings():  # numpy 2 on torch's old-style __array_wrap__
                    warnings.simplefilter("ignore", DeprecationWarning)
                    assert np.equal(np.mod(label, 1), 0).all()
                assert (label >= 0).all() and (label <= 2).all()
                out[f"{name}/{i}/{k}/label"] = _arr(label)
                out[f"{name}/{i}/{k}/data"] = _arr(d["data"])
    return out


def size_of_several_pipelines(lib: SimpleNamespace, data: dict[str, Any]) -> Out:
    """The older form of the basic example: ``DALIGenericIterator(pipes, ["data", "label"],
    pipes[0].epoch_size("Reader"))``, ``size`` given positionally for two sharded pipelines (it
    counts the samples of both), with each last-batch policy; the label rows of every step."""
    fn = lib.fn

    @lib.pipeline_def
    def pipe(shard: int) -> Any:
        _, labels = fn.readers.caffe(path=data["caffe"], shard_id=shard, num_shards=2, name="Reader")
        return labels

    out: Out = {}
    policy = lib.plugin.LastBatchPolicy
    for name, pol in (("fill", policy.FILL), ("partial", policy.PARTIAL), ("drop", policy.DROP)):
        pipes = [pipe(batch_size=BATCH, num_threads=1, device_id=None, shard=s) for s in range(2)]
        for p in pipes:
            p.build()
        it = lib.plugin.DALIGenericIterator(pipes, ["label"], pipes[0].epoch_size("Reader"), last_batch_policy=pol)
        out[f"{name}/len"] = np.array(len(it))
        for i, step in enumerate(it):
            out[f"{name}/{i}/rows"] = np.array([len(d["label"]) for d in step])
            out[f"{name}/{i}/first"] = np.array([int(d["label"][0]) for d in step])
    return out


# --- pytorch-external_input ---------------------------------------------------------------
class ListedJpegs:
    """Batches of (JPEG bytes, label tensors) read from a file list; restarts itself at the end
    of its shard (raising StopIteration once), reshuffling with its own seeded generator."""

    def __init__(self, label: Callable[[int], Any], root: str, batch_size: int, shard: int, shards: int) -> None:
        self.label, self.root, self.batch_size = label, Path(root), batch_size
        lines = [ln for ln in (self.root / "file_list.txt").read_text().splitlines() if ln]
        self.entries = lines[len(lines) * shard // shards:len(lines) * (shard + 1) // shards]
        self.rng = random.Random(11)
        self.pos = 0

    def __iter__(self) -> ListedJpegs:
        self.pos = 0
        self.rng.shuffle(self.entries)
        return self

    def __next__(self) -> tuple[list[Any], list[Any]]:
        if self.pos >= len(self.entries):
            self.__iter__()
            raise StopIteration
        jpegs, labels = [], []
        for _ in range(self.batch_size):  # the last batch wraps around to the start
            name, label = self.entries[self.pos % len(self.entries)].split(" ")
            jpegs.append(np.fromfile(self.root / name, dtype=np.uint8))
            labels.append(self.label(int(label)))
            self.pos += 1
        return jpegs, labels

    def __len__(self) -> int:
        return len(self.entries)


def external_input(lib: SimpleNamespace, data: dict[str, Any]) -> Out:
    """``Pipeline`` + ``with pipe:``, ``external_source(source=iterator, num_outputs=2, dtype=UINT8)``
    fed numpy arrays and torch tensors, iterated 3 epochs by ``DALIClassificationIterator(pipe,
    last_batch_padded=True, last_batch_policy=PARTIAL)`` with ``reset()`` after each."""
    fn, types = lib.fn, lib.types
    source = ListedJpegs(lib.label, data["images"], BATCH, 0, 1)
    pipe = lib.Pipeline(batch_size=BATCH, num_threads=2, device_id=None)
    with pipe:
        jpegs, labels = fn.external_source(source=source, num_outputs=2, dtype=types.UINT8)
        images = fn.decoders.image(jpegs, device="cpu")
        images = fn.resize(images, resize_x=40, resize_y=30)
        pipe.set_outputs(fn.cast(images, dtype=types.UINT8), labels)
    it = lib.plugin.DALIClassificationIterator(pipe, last_batch_padded=True,
                                               last_batch_policy=lib.plugin.LastBatchPolicy.PARTIAL)
    out: Out = {}
    for epoch in range(3):
        for i, step in enumerate(it):
            out[f"e{epoch}/{i}/data"] = _arr(step[0]["data"])
            out[f"e{epoch}/{i}/label"] = _arr(step[0]["label"])
        it.reset()
    return out


# --- pytorch-lightning, MNIST-example ------------------------------------------------------
def _mnist_pipe(lib: SimpleNamespace, data: dict[str, Any]) -> Callable[..., Any]:
    fn, types = lib.fn, lib.types

    @lib.pipeline_def
    def mnist(device: str, shard_id: int = 0, num_shards: int = 1) -> tuple[Any, Any]:
        jpegs, labels = fn.readers.caffe2(path=data["caffe2"], shard_id=shard_id, num_shards=num_shards,
                                          random_shuffle=False, name="Reader")
        images = fn.decoders.image(jpegs, device="mixed" if device == "gpu" else "cpu", output_type=types.GRAY)
        images = fn.resize(images, resize_x=28, resize_y=28)  # MNIST's size: the batches are dense
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[0.3081 * 255], mean=[0.1307 * 255],
                                          output_layout="CHW")
        if device == "gpu":
            labels = labels.gpu()
        return images, fn.cast(labels, dtype=types.INT64)

    return mnist


def lightning(lib: SimpleNamespace, data: dict[str, Any]) -> Out:
    """What a LightningModule does with the iterator: ``DALIClassificationIterator(pipe,
    reader_name="Reader", last_batch_policy=PARTIAL)``, ``iter()`` once per epoch without
    ``reset()`` (auto_reset off), ``batch[0]["label"].squeeze(-1)``; and a subclass whose
    ``__next__`` returns ``[out[k] ... for k in self.output_map]`` with squeezed labels."""
    torch, plugin = lib.torch, lib.plugin
    mnist = _mnist_pipe(lib, data)
    out: Out = {}
    it = plugin.DALIClassificationIterator(mnist(batch_size=BATCH, device="cpu", device_id=None, num_threads=2),
                                           reader_name="Reader", last_batch_policy=plugin.LastBatchPolicy.PARTIAL)
    out["plain/len"] = np.array(len(it))
    for epoch in range(2):
        for i, batch in enumerate(iter(it)):
            x, y = batch[0]["data"], batch[0]["label"].squeeze(-1)
            out[f"plain/e{epoch}/{i}/x"], out[f"plain/e{epoch}/{i}/y"] = _arr(x), _arr(y)

    class LightningWrapper(plugin.DALIClassificationIterator):  # type: ignore[misc, name-defined]
        def __next__(self) -> list[Any]:
            got = super().__next__()[0]
            return [got[k] if k != "label" else torch.squeeze(got[k]) for k in self.output_map]

    wrapped = LightningWrapper(mnist(batch_size=BATCH, device="cpu", device_id=None, num_threads=2,
                                     shard_id=1, num_shards=2),
                               reader_name="Reader", last_batch_policy=plugin.LastBatchPolicy.PARTIAL)
    for epoch in range(2):
        for i, (x, y) in enumerate(wrapped):
            out[f"wrapped/e{epoch}/{i}/x"], out[f"wrapped/e{epoch}/{i}/y"] = _arr(x), _arr(y)
        wrapped.reset()
    return out


def mnist_example(lib: SimpleNamespace, data: dict[str, Any]) -> Out:
    """A ``Pipeline`` subclass with the legacy ``ops`` API (``ops.Caffe2Reader``,
    ``ops.ImageDecoder``, ``ops.CropMirrorNormalize(output_layout=types.NCHW)``), its own
    ``__len__``, and ``DALIGenericIterator(pipelines=..., output_map=[...], size=len(pipe),
    auto_reset=True, last_batch_policy=PARTIAL)`` wrapped in a generator of dicts."""
    ops, types, plugin = lib.ops, lib.types, lib.plugin

    class MNISTPipeline(lib.Pipeline):  # type: ignore[misc, name-defined]
        def __init__(self, batch_size: int, num_threads: int, device_id: Any) -> None:
            super().__init__(batch_size=batch_size, num_threads=num_threads, device_id=device_id)
            self.input = ops.Caffe2Reader(path=data["caffe2"], random_shuffle=False, name="Reader")
            self.decode = ops.ImageDecoder(device="cpu", output_type=types.GRAY)
            self.resize = ops.Resize(resize_x=28, resize_y=28)
            self.cmn = ops.CropMirrorNormalize(dtype=types.FLOAT, std=[0.3081 * 255], mean=[0.1307 * 255],
                                               output_layout=types.NCHW)

        def define_graph(self) -> tuple[Any, Any]:
            jpegs, labels = self.input()
            return self.cmn(self.resize(self.decode(jpegs))), labels

        def __len__(self) -> int:
            return 8

    pipeline = MNISTPipeline(batch_size=BATCH, num_threads=2, device_id=None)
    pipeline.build()
    loader = plugin.DALIGenericIterator(pipelines=pipeline, output_map=["features", "targets"],
                                        size=len(pipeline), auto_reset=True,
                                        last_batch_policy=plugin.LastBatchPolicy.PARTIAL)
    out: Out = {"len": np.array(len(loader))}
    for epoch in range(2):
        batches = ({"features": b[0]["features"], "targets": b[0]["targets"].squeeze().long()} for b in loader)
        for i, b in enumerate(batches):
            out[f"e{epoch}/{i}/features"], out[f"e{epoch}/{i}/targets"] = _arr(b["features"]), _arr(b["targets"])
    return out


# --- pytorch_dynamic/pytorch_training --------------------------------------------------------
def dynamic_training(lib: SimpleNamespace, data: dict[str, Any]) -> Out:
    """Dynamic mode with torchdata: ``ndd.pytorch.nodes.Reader(ndd.readers.Caffe2, batch_size=,
    path=, random_shuffle=)``, ``DictMapper(source=, map_fn=)`` decoding GRAY images and
    normalising them (``crop_mirror_normalize(output_layout="CHW")``), ``ToTorch``,
    ``tn.Prefetcher`` and ``tn.Loader``; a small model trained two epochs with
    ``labels.squeeze(-1).long()``; the batches of each epoch."""
    import torchdata.nodes as tn

    ndd, types, torch = lib.ndd, lib.types, lib.torch

    def process_images(jpegs: Any) -> Any:
        images = ndd.decoders.image(jpegs, device="cpu", output_type=types.GRAY)
        images = ndd.resize(images, resize_x=28, resize_y=28)
        return ndd.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                         mean=[0.1307 * 255], std=[0.3081 * 255])

    reader = ndd.pytorch.nodes.Reader(ndd.readers.Caffe2, batch_size=BATCH, path=data["caffe2"],
                                      random_shuffle=False)
    mapper = ndd.pytorch.nodes.DictMapper(source=reader, map_fn=process_images)
    loader = tn.Loader(tn.Prefetcher(ndd.pytorch.nodes.ToTorch(mapper), prefetch_factor=2))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(28 * 28, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    out: Out = {}
    for epoch in range(2):
        for i, (images, labels) in enumerate(loader):
            labels = labels.squeeze(-1).long()
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            out[f"e{epoch}/{i}/images"], out[f"e{epoch}/{i}/labels"] = _arr(images), _arr(labels)
    return out


CASES: dict[str, Callable[[SimpleNamespace, dict[str, Any]], Out]] = {
    "various_readers": various_readers,
    "size_of_several_pipelines": size_of_several_pipelines,
    "external_input": external_input,
    "lightning": lightning,
    "mnist_example": mnist_example,
    "dynamic_training": dynamic_training,
}
