"""Async twins (``dynamic.aio``) and dynamic readers."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import numpy as np
import pytest
from helpers import rand_image

import streamflow as sf
import streamflow.dynamic as ndd
from streamflow import fn

IMG = rand_image(16, 20, seed=5)


def test_aio_gives_the_sync_results() -> None:
    async def main() -> tuple[object, object, object]:
        a = await ndd.aio.resize([IMG, IMG[:8]], size=(7, 9))
        b = await ndd.aio.random.normal(batch_size=3, rng=ndd.random.RNG(2))
        c = await ndd.aio.math.sqrt(np.arange(4, dtype=np.float32))
        return a, b, c

    a, b, c = asyncio.run(main())
    np.testing.assert_array_equal(np.asarray(a), np.asarray(ndd.resize([IMG, IMG[:8]], size=(7, 9))))
    np.testing.assert_array_equal(np.asarray(b), np.asarray(ndd.random.normal(batch_size=3, rng=ndd.random.RNG(2))))
    np.testing.assert_allclose(np.asarray(c), np.sqrt(np.arange(4)))


def test_aio_computes_off_the_event_loop() -> None:
    """The operator waits for an event only the event loop can set: a blocked loop would deadlock."""
    loop_threads: list[str] = []
    compute_threads: list[str] = []

    async def main() -> object:
        loop_threads.append(threading.current_thread().name)
        released = threading.Event()

        def step(x: np.ndarray) -> np.ndarray:
            compute_threads.append(threading.current_thread().name)
            assert released.wait(20), "the event loop was blocked by the dynamic call"
            return x + 1

        call = asyncio.ensure_future(ndd.aio.python_function(np.zeros(3, np.int32), function=step))
        await asyncio.sleep(0.01)
        released.set()  # runs only if the loop is free while the operator computes
        return await call

    out = asyncio.run(main())
    np.testing.assert_array_equal(np.asarray(out), [1, 1, 1])
    assert compute_threads and compute_threads[0] != loop_threads[0]
    assert compute_threads[0].startswith("streamflow-worker")


def test_aio_errors_are_the_sync_errors() -> None:
    async def main() -> None:
        await ndd.aio.decoders.image(b"\xff\xd8\xff junk")

    with pytest.raises(sf.PipelineError, match=r"decoders\.image failed on sample 0"):
        asyncio.run(main())


def test_many_concurrent_aio_calls() -> None:
    async def main() -> list[object]:
        return list(await asyncio.gather(*(ndd.aio.flip(IMG, horizontal=i % 2) for i in range(12))))

    outs = asyncio.run(main())
    for i, out in enumerate(outs):
        np.testing.assert_array_equal(np.asarray(out), IMG[:, ::-1] if i % 2 else IMG)


def test_reader_samples_batches_and_its_rules(image_root: Path) -> None:
    reader = ndd.readers.File(file_root=str(image_root), rng=3)
    samples = list(reader.next_epoch())
    assert len(samples) == 6 and all(isinstance(j, ndd.Tensor) for j, _ in samples)
    assert [int(label.item()) for _, label in samples] == [0, 0, 0, 1, 1, 1]
    with pytest.raises(sf.PipelineDefinitionError, match="keeps its batch size"):
        reader.next_epoch(batch_size=4)
    reader.close()
    batched = ndd.readers.file(file_root=str(image_root), batch_size=4)
    sizes = [jpegs.batch_size for jpegs, labels in batched]  # iterating the reader: one epoch
    assert sizes == [4, 2]
    assert [len(list(batched)) for _ in range(2)] == [2, 2]
    with pytest.raises(sf.PipelineDefinitionError, match="give batch_size"):
        iter(ndd.readers.file(file_root=str(image_root)))


def test_calling_a_reader_gives_the_next_sample_on_into_the_next_epoch(image_root: Path) -> None:
    """DALI's direct call (``encoded, label = reader()``, as in its audio decoder tutorial): one sample per call,
    the epoch's order, then the next epoch's; ``reader(batch_size=n)`` gives batches."""
    epoch = [(np.asarray(j).tobytes(), int(lab.item())) for j, lab in ndd.readers.File(file_root=image_root).next_epoch()]
    reader = ndd.readers.File(file_root=image_root)
    calls = [reader() for _ in range(8)]
    assert all(isinstance(j, ndd.Tensor) for j, _ in calls)
    assert [(np.asarray(j).tobytes(), int(lab.item())) for j, lab in calls] == epoch + epoch[:2]
    with pytest.raises(sf.PipelineDefinitionError, match="keeps its batch size"):
        reader(batch_size=2)
    batches = ndd.readers.File(file_root=image_root)
    assert [batches(batch_size=4)[0].batch_size for _ in range(3)] == [4, 2, 4]


def test_reader_batches_feed_dynamic_operators_with_their_sample_ids(image_root: Path) -> None:
    """A crop of reader batches draws for the reader's samples: the pipeline's values, batch after batch."""
    @sf.pipeline_def(batch_size=4, num_threads=2, seed=8)
    def pipe():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=str(image_root), random_shuffle=True)
        return fn.random_resized_crop(fn.decoders.image(jpegs), size=(12, 12)), labels

    reader = ndd.readers.file(file_root=str(image_root), random_shuffle=True, rng=ndd.random.RNG(8))
    with pipe() as p:
        for epoch in range(2):
            for want, (jpegs, labels) in zip(p.iter(), reader.next_epoch(batch_size=4), strict=True):
                rng = ndd.random.RNG(8, position=2)  # reader 0, decoder 1, crop 2: the graph's order
                crops = ndd.random_resized_crop(ndd.decoders.image(jpegs, rng=9), size=(12, 12), rng=rng)
                np.testing.assert_array_equal(np.asarray(crops), want[0].as_array())
                np.testing.assert_array_equal(np.asarray(labels), want[1].as_array())
                assert labels.origin.epoch == epoch


def test_external_source_reader_with_a_generator() -> None:
    def gen():  # type: ignore[no-untyped-def]
        for i in range(3):
            yield [np.full((2,), i, np.int32), np.full((3,), i, np.int32)]

    source = ndd.external_source(gen)
    epochs = [[[np.asarray(s).tolist() for s in batch.tensors] for (batch,) in source.next_epoch(batch_size=2)]
              for _ in range(2)]
    assert epochs[0] == epochs[1] == [[[i, i], [i, i, i]] for i in range(3)]


def test_reader_read_errors_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jpg").write_bytes(b"x")
    reader = ndd.readers.file(file_root=str(tmp_path))
    (tmp_path / "a" / "x.jpg").unlink()
    with pytest.raises(sf.PipelineError, match="x.jpg"):
        list(reader.next_epoch(batch_size=1))


def test_async_reader(image_root: Path) -> None:
    async def main() -> list[int]:
        reader = ndd.readers.file(file_root=str(image_root), batch_size=4)
        sizes = []
        async for jpegs, _ in reader:
            images = await ndd.aio.decoders.image(jpegs)
            sizes.append(images.batch_size)
        return sizes

    assert asyncio.run(main()) == [4, 2]
