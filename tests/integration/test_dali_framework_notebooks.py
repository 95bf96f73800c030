"""The features of DALI's framework-integration and advanced tutorials, run on streamflow.

Followed notebooks (DALI ``docs/examples/...``): ``frameworks/pytorch/pytorch-basic_example``,
``pytorch-various-readers``, ``pytorch-external_input``, ``pytorch-lightning`` (the iterator
calls a LightningModule makes), ``MNIST-example``, ``advanced/pipeline_checkpointing`` and
``advanced/serialization``. ``dali_reference/framework_cases.py`` holds this project's own
pipelines and loops using those features, written once for both libraries;
``record_frameworks.py`` ran them on DALI 2.4's CPU operators with
``nvidia.dali.plugin.pytorch`` into ``tests/data/dali/frameworks/frameworks.npz``. The
tests run the same cases with ``streamflow.plugin.pytorch`` and compare the batches
(count, shapes, dtypes, values), except where docs/dali-differences.md says why not.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamflow as sf

torch = pytest.importorskip("torch")
from dali_reference import framework_cases as C

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "dali" / "frameworks" / "frameworks.npz"
RESIZED = 1.0  # a resized uint8 image may differ by one level (docs/dali-differences.md)
NORMALIZED = 1.0 / (0.3081 * 255) + 1e-5  # the same after MNIST's normalisation


@cache
def reference() -> dict[str, np.ndarray]:
    with np.load(REFERENCE) as ref:
        return {k: ref[k] for k in ref.files}


def dali(case: str) -> dict[str, np.ndarray]:
    prefix = case + "/"
    return {k[len(prefix):]: v for k, v in reference().items() if k.startswith(prefix)}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("lmdb")
    pytest.importorskip("webdataset")
    return C.build_data(tmp_path_factory.mktemp("frameworks"))


@pytest.fixture(scope="module")
def lib() -> Any:
    return C.libraries("streamflow")


def close(got: np.ndarray, want: np.ndarray, tol: float, key: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (key, got.shape, got.dtype, want.shape, want.dtype)
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max(initial=0)
    assert diff <= tol, f"{key}: differs from DALI by {diff}"


# --- pytorch-basic_example, pytorch-various-readers --------------------------------------
def test_various_readers_through_generic_iterator_match_dali(lib, data):
    """Five readers with ``name="Reader"``, two shards, ``DALIGenericIterator(pipes, ["data", "label"],
    reader_name="Reader")``, labels checked with ``np.mod`` on the torch tensors: the same number
    of steps (``len``), label dtypes and values, and images within 1 of DALI's. The padding rows
    of the last (FILL) batch differ: DALI fills them with the samples its reader reads next,
    streamflow repeats the shard's last sample."""
    got, want = C.various_readers(lib, data), dali("various_readers")
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        g = got[key]
        if key.endswith("/len"):
            assert g == w, key
            continue
        step = int(key.split("/")[1])
        real = BATCH_REAL[step]
        close(g[:real], w[:real], RESIZED if key.endswith("data") else 0, key)
        assert g.shape == w.shape and g.dtype == w.dtype, key
        assert (g[real:] == g[real - 1:real]).all(), f"{key}: FILL repeats the last sample"


BATCH_REAL = {0: 3, 1: 1}  # 4 samples per shard, batches of 3


def test_size_counts_the_samples_of_all_pipelines_as_in_dali(lib, data):
    """The older basic example's ``DALIGenericIterator(pipes, [...], pipes[0].epoch_size("Reader"))``:
    ``size`` counts both pipelines' samples, so the same ``len``, steps and rows per pipeline as
    DALI for FILL, PARTIAL (whose last step leaves the second pipeline out) and DROP."""
    got, want = C.size_of_several_pipelines(lib, data), dali("size_of_several_pipelines")
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        np.testing.assert_array_equal(got[key], w, err_msg=key)


def test_various_readers_random_version_runs(lib, data):
    """As the tutorials write them: shuffled readers, random ``resize_shorter`` and crop positions."""
    got = C.various_readers(lib, data, randoms=True)
    for name in ("caffe", "caffe2", "mxnet", "file", "tfrecord"):
        labels = np.concatenate([got[f"{name}/{i}/{k}/label"].ravel()[:BATCH_REAL[i]] for i in (0, 1) for k in (0, 1)])
        assert sorted(labels.tolist()) == sorted(i % 3 for i in range(8)), name
        assert got[f"{name}/0/0/data"].shape == (3, 3, 16, 16)


