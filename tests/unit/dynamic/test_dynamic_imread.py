"""``ndd.imread`` (DALI's dynamic-mode file reading + decoding, used by its dynamic-mode tutorials)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import streamflow.experimental.dynamic as ndd
from streamflow import types

PHOTOS = Path(__file__).resolve().parents[2] / "data" / "photos"


def test_imread_path_gives_a_tensor_a_list_a_batch() -> None:
    one = ndd.imread(PHOTOS / "chelsea.png")
    assert isinstance(one, ndd.Tensor) and one.shape == (300, 451, 3) and one.layout == "HWC"
    same = ndd.decoders.image((PHOTOS / "chelsea.png").read_bytes())
    np.testing.assert_array_equal(np.asarray(one.cpu()), np.asarray(same))
    many = ndd.imread([str(PHOTOS / "chelsea.png"), PHOTOS / "coffee.png"])
    assert isinstance(many, ndd.Batch) and [np.asarray(t).shape for t in many] == [(300, 451, 3), (400, 600, 3)]
    gray = ndd.imread(str(PHOTOS / "coffee.png"), output_type=types.GRAY)
    assert gray.shape == (400, 600, 1)
    encoded_path = ndd.as_tensor(np.frombuffer(str(PHOTOS / "chelsea.png").encode(), np.uint8))
    np.testing.assert_array_equal(np.asarray(ndd.imread(encoded_path)), np.asarray(one))


def test_imread_names_a_missing_file() -> None:
    with pytest.raises(FileNotFoundError, match="imread: cannot read .*nope.png"):
        ndd.imread(PHOTOS / "nope.png")
