"""The engine: async and sync iteration, epochs, errors, skip policy, shutdown, memory bounds."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn, types

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def training_pipe(root, batch_size=2, num_threads=2, seed=42, on_error="raise", **kw):
    @sf.pipeline_def(batch_size=batch_size, num_threads=num_threads, seed=seed, on_error=on_error, **kw)
    def pipe(root):
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.resize(images, resize_x=64, resize_y=64)
        images = fn.crop_mirror_normalize(
            images, crop=(48, 48), mean=MEAN, std=STD, mirror=fn.random.coin_flip(), dtype=types.FLOAT
        )
        return images, labels

    return pipe(root)


def epoch_arrays(pipe: sf.Pipeline) -> list[np.ndarray]:
    return [batch[0].as_tensor().copy() for batch in pipe.iter()]


def test_async_iteration_one_epoch(image_root: Path, no_leaks) -> None:
    async def main():
        pipe = training_pipe(image_root)
        shapes = []
        async with pipe:
            async for images, labels in pipe:
                shapes.append(images.as_tensor().shape)
                assert labels.as_tensor().shape == (len(images), 1)
            second = [b async for b in pipe]  # the next epoch
        assert pipe.state is sf.PipelineState.CLOSED
        return shapes, len(second)

    shapes, second = asyncio.run(main())
    assert shapes == [(2, 3, 48, 48)] * 3 and second == 3


def test_sync_iter_and_run(image_root: Path, no_leaks) -> None:
    pipe = training_pipe(image_root, batch_size=4)
    batches = list(pipe.iter())
    assert [len(b[0]) for b in batches] == [4, 2]
    assert pipe.next_batch().epoch == 1 and len(pipe.next_batch()[0]) == 2 and pipe.next_batch() is None
    # run() is DALI's: never ends for readers, every batch full across epoch ends
    first, second, third = pipe.run(), pipe.run(), pipe.run()
    assert [len(b[0]) for b in (first, second, third)] == [4, 4, 4]
    assert (first.epoch, second.epoch, third.epoch) == (2, 2, 3)
    ref = training_pipe(image_root, batch_size=4)
    stream = [src for _ in range(4) for b in ref.iter() for src in b.sources]  # epochs 0..3, 6 samples each
    ref.close()
    assert [src for b in (first, second, third) for src in b.sources] == stream[12:24]
    pipe.close()
    pipe.close()  # idempotent
    with pytest.raises(sf.PipelineClosedError):
        pipe.run()


def test_reset_skips_rest_of_epoch(image_root: Path) -> None:
    with training_pipe(image_root, batch_size=2) as pipe:
        assert pipe.run().epoch == 0
        pipe.reset()
        nxt = pipe.run()
        assert (nxt.epoch, nxt.batch_index) == (1, 0)
        pipe.reset()
        pipe.reset()  # nothing open: no-op
        assert pipe.run().epoch == 2


def test_outputs_match_reference_computation(image_root: Path) -> None:
    """The pipeline equals decode -> resize -> crop -> mirror -> normalize done by hand."""
    from streamflow._native import imgproc as kernels
    from streamflow.codecs.nvimgcodec import ImageDecoder

    with training_pipe(image_root, batch_size=6) as pipe:
        batch = pipe.run()
    mirror_pipe_values = None
    images = batch[0].as_tensor()
    decoder = ImageDecoder()
    for i, source in enumerate(batch.sources):
        img = decoder.decode(Path(source).read_bytes(), source)
        resized = kernels.resample(img, (64, 64))
        crop = resized[8:56, 8:56].astype(np.float32)
        chw = ((crop - np.float32(MEAN)) / np.float32(STD)).transpose(2, 0, 1)
        flipped = chw[:, :, ::-1]
        assert np.allclose(images[i], chw, atol=1e-5) or np.allclose(images[i], flipped, atol=1e-5)
    assert mirror_pipe_values is None


def test_same_seed_same_batches_whatever_num_threads(image_root: Path) -> None:
    runs = []
    for threads in (1, 2, 3):
        with training_pipe(image_root, batch_size=3, num_threads=threads, seed=5) as pipe:
            runs.append(epoch_arrays(pipe) + epoch_arrays(pipe))
    for other in runs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(runs[0], other))
    with training_pipe(image_root, batch_size=3, seed=6) as pipe:
        different = epoch_arrays(pipe)
    assert not all(np.array_equal(a, b) for a, b in zip(runs[0], different))


def test_checkpoint_to_a_file_and_from_a_string(image_root: Path, tmp_path: Path) -> None:
    """DALI: ``pipe.checkpoint(filename)`` also writes the file; a checkpoint kept as a string (DALI
    returns str) or read back from the file restores the pipeline."""
    path = tmp_path / "pipe.cpt"
    with training_pipe(image_root, batch_size=2, seed=11) as pipe:
        pipe.run()
        saved = pipe.checkpoint(path)
        expected = pipe.run()[0].as_tensor().copy()
    assert path.read_bytes() == saved
    for given in (path.read_bytes(), saved.decode()):
        with training_pipe(image_root, batch_size=2, seed=5, checkpoint=given) as resumed:
            assert np.array_equal(resumed.run()[0].as_tensor(), expected)


def test_checkpoint_resume_reproduces_next_batch(image_root: Path) -> None:
    with training_pipe(image_root, batch_size=2, seed=11) as pipe:
        pipe.run()
        pipe.run()
        saved = pipe.checkpoint()
        expected = [pipe.run()[0].as_tensor().copy()] + [b[0].as_tensor().copy() for b in pipe.iter()]
    with training_pipe(image_root, batch_size=2, seed=999, checkpoint=saved) as resumed:
        got = [resumed.run()[0].as_tensor()] + [b[0].as_tensor() for b in resumed.iter()]
    assert len(got) == len(expected)
    assert all(np.array_equal(a, b) for a, b in zip(expected, got))
    with pytest.raises(sf.PipelineDefinitionError, match="batch_size=2"):
        training_pipe(image_root, batch_size=3, checkpoint=saved)
    with pytest.raises(sf.PipelineDefinitionError, match="not a streamflow checkpoint"):
        training_pipe(image_root, checkpoint=b"garbage")


def test_decode_error_names_stage_operator_and_file(broken_root: Path, no_leaks) -> None:
    @sf.pipeline_def(batch_size=6, num_threads=2, seed=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=broken_root)
        return fn.decoders.image(jpegs)

    p = pipe()
    with pytest.raises(sf.PipelineError) as info:
        list(p.iter())
    err = info.value
    assert err.stage == "cpu" and err.operator.startswith("decoders.image")
    assert err.source is not None and Path(err.source).name in {"broken.png", "truncated_jpeg.jpg"}
    assert Path(err.source).name in str(err)
    assert p.state is sf.PipelineState.FAILED
    p.close()


def test_skip_policy_keeps_batches_full_and_counts(broken_root: Path, no_leaks) -> None:
    @sf.pipeline_def(batch_size=3, num_threads=2, seed=0, on_error="skip")
    def pipe():
        jpegs, _ = fn.readers.file(file_root=broken_root)
        return fn.resize(fn.decoders.image(jpegs), resize_x=32, resize_y=32)

    with pipe() as p:
        for _ in range(2):  # two epochs: the pipeline stays usable after skips
            batches = list(p.iter())
            assert [len(b[0]) for b in batches] == [3, 3]
            assert all(b[0].as_tensor().shape == (3, 32, 32, 3) for b in batches)
            names = {Path(s).name for b in batches for s in b.sources}
            assert not names & {"broken.png", "truncated_jpeg.jpg"}
        stats = p.stats()
    skipped = {Path(s.source).name for s in stats.skipped}
    assert skipped == {"broken.png", "truncated_jpeg.jpg"}
    # Two bad files per epoch, plus replacements that drew a bad file again, plus read-ahead.
    assert stats.skipped_count >= 4 and all(s.operator.startswith("decoders.image") for s in stats.skipped)


def test_skip_gives_up_when_everything_fails(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    for i in range(3):
        (tmp_path / "c" / f"bad{i}.jpg").write_bytes(b"\xff\xd8garbage")

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0, on_error="skip")
    def pipe():
        jpegs, _ = fn.readers.file(file_root=tmp_path)
        return fn.decoders.image(jpegs)

    with pipe() as p, pytest.raises(sf.PipelineError, match="gave up"):
        p.run()


def test_missing_file_is_read_error_or_skipped(many_files: list[str], tmp_path: Path) -> None:
    files = many_files[:3] + [str(tmp_path / "deleted.jpg")]

    @sf.pipeline_def(batch_size=4, num_threads=1, seed=0)
    def pipe(policy):
        jpegs, _ = fn.readers.file(files=files)
        return fn.decoders.image(jpegs)

    with pipe("raise") as p, pytest.raises(sf.PipelineError, match=r"stage 'read'.*deleted.jpg.*file not found"):
        p.run()

    @sf.pipeline_def(batch_size=4, num_threads=1, seed=0, on_error="skip")
    def skipping():
        jpegs, _ = fn.readers.file(files=files)
        return fn.decoders.image(jpegs)

    with skipping() as p:
        assert len(p.run()[0]) == 4
        skipped = p.stats().skipped
        assert skipped and {s.stage for s in skipped} == {"read"}
        assert {Path(s.source or "").name for s in skipped} == {"deleted.jpg"}


def test_bounded_batches_in_flight_with_slow_consumer() -> None:
    produced = []

    def source(info):
        produced.append(info.iteration)
        return [np.full((2, 2), info.iteration, dtype=np.int32)] * 2

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0, prefetch_queue_depth=2)
    def pipe():
        return fn.flip(fn.external_source(source, batch_info=True), horizontal=0)

    with pipe() as p:
        for consumed in range(1, 6):
            p.run()
            time.sleep(0.1)  # a slow consumer
            # read stage (1) + its queue (2) + cpu stage (2 in progress + 1 taken) + its queue (2)
            in_flight = len(produced) - consumed
            assert in_flight <= 8, f"{in_flight} batches in flight"
    assert len(produced) <= 5 + 8


def test_close_releases_threads_and_files_mid_epoch(image_root: Path, no_leaks) -> None:
    pipe = training_pipe(image_root, batch_size=1)
    pipe.run()
    pipe.close()


def test_aclose_mid_epoch_and_cancellation(image_root: Path, no_leaks) -> None:
    async def main():
        pipe = training_pipe(image_root, batch_size=1)
        async with pipe:
            await pipe.arun()
            consumer = asyncio.create_task(pipe.arun())
            await asyncio.sleep(0)
            consumer.cancel()
            with pytest.raises(asyncio.CancelledError):
                await consumer
            assert len((await pipe.arun())[0]) == 1  # still usable after a cancelled read
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert asyncio.run(main()) == []


def test_sync_api_inside_event_loop_is_refused(image_root: Path) -> None:
    async def main():
        pipe = training_pipe(image_root)
        with pytest.raises(RuntimeError, match="async for"):
            pipe.run()
        pipe.close()

    asyncio.run(main())


def test_sync_run_from_several_threads(many_files: list[str]) -> None:
    @sf.pipeline_def(batch_size=2, num_threads=2, seed=0)
    def pipe():
        jpegs, _ = fn.readers.file(files=many_files[:16])
        return (jpegs,)

    got = []
    with pipe() as p:
        def worker():
            for _ in range(2):
                got.append(p.run().batch_index)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(got) == list(range(8))


def test_device_checks() -> None:
    def gpu_pipe(device_id):
        @sf.pipeline_def(batch_size=1, device_id=device_id)
        def pipe():
            src = fn.external_source(lambda: [np.zeros((4, 4, 3), np.uint8)])
            return fn.flip(src, device="gpu")

        return pipe()

    with pytest.raises(sf.PipelineDefinitionError, match="device_id=None"):
        gpu_pipe(None).build()
    from streamflow.backend import gpu_count

    if gpu_count() == 0:
        with pytest.warns(sf.CpuFallbackWarning, match="no usable GPU") as caught:
            p = gpu_pipe("auto")
            p.build()
        # the warning points at the user's line, not at streamflow's code
        assert caught[0].filename == __file__, caught[0].filename
        with p:
            out = p.run()
        assert out[0].at(0).shape == (4, 4, 3)
        with pytest.raises(sf.errors.DeviceUnavailableError, match="usable GPU"):
            gpu_pipe(0).build()
    with pytest.raises(ValueError, match="expected one of"):
        fn.flip(fn.external_source(lambda: []), device="tpu")


def test_definition_errors() -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="batch_size"):
        sf.Pipeline(batch_size=0)
    with pytest.raises(ValueError, match="on_error"):
        sf.Pipeline(batch_size=1, on_error="ignore")

    @sf.pipeline_def(batch_size=1)
    def bad_output():
        return 3

    with pytest.raises(sf.PipelineDefinitionError, match="must return a DataNode"):
        bad_output()
    with pytest.raises(sf.PipelineDefinitionError, match="cannot be per-sample"):
        fn.crop_mirror_normalize(fn.external_source(lambda: []), scale=fn.random.uniform())


def test_stats_report_stages_and_operators(image_root: Path) -> None:
    with training_pipe(image_root, batch_size=2) as pipe:
        list(pipe.iter())
        stats = pipe.stats()
    assert [s.name for s in stats.stages] == ["read", "cpu"]
    assert stats.batches_delivered == 3 and stats.samples_delivered == 6
    assert all(s.batches >= 3 for s in stats.stages)
    names = {o.name.split("#")[0] for o in stats.operators}
    assert "decoders.image" in names
    assert all(o.time_per_batch > 0 for o in stats.operators)


def test_the_cpu_fallback_warning_points_at_the_users_line_from_run() -> None:
    from streamflow.backend import gpu_count

    if gpu_count() > 0:
        pytest.skip("a GPU is present: no fallback")

    @sf.pipeline_def(batch_size=1, num_threads=1, device_id="auto")
    def pipe():
        return fn.flip(fn.external_source(lambda: [np.zeros((2, 2, 3), np.uint8)]).gpu())

    p = pipe()
    with pytest.warns(sf.CpuFallbackWarning) as caught:
        p.run()
    p.close()
    assert caught[0].filename == __file__


def test_a_pipeline_without_a_source_runs_as_in_dali() -> None:
    """DALI runs pipelines of constants and random numbers only: batch_size samples per batch, without
    end; the random values follow the seed like any pipeline's."""
    import itertools

    def make(seed: int) -> sf.Pipeline:
        @sf.pipeline_def(batch_size=3, num_threads=1, seed=seed)
        def source_less():  # type: ignore[no-untyped-def]
            const = fn.constant(idata=[1, 2], shape=[2], dtype=sf.types.INT32)
            return const, fn.random.uniform(range=[0, 1], shape=[2])

        return source_less()

    with make(4) as p:
        const, first = p.run()
        _, second = p.run()
        assert len(const) == 3 and np.asarray(const.as_tensor()).tolist() == [[1, 2]] * 3
        assert np.asarray(first.as_tensor()).shape == (3, 2) and not np.array_equal(first.as_tensor(), second.as_tensor())
        assert [len(b[0]) for b in itertools.islice(p.iter(), 5)] == [3] * 5  # no epoch end
    with make(4) as again, make(5) as other:
        repeat = np.asarray(again.run()[1].as_tensor())
        assert np.array_equal(repeat, first.as_tensor())
        assert not np.array_equal(np.asarray(other.run()[1].as_tensor()), repeat)


