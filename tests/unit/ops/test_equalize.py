"""``equalize`` against DALI 2.4's recorded CPU outputs (tolerance: identical) and OpenCV's formula."""

from __future__ import annotations

import numpy as np
import pytest
from augment_refs import batch, images, max_diff
from helpers import make_chunk, run_arrays

import streamflow as sf
from streamflow import fn
from streamflow.ops.equalize import Equalize, equalize_luts


def run_layout(samples, layout):
    @sf.pipeline_def(batch_size=len(samples), num_threads=2, seed=1)
    def pipe():
        return fn.equalize(fn.external_source([list(samples)], layout=layout))

    with pipe() as p:
        (out,) = p.run()
        return [np.asarray(out.at(i)) for i in range(len(samples))]


def test_matches_dali() -> None:
    imgs = images("equalize")
    cases = {
        "hwc": (imgs, "HWC"),
        "hw": ([np.ascontiguousarray(im[..., 0]) for im in imgs], "HW"),
        "chw": ([np.ascontiguousarray(im.transpose(2, 0, 1)) for im in imgs], "CHW"),
        "flat": ([np.full((6, 7, 3), v, np.uint8) for v in (0, 37, 255)], "HWC"),
        "dark": ([(im // 8).astype(np.uint8) for im in imgs], "HWC"),
    }
    for key, (samples, layout) in cases.items():
        assert max_diff(run_layout(samples, layout), batch("equalize", key)) == 0, key


def test_lut_is_opencv_equalize_hist() -> None:
    hist = np.zeros((1, 256), np.int64)
    hist[0, [10, 20, 30]] = [5, 3, 2]
    lut = equalize_luts(hist)[0]
    assert lut[10] == 0 and lut[20] == round(255 * 3 / 5) and lut[30] == 255


def test_sequences_and_errors() -> None:
    rng = np.random.default_rng(0)
    seq = rng.integers(0, 120, (2, 5, 6, 3), dtype=np.uint8)
    (out,) = run_arrays([seq], fn.equalize)
    (frames,) = run_arrays(list(seq), fn.equalize)
    assert np.array_equal(out[0], np.stack(frames))
    chunk = make_chunk([np.zeros((3, 3), np.float32), np.zeros((2, 2, 2, 2, 2), np.uint8)])
    Equalize().run(chunk)
    assert "only uint8" in str(chunk.failures[0]) and "expected an HW, HWC or CHW" in str(chunk.failures[1])
    with pytest.raises(TypeError, match="unexpected keyword"):
        fn.equalize(None, strength=2)  # type: ignore[arg-type]
