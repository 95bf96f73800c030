"""Debug pipelines: ``pipeline_def(debug=True)`` runs the definition operator by operator on real data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import rand_image

import streamflow as sf
from streamflow import fn
from streamflow.dynamic.debug import DebugPipeline


def _define(root: str, seen: list[object] | None = None):  # type: ignore[no-untyped-def]
    def define():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True)
        images = fn.decoders.image(jpegs)
        if seen is not None:
            seen.append((images.get(), labels.get(), repr(images)))
        crops = fn.random_resized_crop(images, size=(16, 16))
        flips = fn.random.coin_flip(probability=0.5)
        mirrored = fn.flip(crops, horizontal=flips)
        scaled = mirrored * 0.5 + 1  # arithmetic on debug data
        return scaled, labels, flips

    return define


def test_values_inside_the_definition_are_real(image_root: Path) -> None:
    seen: list[object] = []
    pipe = sf.pipeline_def(_define(str(image_root), seen), batch_size=4, num_threads=2, seed=3, debug=True)()
    assert isinstance(pipe, DebugPipeline) and not seen  # the trace is symbolic
    with pipe:
        batch = pipe.run()
    images, labels, text = seen[0]  # type: ignore[misc]
    assert isinstance(images, sf.TensorList) and len(images) == 4 and images.layout == "HWC"
    assert images.at(0).ndim == 3 and images.at(0).dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(labels.as_array()).ravel(), batch[1].as_array().ravel())
    assert "EagerNode('decoders.image" in text and "4 samples" in text


def test_epochs_equal_the_pipeline(image_root: Path) -> None:
    define = _define(str(image_root))
    plain = sf.pipeline_def(define, batch_size=4, num_threads=2, seed=3)()
    debug = sf.pipeline_def(define, batch_size=4, num_threads=2, seed=3)(debug=True)
    with plain, debug:
        assert debug.epoch_size() == {}  # known once the definition has run
        for _ in range(2):
            want, got = list(plain.iter()), list(debug.iter())
            assert [len(b[0]) for b in got] == [4, 2]
            for w, g in zip(want, got, strict=True):
                assert (g.epoch, g.batch_index) == (w.epoch, w.batch_index)
                np.testing.assert_array_equal(g.sample_ids, w.sample_ids)
                for wc, gc in zip(w, g, strict=True):
                    np.testing.assert_array_equal(gc.as_array(), wc.as_array())
        assert list(debug.epoch_size().values()) == list(plain.epoch_size().values()) == [6]


def test_a_definition_that_changes_its_graph_is_refused(image_root: Path) -> None:
    calls = [0]

    def define():  # type: ignore[no-untyped-def]
        calls[0] += 1
        jpegs, _ = fn.readers.file(file_root=str(image_root))
        images = fn.decoders.image(jpegs)
        return fn.flip(images) if calls[0] == 1 else fn.resize(images, size=8)

    with sf.pipeline_def(define, batch_size=2, num_threads=1, seed=1, debug=True)() as pipe:
        pipe.run()
        with pytest.raises(sf.PipelineDefinitionError, match=r"operator #2 is resize, it was flip"):
            pipe.run()


def test_debug_refuses_what_the_pipeline_refuses() -> None:
    def gpu_flip():  # type: ignore[no-untyped-def]
        return fn.flip(fn.external_source([[rand_image()]]), device="gpu")

    with pytest.raises(sf.PipelineDefinitionError, match="device_id=None"):
        sf.pipeline_def(gpu_flip, batch_size=1, num_threads=1, debug=True)().run()
    with pytest.raises(sf.PipelineDefinitionError, match="on_error='raise'"):
        sf.pipeline_def(gpu_flip, batch_size=1, num_threads=1, on_error="skip", device_id="auto", debug=True)()


def test_cpu_fallback_in_debug_mode() -> None:
    image = rand_image(9, 11)

    def define():  # type: ignore[no-untyped-def]
        return fn.flip(fn.external_source([[image]], cycle=True), device="gpu", horizontal=1)

    from streamflow.backend import gpu_count

    if gpu_count():
        pytest.skip("a GPU is present: no fallback")
    with sf.pipeline_def(define, batch_size=1, num_threads=1, device_id="auto", debug=True)() as pipe:
        with pytest.warns(sf.CpuFallbackWarning, match="running flip on the CPU"):
            first = pipe.run()
        np.testing.assert_array_equal(first[0].at(0), image[:, ::-1])
        np.testing.assert_array_equal(pipe.run()[0].at(0), image[:, ::-1])  # no second warning


def test_external_source_runs_out_as_in_the_pipeline() -> None:
    def define():  # type: ignore[no-untyped-def]
        return fn.external_source([[np.int32(1)], [np.int32(2)]])

    with sf.pipeline_def(define, batch_size=1, num_threads=1, debug=True)() as pipe:
        assert [int(pipe.run()[0].at(0)) for _ in range(2)] == [1, 2]
        with pytest.raises(StopIteration):
            pipe.run()


def test_async_iteration() -> None:
    import asyncio

    def define():  # type: ignore[no-untyped-def]
        return fn.external_source([[np.int32(1), np.int32(2)], [np.int32(3)]])

    async def main() -> list[list[int]]:
        with sf.pipeline_def(define, batch_size=2, num_threads=1, debug=True)() as pipe:
            return [[int(x) for x in b[0].as_array()] async for b in pipe]

    assert asyncio.run(main()) == [[1, 2], [3]]


def test_operators_made_out_of_the_graphs_order_still_get_the_pipelines_values(image_root: Path) -> None:
    printed: list[np.ndarray] = []

    def define():  # type: ignore[no-untyped-def]
        flips = fn.random.coin_flip(probability=0.5)  # made first; third in the graph's order
        angle = fn.random.uniform(range=(-30.0, 30.0))
        jpegs, _ = fn.readers.file(file_root=str(image_root), random_shuffle=True, shard_id=1, num_shards=2)
        if hasattr(angle, "get"):  # debug runs only: the plain pipeline's nodes are symbolic
            printed.append(np.asarray(angle.get().as_array()))
        images = fn.resize(fn.decoders.image(jpegs), size=(12, 12))
        return fn.rotate(fn.flip(images, horizontal=flips), angle=angle, keep_size=True), flips, angle

    plain = sf.pipeline_def(define, batch_size=4, num_threads=2, seed=21)
    with plain() as a, plain(debug=True) as b:
        for _ in range(3):
            for want, got in zip(a.run(), b.run(), strict=True):
                np.testing.assert_array_equal(got.as_array(), want.as_array())
    assert len(printed) >= 4 and printed[0].shape == (3,)  # the first batch ran twice (3 samples per shard)


def test_dali_experimental_import_path(image_root: Path) -> None:
    """DALI's debug mode is ``from nvidia.dali.pipeline.experimental import pipeline_def``: same path here."""
    from streamflow.pipeline.experimental import pipeline_def

    assert pipeline_def is sf.pipeline_def
    pipe = pipeline_def(_define(str(image_root)), batch_size=2, num_threads=1, seed=3, debug=True)()
    assert isinstance(pipe, DebugPipeline)
    pipe.close()


