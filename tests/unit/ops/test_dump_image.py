"""``dump_image``: the files it writes are byte-for-byte DALI 2.4's (recorded by
``record_breadth.py``: names ``<position>-<suffix>-0.ppm`` in the working directory, plain-text
PPM/PGM), and the images pass through unchanged."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from dali_reference.breadth_cases import REFERENCE
from helpers import run_arrays

from streamflow import fn


def test_files_equal_dalis(tmp_path, monkeypatch) -> None:
    sys.path.insert(0, str(REFERENCE.parent.parent.parent / "dali_reference"))
    from record_breadth import dump_image_inputs

    images = dump_image_inputs()
    monkeypatch.chdir(tmp_path)
    out = run_arrays(images, lambda x: fn.dump_image(x, suffix="dbg"))[0]
    assert all(np.array_equal(o, i) for o, i in zip(out, images))
    want = json.loads((REFERENCE / "dump_image.json").read_text())
    got = {p.name: p.read_text() for p in sorted(tmp_path.iterdir())}
    assert got == want


def test_chw_and_bad_images(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(3, 2, 3)  # CHW: 3 channels of 2 x 3
    run_arrays([img], lambda x: fn.dump_image(x, input_layout="CHW"))
    assert (tmp_path / "0--0.ppm").read_text().startswith("P3\n3 2\n255\n0 6 12 1 7 13 ")
    with pytest.raises(Exception, match="1 or 3 channels"):
        run_arrays([np.zeros((2, 2, 2), np.uint8)], lambda x: fn.dump_image(x))
    with pytest.raises(Exception, match="uint8"):
        run_arrays([np.zeros((2, 2, 3), np.float32)], lambda x: fn.dump_image(x))
