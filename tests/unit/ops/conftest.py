"""Fixtures of the operator tests: encoded real images and their full decodes, kernel contexts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import DATA, DECODER_FILES

from streamflow.codecs import ImageDecoder


@pytest.fixture(scope="module")
def encoded() -> list[np.ndarray]:
    return [np.frombuffer(f.read_bytes(), dtype=np.uint8) for f in DECODER_FILES]


@pytest.fixture(scope="module")
def full(encoded: list[np.ndarray]) -> list[np.ndarray]:
    dec = ImageDecoder()
    return [dec.decode(e) for e in encoded]


@pytest.fixture(scope="session")
def shards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The reference samples written in every shard format (``shard_writers.build_reference``): paths
    by format. Shared by the shard readers' tests, which only read them (damaged copies go to ``tmp_path``)."""
    import shard_writers

    return shard_writers.build_reference(tmp_path_factory.mktemp("shards"), DATA)


_CONTEXTS: dict[str, Any] = {}


@pytest.fixture(params=["host", pytest.param("device", marks=pytest.mark.gpu)])
def kernel_ctx(request: pytest.FixtureRequest) -> Any:
    """A GpuContext for the GPU implementations: the kernels' host build, and a real GPU when present.

    The host build checks the kernels' arithmetic on the CPU (under
    AddressSanitizer when ``STREAMFLOW_HOST_KERNELS_ASAN=1``); only the
    ``device`` case is a GPU test.
    """
    from streamflow.gpu.context import GpuContext

    kind = request.param
    if kind not in _CONTEXTS:
        if kind == "host":
            _CONTEXTS[kind] = GpuContext.on_host(sanitize=os.environ.get("STREAMFLOW_HOST_KERNELS_ASAN") == "1")
        else:
            _CONTEXTS[kind] = GpuContext.on_device(0)
    return _CONTEXTS[kind]


@pytest.fixture(params=["wide", "tiny"])
def grid(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Launch geometry: the default, or one block of one thread (every grid-stride loop wraps)."""
    if request.param == "tiny":
        from streamflow.gpu import context

        monkeypatch.setattr(context, "BLOCK", 1)
        monkeypatch.setattr(context, "MAX_ROW_BLOCKS", 1)
    return str(request.param)


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    """A real photo (the package's demo images), reduced to keep the tests fast."""
    from PIL import Image

    import streamflow as sf

    path = sorted((Path(sf.__file__).parent / "demo" / "images").glob("*/*"))[0]
    with Image.open(path) as im:
        im = im.convert("RGB")
        im.thumbnail((160, 160))
        return np.asarray(im)