def test_debug_mode_without_a_source_says_what_to_do() -> None:
    @sf.pipeline_def(batch_size=2, num_threads=1, seed=1, debug=True)
    def source_less():  # type: ignore[no-untyped-def]
        return fn.random.uniform(range=[0, 1])

    with pytest.raises(sf.PipelineDefinitionError, match="debug mode needs a source"), source_less() as p:
        p.run()


def test_pipeline_current_is_the_pipeline_being_defined() -> None:
    """DALI: inside a ``pipeline_def`` function (and ``define_graph``) ``Pipeline.current()`` is the
    pipeline being built, e.g. ``shard_id=Pipeline.current().device_id``; None outside."""
    seen: list[object] = []

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def defined():  # type: ignore[no-untyped-def]
        seen.append(sf.Pipeline.current())
        return fn.random.uniform(range=[0, 1])

    pipe = defined()
    assert seen == [pipe] and sf.Pipeline.current() is None

    class Legacy(sf.Pipeline):
        def define_graph(self):  # type: ignore[no-untyped-def]
            seen.append(sf.Pipeline.current())
            return fn.random.uniform(range=[0, 1])

    legacy = Legacy(batch_size=2, num_threads=1, seed=1)
    legacy.build()
    assert seen[-1] is legacy and sf.Pipeline.current() is None