def test_pipeline_current_device_id_inside_definition(lib, data):
    """The tutorials shard with ``shard_id=Pipeline.current().device_id`` inside the definition."""
    fn, Pipeline = lib.fn, lib.Pipeline

    @lib.pipeline_def
    def pipe() -> Any:
        jpegs, labels = fn.readers.file(file_root=data["images"], shard_id=Pipeline.current().device_id or 0,
                                        num_shards=1, name="Reader")
        return labels

    it = lib.plugin.DALIGenericIterator([pipe(batch_size=4, device_id=None)], ["label"], reader_name="Reader")
    assert [len(s[0]["label"]) for s in it] == [4, 4]


# --- pytorch-external_input ----------------------------------------------------------------
def test_external_input_iterator_matches_dali(lib, data):
    """An iterator object as ``external_source`` (numpy JPEGs and torch label tensors),
    ``DALIClassificationIterator(pipe, last_batch_padded=True, last_batch_policy=PARTIAL)``,
    ``reset()`` after each of 3 epochs: the same steps, labels and images (within 1) as DALI."""
    got, want = C.external_input(lib, data), dali("external_input")
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        close(got[key], w, RESIZED if key.endswith("data") else 0, key)


# --- pytorch-lightning, MNIST-example --------------------------------------------------------
def _compare_epochs(got: dict[str, np.ndarray], want: dict[str, np.ndarray], prefix: str, x: str, y: str,
                    same_samples: bool = True) -> None:
    """Epoch 0 equal to DALI's; epoch 1 with the same steps and shapes. DALI's reader reads ahead
    to fill the last batch and its next epoch starts after what it read, so DALI's epoch 1 starts
    one sample later (``same_samples``: the same samples, in another order); with two shards it
    also rotates into the other shard part-way. streamflow's epoch 1 is exactly the next shard."""
    keys = sorted(k for k in want if k.startswith(prefix) and not k.endswith("len"))
    assert sorted(k for k in got if k.startswith(prefix) and not k.endswith("len")) == keys
    for key in keys:
        if "e0/" in key:
            close(got[key], want[key], NORMALIZED if key.endswith(x) else 0, key)
        else:
            assert got[key].shape == want[key].shape and got[key].dtype == want[key].dtype, key
    labels = [k for k in keys if "e1/" in k and k.endswith(y)]
    assert labels
    if same_samples:
        assert sorted(np.concatenate([got[k].ravel() for k in labels]).tolist()) == \
            sorted(np.concatenate([want[k].ravel() for k in labels]).tolist())


def test_lightning_iterator_use_matches_dali(lib, data):
    """``DALIClassificationIterator(pipe, reader_name="Reader", last_batch_policy=PARTIAL)`` iterated
    once per epoch with ``iter()`` and no ``reset()`` (as Lightning does: DALI restarts a consumed
    iterator there), ``["label"].squeeze(-1)``; a subclass overriding ``__next__`` with
    ``self.output_map`` and ``torch.squeeze``, one shard of two, reset between epochs."""
    got, want = C.lightning(lib, data), dali("lightning")
    assert got["plain/len"] == want["plain/len"]
    _compare_epochs(got, want, "plain/", "/x", "/y")
    _compare_epochs(got, want, "wrapped/", "/x", "/y", same_samples=False)
    shard0 = sorted(i % 3 for i in range(4))  # streamflow: epoch 1 is shard 0 (the shards rotate)
    assert sorted(np.concatenate([got["wrapped/e1/0/y"].ravel(), got["wrapped/e1/1/y"].ravel()]).tolist()) == shard0


def test_mnist_example_legacy_pipeline_matches_dali(lib, data):
    """A ``Pipeline`` subclass with ``ops.Caffe2Reader``, ``ops.ImageDecoder``,
    ``ops.CropMirrorNormalize(output_layout=types.NCHW)`` and its own ``__len__``;
    ``DALIGenericIterator(pipelines=, output_map=, size=len(pipe), auto_reset=True, PARTIAL)``
    wrapped in a generator of dicts with ``.squeeze().long()`` targets, two epochs."""
    got, want = C.mnist_example(lib, data), dali("mnist_example")
    assert got["len"] == want["len"]
    _compare_epochs(got, want, "e", "/features", "/targets")


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning", "ignore::UserWarning")
def test_lightning_trainer_fits_on_the_iterator(lib, data):
    """The tutorial's last step, when pytorch-lightning is installed: ``Trainer.fit`` on a
    LightningModule whose ``train_dataloader`` returns the wrapped iterator."""
    pl = pytest.importorskip("pytorch_lightning")
    plugin = lib.plugin
    mnist = C._mnist_pipe(lib, data)
    seen: list[int] = []

    class Wrapper(plugin.DALIClassificationIterator):
        def __next__(self) -> list[Any]:
            out = super().__next__()[0]
            return [out[k] if k != "label" else torch.squeeze(out[k], -1) for k in self.output_map]

    class Model(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(28 * 28, 3)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            seen.append(len(y))
            return torch.nn.functional.cross_entropy(self.layer(x.view(x.shape[0], -1)), y)

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self) -> Any:
            return Wrapper(mnist(batch_size=BATCH, device="cpu", device_id=None, num_threads=2),
                           reader_name="Reader", last_batch_policy=plugin.LastBatchPolicy.PARTIAL)

    trainer = pl.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    trainer.fit(Model())
    assert seen == [3, 3, 2, 3, 3, 2]


