"""``jpeg_compression_distortion`` against DALI 2.4's recorded CPU outputs (tolerance: identical)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from augment_refs import batch, images, max_diff
from helpers import make_chunk, run_arrays

from streamflow import fn
from streamflow.errors import MissingDependencyError
from streamflow.ops.jpeg_compression_distortion import JpegCompressionDistortion


@pytest.mark.parametrize("quality", [1, 10, 50, 95, 100])
def test_matches_dali(quality: int) -> None:
    (out,) = run_arrays(images("jpeg"), lambda x: fn.jpeg_compression_distortion(x, quality=quality))
    assert max_diff(out, batch("jpeg", f"q{quality}")) == 0


def test_default_per_sample_and_clamped_quality() -> None:
    imgs = images("jpeg")
    (out,) = run_arrays(imgs, fn.jpeg_compression_distortion)
    assert max_diff(out, batch("jpeg", "default")) == 0
    qs = [np.int32(v) for v in (5, 30, 80)]
    (out,) = run_arrays(imgs, lambda x, q: fn.jpeg_compression_distortion(x, quality=q), q=qs)
    assert max_diff(out, batch("jpeg", "per_sample")) == 0
    (low, high) = run_arrays(imgs[:1], lambda x: (fn.jpeg_compression_distortion(x, quality=-5),
                                                  fn.jpeg_compression_distortion(x, quality=1000)))
    assert max_diff(low, batch("jpeg", "q1")[:1]) == 0 and max_diff(high, batch("jpeg", "q100")[:1]) == 0


def test_errors_and_missing_pillow(monkeypatch: pytest.MonkeyPatch) -> None:
    chunk = make_chunk([np.zeros((4, 4), np.uint8), np.zeros((4, 4, 3), np.float32)])
    JpegCompressionDistortion().run(chunk)
    assert all("HWC uint8 RGB" in str(chunk.failures[i]) for i in (0, 1))
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(MissingDependencyError, match="pip install 'streamflow\\[augment\\]'"):
        JpegCompressionDistortion()