@sf.pipeline_def
def _serializable(low: float, high: float):  # type: ignore[no-untyped-def]
    return fn.random.uniform(range=[low, high], shape=[2])


def test_serialize_names_the_definition_and_its_arguments(tmp_path: Path) -> None:
    """DALI's ``serialize()`` / ``deserialize_and_build()`` / ``Pipeline.deserialize()``: here the
    module-level pipeline_def function, its JSON arguments and the settings; the copy gives the
    same batches; what cannot be serialized says why."""
    pipe = _serializable(2.0, 3.0, batch_size=2, num_threads=1, seed=9)
    data = pipe.serialize(filename=tmp_path / "p.sf")
    assert json.loads(data)["qualname"] == "_serializable" and (tmp_path / "p.sf").read_bytes() == data
    copy = sf.Pipeline(batch_size=2, num_threads=1, seed=9)
    copy.deserialize_and_build(data.decode())
    other = sf.Pipeline.deserialize(filename=tmp_path / "p.sf", seed=10)
    with pipe, copy, other:
        want = np.asarray(pipe.run()[0].as_tensor())
        assert np.array_equal(np.asarray(copy.run()[0].as_tensor()), want)
        assert not np.array_equal(np.asarray(other.run()[0].as_tensor()), want) and other.batch_size == 2
    with pytest.raises(sf.PipelineDefinitionError, match="JSON values"):
        _serializable(np.float32(2), 3.0, batch_size=2).serialize()

    @sf.pipeline_def
    def local():  # type: ignore[no-untyped-def]
        return fn.random.uniform(range=[0, 1])

    with pytest.raises(sf.PipelineDefinitionError, match="module level"):
        local(batch_size=1).serialize()
    with pytest.raises(sf.PipelineDefinitionError, match="not a serialized streamflow pipeline"):
        sf.Pipeline(batch_size=1).deserialize_and_build(b"\n\x03abc")