def test_dynamic_mode_torchdata_training_matches_dali(lib, data):
    """pytorch_dynamic/pytorch_training: ``ndd.pytorch.nodes.Reader(ndd.readers.Caffe2, ...)``,
    ``DictMapper``, ``ToTorch``, ``tn.Prefetcher``, ``tn.Loader``, two training epochs. Full
    batches equal DALI's (images within 1 level after normalisation); DALI's dynamic readers fill
    an epoch's last batch with the next epoch's first samples (docs/dali-differences.md), here it
    is short, so it equals the first rows of DALI's, and every epoch starts at the first sample."""
    pytest.importorskip("torchdata")
    got, want = C.dynamic_training(lib, data), dali("dynamic_training")
    for i in (0, 1):
        for name in ("images", "labels"):
            key = f"e0/{i}/{name}"
            close(got[key], want[key], NORMALIZED if name == "images" else 0, key)
    for name in ("images", "labels"):
        short, full = got[f"e0/2/{name}"], want[f"e0/2/{name}"]
        assert len(short) == 2
        close(short, full[:2], NORMALIZED if name == "images" else 0, f"e0/2/{name}")
    for key in [k for k in got if k.startswith("e1/")]:
        np.testing.assert_array_equal(got[key], got["e0/" + key[3:]])


BATCH = C.BATCH


# --- advanced/pipeline_checkpointing ----------------------------------------------------------
def _rotate_pipe(lib: Any, data: dict[str, Any]) -> Any:
    fn, types = lib.fn, lib.types

    @lib.pipeline_def(batch_size=3, num_threads=2, device_id=None, enable_checkpointing=True, seed=12)
    def rotate_pipeline() -> Any:
        jpegs, labels = fn.readers.file(file_root=data["images"], random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        angles = fn.random.uniform(range=(-30.0, 30.0))
        return fn.rotate(images, angle=angles, fill_value=0), labels, angles

    return rotate_pipeline


def _arrays(outputs: Any) -> list[list[np.ndarray]]:
    return [[np.asarray(t) for t in tl] for tl in outputs]


def test_checkpoint_to_file_and_restore(lib, data, tmp_path):
    """``enable_checkpointing=True``, a few ``run()``s, ``pipe.checkpoint(filename)`` (also returned),
    one more batch; a new pipeline built with ``checkpoint=`` (the file's bytes, or the returned
    value) gives that same batch: rotated images, labels and angles."""
    rotate_pipeline = _rotate_pipe(lib, data)
    pipe = rotate_pipeline()
    pipe.build()
    for _ in range(3):
        pipe.run()
    path = tmp_path / "pipeline_checkpoint.cpt"
    saved = pipe.checkpoint(str(path))
    expected = _arrays(pipe.run())
    for checkpoint in (path.read_bytes(), saved):
        restored = rotate_pipeline(checkpoint=checkpoint)
        restored.build()
        got = _arrays(restored.run())
        for g, e in zip(got, expected):
            for a, b in zip(g, e):
                np.testing.assert_array_equal(a, b)
    assert json.loads(path.read_bytes())  # readable, small


def test_checkpoint_resumes_external_source_callables(lib):
    """DALI's checkpointing page: an ``external_source`` whose source is a callable taking
    ``BatchInfo`` (or ``SampleInfo``) goes on from the checkpoint's iteration."""
    fn = lib.fn

    def batches(info: Any) -> list[np.ndarray]:
        if info.iteration >= 4:
            raise StopIteration
        return [np.array([info.iteration * 10 + i]) for i in range(2)]

    def samples(info: Any) -> np.ndarray:
        return np.array([info.idx_in_epoch])

    for source, kwargs in ((batches, {"batch_info": True}), (samples, {"batch": False})):
        @lib.pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_checkpointing=True, seed=1)
        def pipe() -> Any:
            return fn.external_source(source=source, **kwargs)

        first = pipe()
        first.run(), first.run()
        saved = first.checkpoint()
        expected = np.asarray(first.run()[0].as_tensor())
        resumed = pipe(checkpoint=saved)
        np.testing.assert_array_equal(np.asarray(resumed.run()[0].as_tensor()), expected)
        assert expected.ravel().tolist() in ([20, 21], [4, 5])
        first.close(), resumed.close()


