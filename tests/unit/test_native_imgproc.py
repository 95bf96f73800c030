"""The C extension as a whole: its calls release the GIL.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from streamflow._native import imgproc as K

pytestmark = pytest.mark.skipif(not K.native_available(), reason="C extension not built")


def _img(rng: np.random.Generator, h: int, w: int, c: int | None, dtype=np.uint8) -> np.ndarray:
    shape = (h, w) if c is None else (h, w, c)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.random(shape, dtype=np.float32)


def test_threads_release_gil() -> None:
    rng = np.random.default_rng(0)
    src = _img(rng, 300, 400, 3)
    want = K.resample(src, (128, 128))
    results: list[bool] = []

    def work() -> None:
        for _ in range(5):
            results.append(np.array_equal(K.resample(src, (128, 128)), want))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 20