def test_checkpoint_after_run_crossed_an_epoch_end(tmp_path: Path) -> None:
    """``run()`` batches run on across epoch ends (8 files, batches of 3: the third batch holds the
    last 2 of epoch 0 and the first of epoch 1); a checkpoint taken there resumes ``run()`` with the
    rest of that batch, as DALI's does (the checkpointing tutorial runs 3 batches first)."""
    files = []
    for i in range(8):
        path = tmp_path / f"f{i}.bin"
        path.write_bytes(bytes([i]))
        files.append(str(path))

    @sf.pipeline_def(batch_size=3, num_threads=1, seed=2)
    def numbered():  # type: ignore[no-untyped-def]
        data, _ = fn.readers.file(files=files, random_shuffle=True)
        return data, fn.random.uniform(range=[0, 1])

    def runs(pipe: sf.Pipeline, n: int) -> list[list[float]]:
        out = []
        for _ in range(n):
            data, u = pipe.run()
            out.append([float(np.asarray(d)[0]) for d in data] + [float(np.asarray(x)) for x in u])
        return out

    with numbered() as pipe:
        runs(pipe, 3)
        saved = pipe.checkpoint()
        expected = runs(pipe, 3)
    with numbered(checkpoint=saved) as resumed:
        assert runs(resumed, 3) == expected
