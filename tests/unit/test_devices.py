"""Where operators run: one device rule per operator, declared on it and checked when the graph is built."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import streamflow as sf
import streamflow.ops
from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.gpu.ops.registry import IMPLS
from streamflow.operator import CopyToGpu, Operator, Source
from streamflow.types import Device


def _operator_classes() -> list[type[Operator]]:
    for info in pkgutil.walk_packages(streamflow.ops.__path__, "streamflow.ops."):
        importlib.import_module(info.name)
    found: list[type[Operator]] = [CopyToGpu]
    todo = list(Operator.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if not inspect.isabstract(cls) and cls.__module__.startswith("streamflow.") and cls not in found:
            found.append(cls)
    return found


OPERATORS = _operator_classes()


def _gpu_impl_for(cls: type) -> bool:
    return any(klass in IMPLS for klass in cls.__mro__)


@pytest.mark.parametrize("cls", [c for c in OPERATORS if not issubclass(c, Source)], ids=lambda c: c.__name__)
def test_an_operator_declared_for_the_gpu_has_a_gpu_implementation(cls: type[Operator]) -> None:
    on_gpu = bool(cls.devices & {Device.GPU, Device.MIXED})
    assert on_gpu == _gpu_impl_for(cls), (
        f"{cls.__name__}.devices = {sorted(d.value for d in cls.devices)} but a GPU implementation "
        f"is {'missing' if on_gpu else 'registered'} in streamflow/gpu/ops/"
    )


def test_every_gpu_implementation_is_for_an_operator_declared_for_the_gpu() -> None:
    for cls in IMPLS:
        assert cls.devices & {Device.GPU, Device.MIXED}, f"{cls.__name__} has a GPU implementation but runs on the CPU only"


def test_every_operator_runs_on_the_cpu() -> None:
    """``device_id='auto'`` without a GPU moves every operator to the CPU."""
    assert [c.__name__ for c in OPERATORS if Device.CPU not in c.devices] == []


def _source():  # type: ignore[no-untyped-def]
    return fn.external_source([[np.zeros((4, 4, 3), np.uint8)]])


def test_device_follows_the_input_when_not_given() -> None:
    @sf.pipeline_def(batch_size=1, device_id="auto")
    def pipe():  # type: ignore[no-untyped-def]
        on_gpu = _source().gpu()
        flipped = fn.flip(on_gpu)  # no device: GPU input -> runs on the GPU, as in DALI
        assert flipped.device is Device.GPU and flipped.producer.op.device is Device.GPU
        host = fn.flip(_source())
        assert host.device is Device.CPU
        return flipped, host

    pipe()


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda: fn.readers.file(files=["a.jpg"], device="gpu"), "readers.file: device='gpu' is not supported"),
        (lambda: fn.resize(_source(), size=(2, 2), device="mixed"), "device='mixed' is not supported"),
        (lambda: fn.decoders.image(_source(), device="gpu"), "runs on 'cpu' or 'mixed'"),
        (lambda: fn.rotate(_source().gpu(), angle=3, device="cpu"), "is GPU data"),
        (lambda: fn.decoders.image(_source().gpu(), device="mixed"), "is GPU data"),
        (lambda: fn.flip(_source(), horizontal=_source().gpu()), "per-sample arguments must be CPU data"),
        (lambda: fn.flip(_source(), device="tpu"), "device"),
    ],
)
def test_device_errors_are_raised_where_the_operator_is_added(build, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PipelineDefinitionError, match=words.replace("(", r"\(").replace(")", r"\)")):
        build()


def test_a_dali_gpu_operator_without_a_gpu_implementation_runs_on_the_cpu_fallback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """grid_mask runs on the GPU in DALI: placed there as in DALI, it runs with device_id='auto' without a
    GPU, and on a GPU the build names it instead of computing something else."""

    def define():  # type: ignore[no-untyped-def]
        masked = fn.grid_mask(_source().gpu(), tile=2)
        assert masked.device is Device.GPU
        return fn.grid_mask(_source(), tile=2, device="gpu"), masked

    @sf.pipeline_def(batch_size=1, device_id="auto")
    def pipe():  # type: ignore[no-untyped-def]
        return define()

    monkeypatch.setattr("streamflow.pipeline._gpu_count", lambda: 0)
    with pytest.warns(sf.CpuFallbackWarning), pipe() as p:
        a, b = p.run()
    assert a.at(0).shape == (4, 4, 3) and b.at(0).shape == (4, 4, 3)
    monkeypatch.setattr("streamflow.pipeline._gpu_count", lambda: 1)
    with pytest.raises(PipelineDefinitionError, match="grid_mask cannot run on the GPU yet"):
        pipe().build()
