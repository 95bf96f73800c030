"""DALI's own example pipelines, ported by changing only the imports, and DALI's run() semantics.

The pipelines below are DALI's (the PyTorch ResNet-50 example's
``create_dali_pipeline``, the getting-started walk, the legacy
``Pipeline`` + ``with pipe:`` style) with ``nvidia.dali`` imports replaced by
``streamflow`` ones and, on a machine without a GPU, ``device_id="auto"``.
When DALI 2.4 is installed (``pip install nvidia-dali-cuda130`` runs CPU
pipelines), the reader's batch sequence is compared with DALI's own; the
expected sequences written below are the ones DALI 2.4 gave on these files.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import GOOD_JPEGS

# --- the imports a DALI user changes -------------------------------------------------------
import streamflow.fn as fn
import streamflow.types as types
from streamflow import pipeline_def
from streamflow.backend import gpu_count
from streamflow.pipeline import Pipeline

DEVICE_ID = 0 if gpu_count() else "auto"


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two classes of real JPEGs: 6 files, sorted names."""
    root = tmp_path_factory.mktemp("dali-images")
    for k, f in enumerate(GOOD_JPEGS):
        cls = root / f"class{k % 2}"
        cls.mkdir(exist_ok=True)
        shutil.copy(f, cls / f"{k:02d}_{f.name}")
    return root


# --- DALI's PyTorch ResNet-50 example (examples/use_cases/pytorch/resnet50/main.py) ----------
@pipeline_def
def create_dali_pipeline(data_dir, crop, size, shard_id, num_shards, dali_cpu=False, is_training=True):  # type: ignore[no-untyped-def]
    images, labels = fn.readers.file(file_root=data_dir,
                                     shard_id=shard_id,
                                     num_shards=num_shards,
                                     random_shuffle=is_training,
                                     pad_last_batch=True,
                                     name="Reader")
    dali_device = 'cpu' if dali_cpu else 'gpu'
    decoder_device = 'cpu' if dali_cpu else 'mixed'
    # ask nvJPEG to preallocate memory for the biggest sample in ImageNet for CPU and GPU to avoid reallocations in runtime
    device_memory_padding = 211025920 if decoder_device == 'mixed' else 0
    host_memory_padding = 140544512 if decoder_device == 'mixed' else 0
    # ask HW NVJPEG to allocate memory ahead for the biggest image in the data set to avoid reallocations in runtime
    preallocate_width_hint = 5980 if decoder_device == 'mixed' else 0
    preallocate_height_hint = 6430 if decoder_device == 'mixed' else 0
    if is_training:
        images = fn.decoders.image_random_crop(images,
                                               device=decoder_device, output_type=types.RGB,
                                               device_memory_padding=device_memory_padding,
                                               host_memory_padding=host_memory_padding,
                                               preallocate_width_hint=preallocate_width_hint,
                                               preallocate_height_hint=preallocate_height_hint,
                                               random_aspect_ratio=[0.8, 1.25],
                                               random_area=[0.1, 1.0],
                                               num_attempts=100)
        images = fn.resize(images,
                           device=dali_device,
                           resize_x=crop,
                           resize_y=crop,
                           interp_type=types.INTERP_TRIANGULAR)
        mirror = fn.random.coin_flip(probability=0.5)
    else:
        images = fn.decoders.image(images,
                                   device=decoder_device,
                                   output_type=types.RGB)
        images = fn.resize(images,
                           device=dali_device,
                           size=size,
                           mode="not_smaller",
                           interp_type=types.INTERP_TRIANGULAR)
        mirror = False

    images = fn.crop_mirror_normalize(images.gpu(),
                                      dtype=types.FLOAT,
                                      output_layout="CHW",
                                      crop=(crop, crop),
                                      mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                      std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
                                      mirror=mirror)
    labels = labels.gpu()
    return images, labels


@pytest.mark.parametrize("is_training", [True, False])
def test_resnet50_example_pipelines(image_dir: Path, is_training: bool) -> None:
    torch = pytest.importorskip("torch")
    from streamflow.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy

    with pytest.warns() if DEVICE_ID == "auto" else _nothing():
        pipe = create_dali_pipeline(batch_size=4, num_threads=2, device_id=DEVICE_ID, seed=12 + 0,
                                    data_dir=str(image_dir), crop=64, size=72, dali_cpu=False,
                                    shard_id=0, num_shards=1, is_training=is_training)
        pipe.build()
    loader = DALIClassificationIterator(pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL,
                                        auto_reset=True)
    for _epoch in range(2):
        seen = 0
        for data in loader:
            images, target = data[0]["data"], data[0]["label"].squeeze(-1).long()
            assert isinstance(images, torch.Tensor) and images.shape[1:] == (3, 64, 64)
            assert images.dtype == torch.float32 and target.shape == (images.shape[0],)
            seen += images.shape[0]
        assert seen == 6
    loader.reset()


