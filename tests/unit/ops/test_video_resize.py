"""``readers.video_resize``: DALI 2.4 runs it only on the GPU, so there is no DALI output; checked to be
``readers.video`` followed by ``resize`` of every frame (sizes, labels) on the project's VP9 clips."""

from __future__ import annotations

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn

pytest.importorskip("av")


def test_equals_reader_then_resize() -> None:
    from video_clips import DALI_CLIPS

    files = [str(DALI_CLIPS / "a.webm"), str(DALI_CLIPS / "b.webm")]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        small, labels = fn.video_reader_resize(filenames=files, labels=[3, 4], sequence_length=3, resize_x=40,
                                               resize_y=30)
        frames, labels2 = fn.readers.video(filenames=files, labels=[3, 4], sequence_length=3)
        return small, labels, fn.resize(frames, resize_x=40, resize_y=30), labels2

    with pipe() as p:
        small, labels, ref, labels2 = p.run()
    for i in range(2):
        assert np.asarray(small.at(i)).shape == (3, 30, 40, 3)
        assert np.array_equal(np.asarray(small.at(i)), np.asarray(ref.at(i)))
        assert np.array_equal(np.asarray(labels.at(i)), np.asarray(labels2.at(i)))
