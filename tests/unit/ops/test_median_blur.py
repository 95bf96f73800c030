"""``experimental.median_blur`` (CPU; DALI 2.4 has it on the GPU only) against a numpy reference.

Tolerance: identical (the median picks one of the input values).
"""

from __future__ import annotations

import numpy as np
import pytest
from augment_refs import images
from helpers import make_chunk, run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.median_blur import MedianBlur


def ref_median(img: np.ndarray, wh: int, ww: int) -> np.ndarray:
    img3 = img[:, :, None] if img.ndim == 2 else img
    pad = np.pad(img3, ((wh // 2, wh // 2), (ww // 2, ww // 2), (0, 0)), mode="edge")
    win = np.lib.stride_tricks.sliding_window_view(pad, (wh, ww), axis=(0, 1))
    out = np.median(win.reshape(*win.shape[:3], -1), axis=-1).astype(img.dtype)
    return out[:, :, 0] if img.ndim == 2 else out


@pytest.mark.parametrize("window", [(3, 3), (5, 5), (3, 7), (1, 5)])
def test_matches_numpy_on_photos(window: tuple[int, int]) -> None:
    imgs = images("filters")
    (out,) = run_arrays(imgs, lambda x: fn.experimental.median_blur(x, window_size=window))
    for o, im in zip(out, imgs):
        assert np.array_equal(o, ref_median(im, *window))


def test_types_layouts_and_per_sample_windows() -> None:
    rng = np.random.default_rng(2)
    f = rng.normal(size=(9, 11)).astype(np.float32)
    i16 = rng.integers(-3000, 3000, (9, 11, 2)).astype(np.int16)
    (out,) = run_arrays([f], lambda x: fn.experimental.median_blur(x, window_size=5))
    assert np.array_equal(out[0], ref_median(f, 5, 5))
    wins = [np.array([3, 3], np.int32), np.array([5, 1], np.int32)]
    (out,) = run_arrays([i16, i16], lambda x, w: fn.experimental.median_blur(x, window_size=w), w=wins)
    assert np.array_equal(out[0], ref_median(i16, 3, 3)) and np.array_equal(out[1], ref_median(i16, 5, 1))


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="odd positive integers"):
        MedianBlur(window_size=4)
    chunk = make_chunk([np.zeros((4, 4), np.int32)])
    MedianBlur().run(chunk)
    assert "does not support int32" in str(chunk.failures[0])
