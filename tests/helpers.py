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
BROKEN_JPEGS = [QUIRKS / "truncated_jpeg.jpg", QUIRKS / "junk_jpeg_header.jpg"]

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
