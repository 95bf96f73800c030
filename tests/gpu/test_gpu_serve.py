"""DynamicBatcher over a GPU pipeline: mixed decoding and GPU operators, one request at a time."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from helpers import BROKEN_JPEGS, GOOD_JPEGS

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import SampleError
from streamflow.serve import DynamicBatcher

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(120)]

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def _definition(device: str):  # type: ignore[no-untyped-def]
    decode = "mixed" if device == "gpu" else "cpu"

    @sf.pipeline_def(num_threads=2, device_id=0 if device == "gpu" else None, seed=0)
    def preprocess(jpegs):  # type: ignore[no-untyped-def]
        images = fn.decoders.image(jpegs, device=decode, output_type=types.RGB)
        images = fn.resize(images, resize_x=64, resize_y=64, device=device)
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT, mean=MEAN, std=STD, device=device)

    return preprocess


async def _answers(device: str, inputs: list[bytes], **kw):  # type: ignore[no-untyped-def]
    async with DynamicBatcher(_definition(device), max_batch_size=8, max_delay=0.02, **kw) as batcher:
        results = await asyncio.gather(*(batcher.submit(x) for x in inputs), return_exceptions=True)
        return results, batcher.stats()


def test_gpu_batcher_matches_the_cpu_batcher_and_isolates_a_bad_request() -> None:
    import cupy as cp

    data = [p.read_bytes() for p in GOOD_JPEGS] * 2
    bad = BROKEN_JPEGS[1].read_bytes()  # a garbage header: no decoder takes it
    gpu, gpu_stats = asyncio.run(_answers("gpu", [*data[:3], bad, *data[3:]]))
    cpu, _ = asyncio.run(_answers("cpu", data))
    assert isinstance(gpu[3], SampleError)  # only the bad request fails
    gpu_good = gpu[:3] + gpu[4:]
    assert all(isinstance(x, cp.ndarray) and x.shape == (3, 64, 64) for x in gpu_good)
    for g, c in zip(gpu_good, cpu):
        # GPU decoding (nvJPEG) and the CPU's libjpeg-turbo differ by a few levels
        assert np.abs(cp.asnumpy(g) - c).mean() < 0.05
    assert gpu_stats.ok == len(data) and gpu_stats.failed == 1
    assert gpu_stats.batches < len(data)  # concurrent requests shared batches


def test_gpu_batcher_postprocess_runs_torch_on_the_batch() -> None:
    torch = pytest.importorskip("torch")

    def model(outputs):  # type: ignore[no-untyped-def]
        batch = torch.from_dlpack(outputs[0].as_tensor())  # zero copy, on the GPU
        assert batch.is_cuda
        return batch.mean(dim=(1, 2, 3)).tolist()

    data = [p.read_bytes() for p in GOOD_JPEGS]
    results, stats = asyncio.run(_answers("gpu", data, postprocess=model))
    assert all(isinstance(r, float) for r in results) and stats.ok == len(data)
