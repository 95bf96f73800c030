"""Helpers the tests share: run an operator in a one-batch pipeline, make images and chunks.

Importable from every test module (``tests/conftest.py`` puts this folder on
``sys.path``): ``from helpers import run_batch, run_arrays, rand_image``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import streamflow as sf
from streamflow import fn
from streamflow._native import imgproc
from streamflow.operator import Chunk, RandomKey

DATA = Path(__file__).parent / "data"
QUIRKS = DATA / "jpeg-quirks"
PHOTOS = DATA / "photos"

#: Real JPEGs that every decoder must handle (see tests/data/README.md).
GOOD_JPEGS = [
    QUIRKS / "hopper.jpg",
    QUIRKS / "flower2.jpg",
    QUIRKS / "pil_sample_rgb.jpg",
    QUIRKS / "hopper_16bit_qtables.jpg",
    PHOTOS / "rocket.jpg",
    PHOTOS / "retina.jpg",
]
CORPUS = DATA / "pillow-corpus"
#: Real files no decoder reads (nvImageCodec nor the Pillow fallback): a JPEG
#: cut short, and a PNG whose header is garbage (fails before any decode).
BROKEN_JPEGS = [QUIRKS / "truncated_jpeg.jpg", CORPUS / "broken.png"]

#: Real images for the region decoders: windows of EXIF-rotated JPEGs are in oriented coordinates.
DECODER_FILES = [
    DATA / "photos" / "rocket.jpg",
    DATA / "jpeg-quirks" / "hopper_orientation_6.jpg",
    DATA / "jpeg-quirks" / "hopper_orientation_3.jpg",
    DATA / "photos" / "chelsea.png",
]


def run_batch(samples: list[Any], build: Callable[..., Any], batch_size: int | None = None,
              seed: int = 3, **pipe_kw: Any) -> sf.Batch:
    """One batch of ``build(node)`` over ``samples`` fed through ``external_source``."""
    batch_size = batch_size or len(samples)

    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=seed, **pipe_kw)
    def pipe():  # type: ignore[no-untyped-def]
        return build(fn.external_source([list(samples)]))

    with pipe() as p:
        return p.run()


def run_arrays(samples: list[Any], build: Callable[..., Any], seed: int = 3,
               **extra_sources: list[Any]) -> list[list[np.ndarray]]:
    """``build(node, **nodes)`` once over ``samples``: per output, the samples as numpy arrays.

    Each keyword becomes one more external source (a per-sample argument).
    """

    @sf.pipeline_def(batch_size=len(samples), num_threads=2, seed=seed)
    def pipe():  # type: ignore[no-untyped-def]
        nodes = {k: fn.external_source([list(v)]) for k, v in extra_sources.items()}
        out = build(fn.external_source([list(samples)]), **nodes)
        return out if isinstance(out, tuple) else (out,)

    with pipe() as p:
        return [[np.asarray(t.at(i)) for i in range(len(samples))] for t in p.run()]


def rand_image(h: int = 23, w: int = 31, c: int = 3, seed: int = 0) -> np.ndarray:
    """A uint8 HWC image of uniform noise."""
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def make_chunk(samples: list[Any], args: dict[str, list[Any]] | None = None) -> Chunk:
    """A chunk as the engine hands it to an operator: one input, per-sample arguments."""
    n = len(samples)
    return Chunk(inputs=[list(samples)], args=dict(args or {}), sample_ids=np.arange(n, dtype=np.int64),
                 sources=[f"sample{i}" for i in range(n)], epoch=0, key=RandomKey(7, 3))


def odd_images(rng: np.random.Generator, n: int, channels: int = 3, dtype: Any = np.uint8,
               lo: int = 5, hi: int = 301) -> list[np.ndarray]:
    """Random images of odd (and varied) sizes; ``channels=0`` gives HW images."""
    out = []
    for _ in range(n):
        h, w = (int(rng.integers(lo, hi)) | 1 for _ in range(2))
        shape = (h, w, channels) if channels else (h, w)
        if np.dtype(dtype) == np.uint8:
            out.append(rng.integers(0, 256, shape, dtype=np.uint8))
        else:
            out.append((rng.random(shape) * 255).astype(dtype))
    return out


def smooth_image(h: int, w: int, seed: int = 0) -> np.ndarray:
    """A smooth photo-like image (interpolation differences stay small on it)."""
    small = rand_image(max(2, h // 8), max(2, w // 8), seed=seed)
    return imgproc.resample(small, (h, w), antialias=False)


def folder_with_bad_file(tmp_path: Path) -> Path:
    """root/a/ with one good JPEG, a truncated one and one with a junk body."""
    root = tmp_path / "imgs"
    (root / "a").mkdir(parents=True)
    shutil.copy(DECODER_FILES[0], root / "a" / "good.jpg")
    shutil.copy(DATA / "jpeg-quirks" / "truncated_jpeg.jpg", root / "a" / "bad.jpg")
    (root / "a" / "junk.jpg").write_bytes(b"\xff\xd8\xff" + b"\x00" * 50)
    return root


def run_gpu_impl(ctx: Any, op: Any, samples: list[np.ndarray], args: dict[str, list[Any]] | None = None
                 ) -> tuple[list[np.ndarray | None], dict[int, Any]]:
    """Run ``op``'s GPU implementation on ``samples`` through ``ctx``: (outputs as numpy, failures)."""
    from streamflow.gpu.ops import find_impl

    impl = find_impl(op)
    assert impl is not None, f"no GPU implementation for {op.name}"
    with ctx.activate():
        chunk = make_chunk(ctx.to_device(samples), args)
        out = impl(op, chunk, ctx)[0]
    ctx.synchronize()
    return [None if o is None else ctx.to_host(o) for o in out], chunk.failures


