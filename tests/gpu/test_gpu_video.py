"""Video decoding on the GPU (NVDEC through PyNvVideoCodec): frames close to the CPU decoder's,
same sequences, labels and errors. Needs a GPU and ``pip install pynvvideocodec``; never run
in CI (no GPU there), so these tests are the first check of ``codecs/nvdec.py`` on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
from video_clips import clip

import streamflow as sf
from streamflow import fn

pytestmark = pytest.mark.gpu
pytest.importorskip("PyNvVideoCodec")
pytest.importorskip("av")


def _read(device: str, name: str = "h264") -> list[np.ndarray]:
    path = str(clip(name))

    @sf.pipeline_def(batch_size=2, num_threads=2, device_id=0 if device == "gpu" else None, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        video, label = fn.readers.video(device=device, filenames=[path], labels=[3], sequence_length=4, step=7)
        return video, label

    with pipe() as p:
        video, label = p.run()
        assert [int(np.asarray(label.as_cpu().at(i))[0]) for i in range(2)] == [3, 3]
        return [np.asarray(video.as_cpu().at(i)) for i in range(2)]


@pytest.mark.parametrize("name", ["h264", "hevc"])
def test_nvdec_sequences_match_the_cpu_decoder(name: str) -> None:
    gpu, cpu = _read("gpu", name), _read("cpu", name)
    for g, c in zip(gpu, cpu):
        assert g.shape == c.shape and g.dtype == np.uint8
        # NVDEC's YUV -> RGB differs from swscale's in rounding and chroma filtering.
        assert np.abs(g.astype(int) - c.astype(int)).mean() < 3


def test_mixed_decoder_of_bytes() -> None:
    data = np.fromfile(clip("h264"), dtype=np.uint8)

    @sf.pipeline_def(batch_size=1, num_threads=2, device_id=0, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.decoders.video(fn.external_source([[data]]), device="mixed", frames=[3, 1, 40], pad_mode="edge")

    with pipe() as p:
        out = np.asarray(p.run()[0].as_cpu().at(0))
    assert out.shape == (3, 48, 64, 3)
    assert out[2].any()  # the last frame (edge padding of frame 40)
