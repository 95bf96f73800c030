"""DALI's dynamic-mode examples, from its documentation, with only the import changed.

``import nvidia.dali.experimental.dynamic as ndd`` becomes
``import streamflow.experimental.dynamic as ndd``. Examples that decode on
the GPU (``device="gpu"``) run as written when a GPU is present (``gpu``
marker) and, everywhere, with ``device="cpu"`` as the one other change.
Sources: DALI's "Dynamic API Overview", "Data Readers Reference" and
"Concepts" pages, the ``RNG`` docstring, and NVIDIA's dali-dynamic-mode guide
(tensor and batch API).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import streamflow.experimental.dynamic as ndd


class MyModel:
    """Stands in for the overview's model: records what it is given."""

    def __init__(self) -> None:
        self.seen: list[tuple[object, object]] = []

    def __call__(self, inputs: tuple[object, object]) -> None:
        self.seen.append(inputs)


def _overview(images_dir: str, device: str) -> MyModel:
    model = MyModel()
    flip_horizontal = True
    flip_vertical = False
    dataset = ndd.readers.File(file_root=images_dir)
    for jpegs, labels in dataset.next_epoch(batch_size=16):
        img = ndd.decoders.image(jpegs, device=device)
        flipped = ndd.flip(img, horizontal=flip_horizontal, vertical=flip_vertical)
        model((flipped, img))
    return model


def test_overview_example(image_root: Path) -> None:
    model = _overview(str(image_root), device="cpu")
    ((flipped, img),) = model.seen  # 6 images: one batch of 16 holds them all
    assert isinstance(flipped, ndd.Batch) and flipped.batch_size == 6
    for f, i in zip(flipped.tensors, img.tensors):  # type: ignore[attr-defined]
        np.testing.assert_array_equal(np.asarray(f), np.asarray(i)[:, ::-1])


@pytest.mark.gpu
def test_overview_example_on_the_gpu(image_root: Path) -> None:
    model = _overview(str(image_root), device="gpu")
    ((flipped, img),) = model.seen
    assert flipped.device.value == "gpu"  # type: ignore[attr-defined]


def test_readers_reference_example(image_root: Path) -> None:
    images_dir = str(image_root)
    batch_reader = ndd.readers.File(file_root=images_dir)
    batches = []
    for jpegs, labels in batch_reader.next_epoch(batch_size=16):
        batches.append((jpegs, labels))  # process the batches

    sample_reader = ndd.readers.File(file_root=images_dir)
    samples = []
    for jpeg, label in sample_reader.next_epoch():
        samples.append((jpeg, label))  # process the single sample
    assert len(batches) == 1 and batches[0][0].batch_size == 6
    assert len(samples) == 6 and isinstance(samples[0][0], ndd.Tensor)
    np.testing.assert_array_equal(np.asarray(samples[2][0]), np.asarray(batches[0][0].tensors[2]))


def test_concepts_examples(image_root: Path) -> None:
    jpegs = [f.read_bytes() for f in sorted(image_root.rglob("*.jpg"))[:8]]
    jpegs = (jpegs * 8)[:8]
    with ndd.EvalMode.sync_cpu:
        images = ndd.decoders.image(jpegs, device="cpu")  # the page decodes on the GPU
        resized = ndd.resize(images, size=(224, 224))
    assert resized.shape == [(224, 224, 3)] * 8

    ndd.set_num_threads(8)
    try:
        assert ndd.get_num_threads() == 8
    finally:
        ndd.set_num_threads(None)

    ndd.random.set_seed(42)
    angle = ndd.random.uniform(batch_size=8, range=(-10, 10))
    images = ndd.rotate(images, angle=angle)
    ndd.random.set_seed(42)
    again = ndd.random.uniform(batch_size=8, range=(-10, 10))
    np.testing.assert_array_equal(np.asarray(angle), np.asarray(again))  # same seed, same draws

    geom_rng = ndd.random.RNG(seed=1)
    color_rng = ndd.random.RNG(seed=2)
    angle = ndd.random.uniform(batch_size=8, range=(-10, 10), rng=geom_rng)
    brightness = ndd.random.uniform(batch_size=8, range=(0.8, 1.2), rng=color_rng)
    assert np.all((np.asarray(brightness) >= 0.8) & (np.asarray(brightness) < 1.2))

    global_seed, rank = 1000, 3
    rng = ndd.random.RNG(seed=global_seed + rank)
    assert ndd.random.uniform(batch_size=2, rng=rng).batch_size == 2