def test_iterator_checkpoints_resume(lib, data):
    """``DALIGenericIterator`` over checkpointing pipelines: ``checkpoints()`` after some steps, new
    pipelines built with ``checkpoint=`` and a new iterator continue with the same batches."""
    rotate_pipeline = _rotate_pipe(lib, data)
    it = lib.plugin.DALIGenericIterator([rotate_pipeline()], ["images", "labels", "angles"], reader_name="Reader")
    next(it)
    cpts = it.checkpoints()
    rest = [[d["labels"].numpy(), d["angles"].numpy()] for d in (s[0] for s in it)]
    resumed = lib.plugin.DALIGenericIterator([rotate_pipeline(checkpoint=c) for c in cpts],
                                            ["images", "labels", "angles"], reader_name="Reader")
    again = [[d["labels"].numpy(), d["angles"].numpy()] for d in (s[0] for s in resumed)]
    assert len(again) == len(rest) == 2
    for (la, aa), (lb, ab) in zip(again, rest):
        np.testing.assert_array_equal(la, lb)
        np.testing.assert_array_equal(aa, ab)


# --- advanced/serialization --------------------------------------------------------------------

@sf.pipeline_def
def example_pipe(rec: str, idx: str) -> Any:
    """Module level, as serialize() needs: the tutorial's RecordIO -> decode -> random resize -> crop."""
    fn, types = sf.fn, sf.types
    encoded, labels = fn.readers.mxnet(path=[rec], index_path=[idx])
    images = fn.decoders.image(encoded, device="cpu", output_type=types.RGB)
    images = fn.resize(images, interp_type=types.INTERP_LINEAR, resize_shorter=fn.random.uniform(range=(40.0, 60.0)))
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, crop=(32, 32), mean=[0.0, 0.0, 0.0],
                                      std=[1.0, 1.0, 1.0])
    return images, labels


def test_serialize_and_deserialize_give_the_same_batches(lib, data, tmp_path):
    """``pipe.serialize()``, ``Pipeline(batch_size=, num_threads=, device_id=, seed=)`` then
    ``deserialize_and_build(s)``, ``run()`` both and compare per sample with ``.at(i)`` and
    ``as_cpu()``: no difference. streamflow serializes the pipeline_def function's name and
    arguments (not DALI's protobuf graph), so ``Pipeline.deserialize`` works in any process that
    can import it; a ``with pipe:`` pipeline is refused with the reason."""
    pipe = example_pipe(data["rec"], data["rec_idx"], batch_size=4, num_threads=2, device_id=None, seed=12)
    s = pipe.serialize(filename=tmp_path / "pipe.sf")
    pipe2 = lib.Pipeline(batch_size=4, num_threads=2, device_id=None, seed=12)
    pipe2.deserialize_and_build(s)
    pipe.build()
    original, _ = pipe.run()
    copied, _ = pipe2.run()
    assert [float(np.sum(np.abs(original.as_cpu().at(i) - copied.as_cpu().at(i)))) for i in range(4)] == [0.0] * 4
    pipe3 = lib.Pipeline.deserialize(filename=tmp_path / "pipe.sf")
    assert pipe3.batch_size == 4 and pipe3.seed == 12
    np.testing.assert_array_equal(pipe3.run()[0].as_tensor(), original.as_tensor())
    for p in (pipe, pipe2, pipe3):
        p.close()
    from streamflow.errors import PipelineDefinitionError

    graph = lib.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with graph:
        graph.set_outputs(lib.fn.random.uniform(range=(0, 1)))
    with pytest.raises(PipelineDefinitionError, match="module level"):
        graph.serialize()
    with pytest.raises(PipelineDefinitionError, match="not a serialized streamflow pipeline"):
        lib.Pipeline(batch_size=2).deserialize_and_build(b"\x08\x01protobuf")
