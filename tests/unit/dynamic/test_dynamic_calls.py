"""Dynamic calls: graph mode's argument checks and errors, random positions, devices, the shared pool."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import rand_image

import streamflow as sf
import streamflow.dynamic as ndd
from streamflow import fn
from streamflow.dynamic import executor
from streamflow.dynamic.invoke import DynamicHook
from streamflow.ops.decoders.image import ImageDecode
from streamflow.types import Device

IMG = rand_image(10, 14, seed=9)

BAD_CALLS: list[tuple[str, Callable[[Any], Any]]] = [
    ("resize", lambda m: m.resize(IMG if m is ndd else m.external_source([[IMG]]), resize_x="abc")),
    ("flip", lambda m: m.flip(IMG if m is ndd else m.external_source([[IMG]]), horizonal=1)),
    ("resize", lambda m: m.resize(IMG if m is ndd else m.external_source([[IMG]]), size=4, interp_type="cubicx")),
    ("random.uniform", lambda m: m.random.uniform(range=(5.0, 1.0))),
    ("crop", lambda m: m.crop(IMG if m is ndd else m.external_source([[IMG]]), crop=(2, 2), out_of_bounds_policy="x")),
    ("cast", lambda m: m.cast(IMG if m is ndd else m.external_source([[IMG]]))),
]


def _graph_error(call: Callable[[Any], Any]) -> BaseException:
    @sf.pipeline_def(batch_size=1, num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        return call(fn)

    with pytest.raises(Exception) as info:
        pipe()
    return info.value


@pytest.mark.parametrize("name,call", BAD_CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD_CALLS)])
def test_argument_errors_are_graph_modes(name: str, call: Callable[[Any], Any]) -> None:
    want = _graph_error(call)
    with pytest.raises(type(want)) as got:
        call(ndd)
    strip = lambda s: re.sub(r"#\d+", "", s)  # noqa: E731  # node numbers differ
    assert strip(str(got.value)) == strip(str(want))


def test_a_bad_sample_names_operator_and_row() -> None:
    with pytest.raises(sf.PipelineError, match=r"decoders\.image failed on sample 1 of the batch") as info:
        ndd.decoders.image([_jpeg(), b"not an image at all"])
    assert info.value.operator == "decoders.image"
    with pytest.raises(sf.PipelineError, match=r"decoders\.image failed on sample 0: "):
        ndd.decoders.image(b"not an image at all")


def _jpeg() -> np.ndarray:
    from helpers import DECODER_FILES

    return np.frombuffer(DECODER_FILES[0].read_bytes(), dtype=np.uint8)


def test_rng_positions_and_seeds() -> None:
    rng = ndd.random.RNG(seed=42)
    a = ndd.random.uniform(batch_size=4, rng=rng)
    b = ndd.random.uniform(batch_size=4, rng=rng)
    assert rng.position == 2 and not np.array_equal(np.asarray(a), np.asarray(b))
    again = ndd.random.RNG(42)
    np.testing.assert_array_equal(np.asarray(ndd.random.uniform(batch_size=4, rng=again)), np.asarray(a))
    np.testing.assert_array_equal(np.asarray(ndd.random.uniform(batch_size=4, rng=ndd.random.RNG(42, position=1))),
                                  np.asarray(b))
    np.testing.assert_array_equal(np.asarray(ndd.random.uniform(batch_size=4, rng=42)), np.asarray(a))
    clone = rng.clone()
    assert clone() == rng() and clone.position == rng.position == 3
    restored = ndd.random.RNG(state=rng.get_state())
    assert repr(restored) == repr(rng)
    with pytest.raises(sf.PipelineDefinitionError, match="rng must be"):
        ndd.flip(IMG, rng="seven")


def test_an_operators_own_seed_is_the_pipelines() -> None:
    # random.* (and readers, noise.*, ...) have DALI's seed=: a fixed stream of that operator, whatever the RNG
    fixed = np.asarray(ndd.random.uniform(batch_size=4, range=(0, 10), seed=42))
    moved = ndd.random.uniform(batch_size=4, range=(0, 10), seed=42, rng=ndd.random.RNG(7, position=3))
    np.testing.assert_array_equal(np.asarray(moved), fixed)
    assert not np.array_equal(np.asarray(ndd.random.uniform(batch_size=4, range=(0, 10), rng=42)), fixed)

    @sf.pipeline_def(batch_size=4, num_threads=1, seed=99)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.random.uniform(range=(0, 10), seed=42), fn.external_source([[np.zeros(1)] * 4])

    with pipe() as p:
        (values, _) = p.run()
    np.testing.assert_array_equal(fixed, np.stack([np.asarray(values.at(i)) for i in range(4)]))
    # an operator without seed= of its own: seed= is rng=RNG(seed) (the default RNG does not move)
    default = ndd.random.get_default_rng()
    position = default.position
    np.testing.assert_array_equal(np.asarray(ndd.flip(IMG, horizontal=1, seed=5)), IMG[:, ::-1])
    assert default.position == position
    with pytest.raises(sf.PipelineDefinitionError, match="give rng or seed, not both"):
        ndd.flip(IMG, seed=5, rng=ndd.random.RNG(1))


def test_default_rng_is_per_thread_and_set_seed_restarts_it() -> None:
    ndd.random.set_seed(5)
    first = np.asarray(ndd.random.normal(batch_size=3))
    ndd.flip(IMG)  # every operator call takes a position of the default RNG
    third = np.asarray(ndd.random.normal(batch_size=3))
    ndd.random.set_seed(5)
    np.testing.assert_array_equal(np.asarray(ndd.random.normal(batch_size=3)), first)
    assert ndd.random.get_default_rng().position == 1
    other: list[int] = []
    t = threading.Thread(target=lambda: other.append(ndd.random.get_default_rng().seed))
    t.start()
    t.join()
    assert other[0] != 5 and not np.array_equal(first, third)


def test_samples_keep_their_identity_through_a_sample_per_call() -> None:
    # A batch of one sample gives sample 0's values of the batch: random values key on sample ids.
    batch = np.asarray(ndd.random.uniform(batch_size=3, rng=ndd.random.RNG(1)))
    one = ndd.random.uniform(rng=ndd.random.RNG(1))
    assert isinstance(one, ndd.Tensor) and one.item() == batch[0]


def test_gpu_means_mixed_for_decoders() -> None:
    hook = DynamicHook()
    assert hook.device(ImageDecode(), "gpu") is Device.MIXED
    from streamflow.ops.flip import Flip

    assert hook.device(Flip(), "gpu") is Device.GPU and hook.device(Flip(), None) is None
    assert DynamicHook("gpu").device(Flip(), None) is Device.GPU


def test_operators_without_a_device_argument_refuse_the_gpu_clearly() -> None:
    with pytest.raises(sf.PipelineDefinitionError,
                       match=r"random\.uniform(: device='gpu' is not supported| cannot run on the GPU)"):
        ndd.random.uniform(device="gpu")


def test_one_pool_reused_across_calls() -> None:
    images = [IMG] * 8
    ndd.resize(images, size=(5, 5))
    pool = executor.worker_pool()
    before = threading.active_count()
    for _ in range(20):
        ndd.resize(images, size=(5, 5))
    assert executor.worker_pool() is pool and threading.active_count() <= before
    workers = {t.name for t in threading.enumerate() if t.name.startswith("streamflow-worker")}
    assert 0 < len(workers) <= executor.get_num_threads()


def test_set_num_threads_remakes_the_pool() -> None:
    old = executor.get_num_threads()
    try:
        ndd.set_num_threads(3)
        assert ndd.get_num_threads() == 3 and executor.worker_pool().threads == 3
        with pytest.raises(ValueError, match="positive int"):
            ndd.set_num_threads(0)
    finally:
        ndd.set_num_threads(None)
    assert ndd.get_num_threads() == old or old == 3


def test_results_do_not_depend_on_threads() -> None:
    images = [rand_image(30, 40, seed=s) for s in range(7)]
    try:
        ndd.set_num_threads(1)
        one = ndd.random_resized_crop(images, size=(9, 9), rng=ndd.random.RNG(3))
        ndd.set_num_threads(4)
        four = ndd.random_resized_crop(images, size=(9, 9), rng=ndd.random.RNG(3))
    finally:
        ndd.set_num_threads(None)
    np.testing.assert_array_equal(np.asarray(one), np.asarray(four))


def test_a_dynamic_call_inside_a_python_step_runs_inline() -> None:
    seen: list[str] = []

    def step(x: np.ndarray) -> np.ndarray:
        seen.append(threading.current_thread().name)
        return np.asarray(ndd.flip([x, x], horizontal=1).tensors[0])

    out = ndd.python_function([IMG] * 6, function=step)
    np.testing.assert_array_equal(np.asarray(out.tensors[5]), IMG[:, ::-1])
    assert len(seen) == 6


def test_positional_per_sample_arguments_take_constants_and_arrays() -> None:
    data = _jpeg()
    as_list = ndd.decoders.image_slice(data, [0.1, 0.2], [0.5, 0.4])
    as_arrays = ndd.decoders.image_slice(data, np.array([0.1, 0.2], np.float32), np.array([0.5, 0.4], np.float32))
    per_sample = ndd.decoders.image_slice([data, data], ndd.as_batch([np.array([0.1, 0.2], np.float32)] * 2),
                                          [0.5, 0.4])
    np.testing.assert_array_equal(np.asarray(as_arrays), np.asarray(as_list))
    np.testing.assert_array_equal(np.asarray(per_sample.tensors[1]), np.asarray(as_list))


def test_operators_that_mix_samples_see_the_whole_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Operator.whole_batch`` (e.g. permute_batch): one chunk for the batch, never parts of it."""
    from streamflow.ops.python_function import PythonFunction

    monkeypatch.setattr(PythonFunction, "whole_batch", True, raising=False)
    sizes: list[int] = []

    def count(xs):  # type: ignore[no-untyped-def]
        sizes.append(len(xs))
        return xs

    ndd.python_function([np.zeros(2)] * 9, function=count, batch_processing=True)
    assert sizes == [9]


def test_a_list_of_numpy_scalars_is_a_batch_for_inputs_that_take_numbers_too() -> None:
    # fn.filter's fill_value is data or a number: one numpy scalar per sample is a batch, as in a pipeline
    imgs = [rand_image(6, 7, seed=i) for i in range(3)]
    shift = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 0]], np.float32)
    fills = [np.uint8(1), np.uint8(2), np.uint8(3)]
    got = ndd.filter(imgs, shift, fills, border="constant")

    @sf.pipeline_def(batch_size=3, num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.filter(fn.external_source([imgs], layout="HWC"), shift, fn.external_source([fills]),
                         border="constant")

    with pipe() as p:
        (want,) = p.run()
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(got.tensors[i]), np.asarray(want.at(i)))
        assert np.all(np.asarray(got.tensors[i])[:, -1] == i + 1)