def run_cpu_op(op: Any, samples: list[np.ndarray], args: dict[str, list[Any]] | None = None
               ) -> tuple[list[np.ndarray | None], dict[int, Any]]:
    """Run ``op``'s CPU implementation on ``samples``: (outputs, failures).

    As the engine does, a chunk that raises is run again sample by sample and
    the samples that raise fail alone.
    """
    chunk = make_chunk(samples, args)
    try:
        return op.run(chunk)[0], chunk.failures
    except Exception:
        pass
    out: list[Any] = []
    failures: dict[int, Any] = {}
    for i, sample in enumerate(samples):
        one = make_chunk([sample], {k: [v[i]] for k, v in (args or {}).items()})
        try:
            value = op.run(one)[0][0]
        except Exception as err:
            one.fail(0, err)
            value = None
        if one.failures:
            failures[i] = one.failures[0]
        out.append(value)
    return out, failures


def assert_same_outputs(got: list[Any], want: list[Any], what: str) -> None:
    """Bit-identical outputs (NaNs equal), sample by sample."""
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None), f"{what} sample {i}: one side failed"
        if g is None:
            continue
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what} sample {i}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
        if not np.array_equal(g, w, equal_nan=np.issubdtype(g.dtype, np.floating)):
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            raise AssertionError(f"{what} sample {i}: {int((diff > 0).sum())} values differ, max {diff.max()}")


def assert_gpu_equals_cpu(ctx: Any, op: Any, samples: list[np.ndarray], args: dict[str, list[Any]] | None = None,
                          what: str = "") -> list[np.ndarray | None]:
    """``op``'s GPU implementation (through ``ctx``) fails no sample and gives its CPU outputs bit for
    bit (``assert_same_outputs``); returns the GPU outputs."""
    gpu, gpu_failures = run_gpu_impl(ctx, op, samples, args)
    cpu, cpu_failures = run_cpu_op(op, samples, args)
    assert not gpu_failures and not cpu_failures, f"{what}: GPU failures {gpu_failures}, CPU failures {cpu_failures}"
    assert_same_outputs(gpu, cpu, what)
    return gpu


def run_decoders(encoded: list[Any], build: Callable[..., Any], **pipe_kw: Any) -> sf.Batch:
    """One batch of ``build(node)`` over encoded images (the decoder tests' seed)."""
    return run_batch(encoded, build, seed=11, **pipe_kw)


def run_gpu_outputs(ctx: Any, op: Any, inputs: list[list[Any]], args: dict[str, list[Any]] | None = None
                    ) -> tuple[list[list[np.ndarray | None]], dict[int, Any]]:
    """Every output of ``op``'s GPU implementation over several inputs (one list of samples per
    input) through ``ctx``: (per output, the samples as numpy; failures)."""
    from streamflow.gpu.ops import find_impl

    impl = find_impl(op)
    assert impl is not None, f"no GPU implementation for {op.name}"
    with ctx.activate():
        chunk = make_chunk(ctx.to_device(inputs[0]), args)
        chunk.inputs.extend(ctx.to_device(samples) for samples in inputs[1:])
        outs = impl(op, chunk, ctx)
    ctx.synchronize()
    return [[None if o is None else ctx.to_host(o) for o in out] for out in outs], chunk.failures


def recorded_operator(build: Callable[..., Any], inputs: list[list[Any]]) -> tuple[Any, list[list[Any]], dict[str, list[Any]]]:
    """The operator that a recorded DALI case's ``build(fn, types, *nodes)`` adds last, with its inputs
    and per-sample arguments taken from the case's recorded ``inputs`` (each must come straight from
    one of them)."""
    sources = [fn.external_source(source=[list(s)], batch=True, cycle=False) for s in inputs]
    out = build(fn, sf.types, *sources)
    node = (out[-1] if isinstance(out, (tuple, list)) else out).producer
    where = {id(s): i for i, s in enumerate(sources)}
    op_inputs = [list(inputs[where[id(d)]]) for d in node.inputs]
    args = {k: list(inputs[where[id(d)]]) for k, d in node.arg_inputs.items()}
    return node.op, op_inputs, args


def run_sequences(samples: list[Any], build: Callable[..., Any], layout: str = "FHWC",
                  **extra_sources: list[Any]) -> list[list[np.ndarray]]:
    """``run_arrays`` for sequences: ``samples`` fed with ``layout`` (default FHWC); each keyword is one more
    external source (wrap it in ``fn.per_frame`` in ``build`` for per-frame arguments)."""

    @sf.pipeline_def(batch_size=len(samples), num_threads=2, device_id=None, seed=3)
    def pipe():  # type: ignore[no-untyped-def]
        nodes = {k: fn.external_source([list(v)]) for k, v in extra_sources.items()}
        out = build(fn.external_source([list(samples)], layout=layout), **nodes)
        return out if isinstance(out, tuple) else (out,)

    with pipe() as p:
        return [[np.asarray(t.at(i)) for i in range(len(samples))] for t in p.run()]
