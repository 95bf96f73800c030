"""``device="gpu"`` in dynamic mode: GPU implementations dispatched by the same path as a GPU stage's.

Without a GPU the dispatch runs on the kernels' host build (``GpuContext.on_host()``,
``executor.use_gpu_context``): each GPU implementation must give the CPU
operator's values, bit for bit, through ``dynamic`` calls. This checks the
dispatch (placement, upload, per-sample arguments, results), not a GPU.
The ``gpu``-marked tests run on a real device when there is one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import DECODER_FILES, rand_image

import streamflow.dynamic as ndd
from streamflow.dynamic.executor import use_gpu_context

IMGS = [rand_image(21, 17, seed=1), rand_image(9, 30, seed=2)]

CALLS: dict[str, Callable[..., Any]] = {
    "flip": lambda device: ndd.flip(IMGS, horizontal=ndd.as_batch([np.int32(1), np.int32(0)]), vertical=1,
                                    device=device),
    "resize": lambda device: ndd.resize(IMGS, size=(11, 13), device=device),
    "crop": lambda device: ndd.crop(IMGS, crop=(5, 6), crop_pos_x=0.3, device=device),
    "crop_mirror_normalize": lambda device: ndd.crop_mirror_normalize(
        IMGS, crop=(8, 8), mean=[1.0, 2.0, 3.0], std=[2.0, 3.0, 4.0], mirror=ndd.as_batch([np.int32(1), np.int32(0)]),
        device=device),
}


@pytest.fixture(scope="module")
def host_kernels() -> Any:
    from streamflow.gpu.context import GpuContext

    return GpuContext.on_host()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_gpu_dispatch_gives_the_cpu_values(name: str, host_kernels: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamflow.dynamic import executor

    found: list[str] = []
    real = executor.find_impl
    monkeypatch.setattr(executor, "find_impl", lambda op: (found.append(op.name), real(op))[1])
    want = CALLS[name]("cpu")
    assert not found
    with use_gpu_context(host_kernels):
        got = CALLS[name]("gpu")
    assert found == [name]  # the GPU implementation ran
    assert got.shape == want.shape and got.dtype == want.dtype
    for g, w in zip(got.tensors, want.tensors, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_gpu_inputs_choose_the_gpu(host_kernels: Any) -> None:
    """An operator without device= follows GPU data (the graph's rule); host data stays on the CPU."""
    from streamflow.dynamic.invoke import DynamicHook
    from streamflow.ops.flip import Flip
    from streamflow.types import Device

    op = Flip()
    op.place(DynamicHook().device(op, None), [Device.GPU])
    assert op.device is Device.GPU


@pytest.mark.gpu
def test_decode_on_the_gpu_with_dalis_device_name() -> None:
    data = [f.read_bytes() for f in DECODER_FILES[:2]]
    gpu = ndd.decoders.image(data, device="gpu")  # DALI's dynamic name for the mixed decoder
    cpu = ndd.decoders.image(data)
    assert gpu.device.value == "gpu"
    for g, c in zip(gpu.cpu().tensors, cpu.tensors, strict=True):
        assert np.abs(np.asarray(g).astype(int) - np.asarray(c).astype(int)).mean() < 2  # GPU IDCT vs CPU


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CALLS))
def test_gpu_calls_on_a_device(name: str) -> None:
    want = CALLS[name]("cpu")
    got = CALLS[name]("gpu")
    assert got.device.value == "gpu"
    for g, w in zip(got.cpu().tensors, want.tensors, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
