"""GPU test helpers (fixtures imported by the test modules): run one operator on the GPU and on the CPU reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from streamflow.ops.base import Chunk, RandomKey


def make_chunk(images: list[Any], args: dict[str, list[Any]] | None = None) -> Chunk:
    n = len(images)
    return Chunk(inputs=[list(images)], args=dict(args or {}), sample_ids=np.arange(n, dtype=np.int64),
                 sources=[f"sample{i}" for i in range(n)], epoch=0, key=RandomKey(7, 3))


_CTX: list[Any] = []


def gpu_ctx() -> Any:
    """One GpuContext (stream, staging, tables) shared by the operator tests."""
    if not _CTX:
        from streamflow.gpu.ops import GpuContext

        _CTX.append(GpuContext(0))
    return _CTX[0]


def run_both(op: Any, images: list[np.ndarray], args: dict[str, list[Any]] | None = None):
    """(gpu outputs as numpy, cpu outputs, gpu failures, cpu failures) of one operator on one batch."""
    import cupy as cp

    from streamflow.gpu.ops import find_impl

    ctx = gpu_ctx()
    cpu_chunk = make_chunk(images, args)
    cpu = op.run(cpu_chunk)[0]
    impl = find_impl(op)
    assert impl is not None, f"no GPU implementation for {op.name}"
    with ctx.stream.device, ctx.stream.stream:
        gpu_chunk = make_chunk([cp.asarray(i) for i in images], args)
        out = impl(op, gpu_chunk, ctx)[0]
    ctx.stream.stream.synchronize()
    gpu = [None if o is None else cp.asnumpy(o) for o in out]
    return gpu, cpu, gpu_chunk.failures, cpu_chunk.failures


def odd_images(rng: np.random.Generator, n: int, channels: int = 3, dtype: Any = np.uint8,
               lo: int = 5, hi: int = 301) -> list[np.ndarray]:
    """Random images of odd (and varied) sizes."""
    out = []
    for _ in range(n):
        h, w = (int(rng.integers(lo, hi)) | 1 for _ in range(2))
        shape = (h, w, channels) if channels else (h, w)
        if np.dtype(dtype) == np.uint8:
            out.append(rng.integers(0, 256, shape, dtype=np.uint8))
        else:
            out.append((rng.random(shape) * 255).astype(dtype))
    return out


# The real JPEGs of tests/conftest.py (that module is shadowed by tests/gpu/conftest.py here).
_DATA = Path(__file__).resolve().parent.parent / "data"
GOOD_JPEGS = [
    _DATA / "jpeg-quirks" / "hopper.jpg",
    _DATA / "jpeg-quirks" / "flower2.jpg",
    _DATA / "jpeg-quirks" / "pil_sample_rgb.jpg",
    _DATA / "jpeg-quirks" / "hopper_16bit_qtables.jpg",
    _DATA / "photos" / "rocket.jpg",
    _DATA / "photos" / "retina.jpg",
]
BROKEN_JPEGS = [_DATA / "jpeg-quirks" / "truncated_jpeg.jpg", _DATA / "jpeg-quirks" / "junk_jpeg_header.jpg"]