def test_printing_a_debug_node_shows_its_values(image_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """DALI's debug_mode tutorial prints operator outputs inside the definition: the values show."""

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=3, debug=True)
    def printing():  # type: ignore[no-untyped-def]
        _, labels = fn.readers.file(file_root=str(image_root))
        print(labels)
        return labels

    with printing() as pipe:
        (labels,) = pipe.run()
    printed = capsys.readouterr().out
    assert "EagerNode('readers.file" in printed and f"[{int(labels.at(1)[0])}]" in printed


def test_conditionals_in_debug_mode_equal_the_pipeline(image_root: Path) -> None:
    """``enable_conditionals`` with ``debug=True``: ``if`` on data runs (it was "has no truth value"), and the
    batches equal the traced pipeline's."""

    def define():  # type: ignore[no-untyped-def]
        jpegs, _ = fn.readers.file(file_root=str(image_root))
        images = fn.resize(fn.decoders.image(jpegs), size=(12, 12))
        do_rotate = fn.random.coin_flip(probability=0.5, dtype=sf.types.BOOL)
        if do_rotate:
            images = fn.rotate(images, angle=fn.random.uniform(range=(10, 30)), fill_value=0, keep_size=True)
        else:
            images = fn.flip(images)
        return images, do_rotate

    settings = dict(enable_conditionals=True, batch_size=4, num_threads=2, seed=5)
    plain = sf.pipeline_def(define, **settings)()
    debug = sf.pipeline_def(define, **settings)(debug=True)
    with plain, debug:
        flags = []
        for _ in range(3):
            want, got = plain.run(), debug.run()
            for wc, gc in zip(want, got, strict=True):
                np.testing.assert_array_equal(gc.as_array(), wc.as_array())
            flags += list(np.asarray(want[1].as_array()).ravel())
        assert any(flags) and not all(flags)  # both branches ran
