"""Fixtures of the operator tests: encoded real images and their full decodes."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import DECODER_FILES

from streamflow.codecs import ImageDecoder


@pytest.fixture(scope="module")
def encoded() -> list[np.ndarray]:
    return [np.frombuffer(f.read_bytes(), dtype=np.uint8) for f in DECODER_FILES]


@pytest.fixture(scope="module")
def full(encoded: list[np.ndarray]) -> list[np.ndarray]:
    dec = ImageDecoder()
    return [dec.decode(e) for e in encoded]