# --- DALI's getting-started walk --------------------------------------------------------------
def test_getting_started_pipelines(image_dir: Path) -> None:
    image_dir_s = str(image_dir)
    max_batch_size = 8

    @pipeline_def
    def simple_pipeline():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=image_dir_s)
        images = fn.decoders.image(jpegs, device='cpu')
        return images, labels

    pipe = simple_pipeline(batch_size=max_batch_size, num_threads=1, device_id=0)
    pipe.build()
    pipe_out = pipe.run()
    images, labels = pipe_out
    assert not images.is_dense_tensor() and labels.is_dense_tensor()
    assert labels.as_tensor().shape == (8, 1)
    assert [int(v) for v in labels.as_tensor().ravel()] == [0, 0, 0, 1, 1, 1, 0, 0]  # wraps into the next epoch

    @pipeline_def
    def shuffled_pipeline():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=image_dir_s, random_shuffle=True, initial_fill=21)
        images = fn.decoders.image(jpegs, device='cpu')
        return images, labels

    pipe = shuffled_pipeline(batch_size=max_batch_size, num_threads=1, device_id=0, seed=1234)
    pipe.build()
    assert len(pipe.run()[0]) == 8

    @pipeline_def
    def random_rotated_pipeline():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=image_dir_s, random_shuffle=True, initial_fill=21)
        images = fn.decoders.image(jpegs, device='cpu')
        angle = fn.random.uniform(range=(-10.0, 10.0))
        rotated_images = fn.rotate(images, angle=angle, fill_value=0)
        return rotated_images, labels

    pipe = random_rotated_pipeline(batch_size=max_batch_size, num_threads=1, device_id=0, seed=1234)
    pipe.build()
    assert len(pipe.run()[0]) == 8

    @pipeline_def
    def mixed_pipeline():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=image_dir_s, random_shuffle=True, initial_fill=21)
        images = fn.decoders.image(jpegs, device='mixed')
        return images, labels

    with pytest.warns() if DEVICE_ID == "auto" else _nothing():
        pipe = mixed_pipeline(batch_size=max_batch_size, num_threads=1, device_id=DEVICE_ID, seed=1234)
        pipe.build()
    images, labels = pipe.run()
    assert len(images) == 8


# --- the legacy style: Pipeline + with pipe: + set_outputs ------------------------------------
def test_legacy_pipeline_definition(image_dir: Path) -> None:
    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None)
    with pipe:
        assert Pipeline.current() is pipe
        jpegs, labels = fn.readers.file(file_root=str(image_dir))
        images = fn.decoders.image(jpegs)
        pipe.set_outputs(images, labels)
    assert Pipeline.current() is None
    pipe.build()
    first = pipe.run()  # still open after the with block: it only defined the graph
    assert len(first[0]) == 4
    pipe.schedule_run()
    shared = pipe.share_outputs()
    pipe.release_outputs()
    assert len(shared[0]) == 4
    assert list(pipe.epoch_size().values()) == [6]
    pipe.close()


def test_define_graph_subclass(image_dir: Path) -> None:
    class SimplePipeline(Pipeline):
        def __init__(self, batch_size, num_threads, device_id):  # type: ignore[no-untyped-def]
            super().__init__(batch_size, num_threads, device_id, seed=12)

        def define_graph(self):  # type: ignore[no-untyped-def]
            jpegs, labels = fn.readers.file(file_root=str(image_dir))
            return fn.decoders.image(jpegs), labels

    pipe = SimplePipeline(3, 1, None)
    pipe.build()
    images, labels = pipe.run()
    assert len(images) == 3 and labels.as_tensor().shape == (3, 1)
    pipe.close()


def test_define_graph_subclass_with_iter_setup_feeding_input() -> None:
    """DALI's legacy style of the warp tutorials: iter_setup() feeds an external_source before each run()."""

    class FedPipeline(Pipeline):
        def __init__(self, batch_size, num_threads, device_id):  # type: ignore[no-untyped-def]
            super().__init__(batch_size, num_threads, device_id, seed=12)
            self.calls = 0

        def define_graph(self):  # type: ignore[no-untyped-def]
            self.data = fn.external_source(name="numbers")
            return (self.data * 2,)

        def iter_setup(self):  # type: ignore[no-untyped-def]
            self.calls += 1
            self.feed_input(self.data, [np.array([self.calls], np.int32)] * 2)

    pipe = FedPipeline(2, 1, None)
    pipe.build()
    assert [pipe.run()[0].as_array().ravel().tolist() for _ in range(3)] == [[2, 2], [4, 4], [6, 6]]
    pipe.close()


def test_with_block_that_runs_the_pipeline_closes_it(image_dir: Path) -> None:
    @pipeline_def(batch_size=3, num_threads=1)
    def p():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=str(image_dir))
        return (labels,)

    pipe = p()
    with pipe:
        assert sum(len(b[0]) for b in pipe.iter()) == 6
    assert pipe.state.value == "closed"