def test_rng_docstring_examples() -> None:
    my_rng = ndd.random.RNG(seed=1234)
    result = ndd.random.uniform(range=(-1, 1), shape=[10], rng=my_rng, device="cpu")
    assert result.shape == (10,)

    rng1 = ndd.random.RNG(seed=1234)
    _ = rng1()  # change the state of the generator
    rng2 = rng1.clone()
    for i in range(10):
        assert rng1() == rng2()


def test_tensor_and_batch_guide_examples() -> None:
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    arr1, arr2 = data, data[:2]
    t = ndd.tensor(data)  # copy
    t = ndd.as_tensor(data)  # wrap, no copy if possible
    t.cpu()
    tt = t.torch(copy=False)
    assert tt.shape[0] == 4
    np.testing.assert_array_equal(np.asarray(t[1:3]), data[1:3])
    assert np.asarray(t).shape == (4, 3)

    b = ndd.batch([arr1, arr2])  # copy
    b = ndd.as_batch(data)  # wrap, no copy if possible
    assert b.batch_size == 4

    xy = ndd.random.uniform(batch_size=16, range=[0, 1], shape=2)
    crop_x = xy.slice[0]  # Batch of 16 scalars, first element from each sample
    crop_y = xy.slice[1]
    sample_0 = xy.tensors[0]  # Tensor, the entire first sample [x, y]
    assert crop_x.batch_size == crop_y.batch_size == 16 and crop_x.shape[0] == ()
    np.testing.assert_array_equal(np.asarray(sample_0), [np.asarray(crop_x.tensors[0]), np.asarray(crop_y.tensors[0])])
    with pytest.raises(TypeError):
        xy[0]

    ragged = ndd.batch([arr1, arr2])
    padded = ragged.torch(pad=True)  # zero-pads ragged batches to the max shape
    assert tuple(padded.shape) == (2, 4, 3)
    with pytest.raises(ValueError):
        ragged.torch()  # ragged without pad raises


def test_threading_example() -> None:
    results: list[tuple[object, object]] = []

    def worker() -> None:
        with ndd.EvalMode.deferred:
            img = ndd.random.uniform(shape=(100, 100, 3), range=(0, 255), dtype=ndd.uint8)
            flipped = ndd.flip(img, horizontal=True)
            results.append((img, flipped))  # not in the example: what the test checks

    errors: list[BaseException] = []

    def run() -> None:
        try:
            worker()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if errors:
        raise errors[0]
    ((img, flipped),) = results
    assert isinstance(img, ndd.Tensor) and img.dtype == ndd.uint8 and img.shape == (100, 100, 3)
    values = np.asarray(img)
    assert values.dtype == np.uint8 and values.min() < 20 and values.max() > 235  # the range is used
    np.testing.assert_array_equal(np.asarray(flipped), values[:, ::-1])


def test_reader_class_names_are_dali_s() -> None:
    """DALI 2.4's ``ndd.readers`` classes, spelled as DALI spells them (COCO, MXNet, TFRecord)."""
    import streamflow.experimental.dynamic as dynamic

    dali = ["COCO", "Caffe", "Caffe2", "File", "MXNet", "NemoAsr", "Numpy", "TFRecord", "Video", "VideoResize",
            "Webdataset"]
    assert [name for name in dali if not hasattr(dynamic.readers, name)] == []
    assert dynamic.readers.COCO is dynamic.readers.coco and dynamic.readers.TFRecord is dynamic.readers.tfrecord