# --- DALI's conditionals tutorial (examples/general/conditionals.ipynb) -------------------------
def test_conditionals_tutorial_rotate_pipe(image_dir: Path) -> None:
    from streamflow.types import DALIDataType

    @pipeline_def(enable_conditionals=True, batch_size=4, num_threads=4, device_id=DEVICE_ID, seed=42)
    def rotate_pipe():  # type: ignore[no-untyped-def]
        jpegs, _ = fn.readers.file(device="cpu", file_root=str(image_dir))
        images = fn.decoders.image(jpegs, device="mixed")
        do_rotate = fn.random.coin_flip(probability=0.25, dtype=DALIDataType.BOOL)
        angle = fn.random.uniform(range=(10, 30))

        if do_rotate:
            result = fn.rotate(images, angle=angle, fill_value=0)
        else:
            result = images

        resized = fn.resize(result, resize_x=400, resize_y=400)
        return resized

    with pytest.warns() if DEVICE_ID == "auto" else _nothing():
        pipe = rotate_pipe()
        pipe.build()
    (resized,) = pipe.run()
    assert resized.as_cpu().as_tensor().shape == (4, 400, 400, 3)
    pipe.close()


# --- DALI's Python operator tutorial (examples/custom_operations/python_operator.ipynb) -------
def edit_images(image1, image2):  # type: ignore[no-untyped-def]
    assert image1.shape == image2.shape
    h, w, c = image1.shape
    y, x = np.ogrid[0:h, 0:w]
    mask = (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9
    result1 = np.copy(image1)
    result1[mask] = image2[mask]
    result2 = np.copy(image2)
    result2[mask] = image1[mask]
    return result1, result2


def test_python_operator_tutorial(image_dir: Path) -> None:
    python_function_pipe = Pipeline(batch_size=4, num_threads=4, device_id=DEVICE_ID,
                                    exec_async=False, exec_pipelined=False, seed=99)
    with python_function_pipe:
        input1, _ = fn.readers.file(file_root=str(image_dir), random_shuffle=True)
        input2, _ = fn.readers.file(file_root=str(image_dir), random_shuffle=True)
        im1, im2 = fn.decoders.image([input1, input2], device="cpu", output_type=types.RGB)
        res1, res2 = fn.resize([im1, im2], resize_x=300, resize_y=300)
        out1, out2 = fn.python_function(res1, res2, function=edit_images, num_outputs=2)
        python_function_pipe.set_outputs(res1, res2, out1, out2)
    python_function_pipe.build()
    r1, r2, o1, o2 = (t.as_array() for t in python_function_pipe.run())
    h, w = 300, 300
    y, x = np.ogrid[0:h, 0:w]
    outside = (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9
    assert (o1[:, outside] == r2[:, outside]).all() and (o1[:, ~outside] == r1[:, ~outside]).all()
    assert (o2[:, outside] == r1[:, outside]).all() and (o2[:, ~outside] == r2[:, ~outside]).all()
    python_function_pipe.close()


# --- run(): readers wrap around, every batch full (DALI's semantics) --------------------------
def _labels_stream(pipe_factory, batches: int) -> list[list[str]]:  # type: ignore[no-untyped-def]
    pipe = pipe_factory()
    pipe.build()
    out = [[Path(s).name for s in pipe.run().sources] for _ in range(batches)]
    pipe.close()
    return out


@pytest.mark.parametrize("pad_last_batch", [False, True])
def test_run_sequence_across_three_epochs(image_dir: Path, pad_last_batch: bool) -> None:
    files = [p.name for p in sorted(image_dir.rglob("*.jpg"), key=lambda p: (p.parent.name, p.name))]  # folder order

    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def reader():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=str(image_dir), random_shuffle=False, pad_last_batch=pad_last_batch)
        return (labels,)

    got = _labels_stream(reader, 5 if not pad_last_batch else 6)
    if pad_last_batch:  # each epoch padded to 8 by repeating its last sample
        epoch = files + [files[-1]] * 2
        want = [epoch[0:4], epoch[4:8]] * 3
    else:  # one stream of samples, epoch after epoch
        stream = files * 4
        want = [stream[i:i + 4] for i in range(0, 20, 4)]
    assert got == want
    dali = _dali_run_sequence(image_dir, pad_last_batch, len(got))
    if dali is not None:
        assert got == dali


def _dali_run_sequence(image_dir: Path, pad_last_batch: bool, batches: int) -> list[list[str]] | None:
    """The same reader in DALI 2.4 (CPU), when installed: the file of every sample, batch by batch."""
    try:
        from nvidia.dali import fn as dfn
        from nvidia.dali import pipeline_def as dali_pipeline_def
    except ImportError:
        return None
    files = sorted(image_dir.rglob("*.jpg"))
    by_size = {f.stat().st_size: f.name for f in files}
    if len(by_size) != len(files):
        return None

    @dali_pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def reader():  # type: ignore[no-untyped-def]
        jpegs, labels = dfn.readers.file(file_root=str(image_dir), random_shuffle=False, pad_last_batch=pad_last_batch)
        return jpegs

    pipe = reader()
    pipe.build()
    out = []
    for _ in range(batches):
        (data,) = pipe.run()
        out.append([by_size[int(np.asarray(data.at(i)).size)] for i in range(len(data))])
    return out


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
