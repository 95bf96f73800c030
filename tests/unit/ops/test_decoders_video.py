"""``decoders.video`` / ``experimental.decoders.video``: encoded bytes in, FHWC frames out.

Against DALI 2.4's CPU decoder (13 recorded cases: frame selection, strides,
every pad mode, fill values, MJPEG, lossless VP9): shapes and frames bit for
bit. Against PyAV decoding the clip directly for H.264 and HEVC (DALI 2.4
decodes those only on the GPU).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from dali_reference.video_cases import frame_hashes
from helpers import run_batch
from video_clips import DALI_CLIPS, clip, reference_frames

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError, PipelineError

pytest.importorskip("av")

REFERENCE = json.loads((DALI_CLIPS / "reference.json").read_text())["decoders"]


def encoded(path: Any) -> np.ndarray:
    return np.fromfile(path, dtype=np.uint8)


@pytest.mark.parametrize("case", range(len(REFERENCE)))
def test_decoder_matches_dali(case: int) -> None:
    ref = REFERENCE[case]
    batch = run_batch([encoded(DALI_CLIPS / ref["clip"])], lambda x: fn.decoders.video(x, **ref["kwargs"]))
    video = np.asarray(batch[0].at(0))
    assert list(video.shape) == ref["shape"] and video.dtype == np.uint8
    assert frame_hashes(video) == ref["frames"]


@pytest.mark.parametrize("name", ["h264", "hevc", "h264_lossless"])
def test_h264_and_hevc_bytes_decode_as_pyav_does(name: str) -> None:
    ref = reference_frames(clip(name))
    batch = run_batch([encoded(clip(name))] * 2, lambda x: fn.experimental.decoders.video(x, frames=[29, 3, 3, 17]))
    for i in range(2):
        np.testing.assert_array_equal(np.asarray(batch[0].at(i)), ref[[29, 3, 3, 17]])


def test_per_sample_ranges_and_readers_file_input(tmp_path: Any) -> None:
    for i, name in enumerate(["h264", "vp9"]):
        (tmp_path / f"{i}.bin").write_bytes(clip(name).read_bytes())
    starts = [np.int32(5), np.int32(20)]

    @sf.pipeline_def(batch_size=2, num_threads=2, device_id=None, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        data, _ = fn.readers.file(files=[str(tmp_path / "0.bin"), str(tmp_path / "1.bin")])
        start = fn.external_source([starts])
        return fn.decoders.video(data, start_frame=start, sequence_length=4, stride=2, pad_mode="edge")

    with pipe() as p:
        out = p.run()[0]
    np.testing.assert_array_equal(np.asarray(out.at(0)), reference_frames(clip("h264"))[[5, 7, 9, 11]])
    np.testing.assert_array_equal(np.asarray(out.at(1)), reference_frames(clip("vp9"))[[20, 22, 24, 25]])


def test_bad_bytes_and_bad_arguments() -> None:
    junk = np.frombuffer(b"\x1a\x45\xdf\xa3" + bytes(range(200)) * 3, dtype=np.uint8)
    good = encoded(DALI_CLIPS / "b.webm")
    with pytest.raises(PipelineError, match="cannot open the video"):
        run_batch([good, junk], lambda x: fn.decoders.video(x))
    batch = run_batch([good, junk, good], lambda x: fn.decoders.video(x, sequence_length=2), on_error="skip")
    assert len(batch[0]) == 2  # external_source cannot re-read: the bad row is dropped
    with pytest.raises(PipelineError, match="past the end"):
        run_batch([good], lambda x: fn.decoders.video(x, frames=[1, 30], pad_mode="none"))
    with pytest.raises(PipelineError, match="outside the video"):
        run_batch([good], lambda x: fn.decoders.video(x, start_frame=27, sequence_length=2))
    with pytest.raises(PipelineDefinitionError, match="cannot be combined"):
        run_batch([good], lambda x: fn.decoders.video(x, frames=[1], stride=2))
    with pytest.raises(PipelineDefinitionError, match="fill_value"):
        run_batch([good], lambda x: fn.decoders.video(x, fill_value=[1, 2]))


@pytest.mark.parametrize("name", ["h264", "hevc", "vp9", "mjpeg", "h264_lossless"])
def test_damaged_bytes_give_a_decode_error_or_frames_never_a_crash(name: str) -> None:
    """Bytes flipped all over a clip (headers spared): each decode either succeeds or fails with a
    DecodeError naming the sample; nothing else escapes, nothing hangs."""
    from streamflow.codecs.video import VideoDecoder
    from streamflow.errors import DecodeError

    data = encoded(clip(name))
    rng = np.random.default_rng(len(name))
    for trial in range(6):
        damaged = data.copy()
        where = rng.integers(200, len(data), size=int(rng.integers(1, 40)))
        damaged[where] ^= rng.integers(1, 256, size=len(where)).astype(np.uint8)
        try:
            decoder = VideoDecoder(damaged, f"trial{trial}")
            out = decoder.decode(np.arange(decoder.index.num_frames))
            assert out.shape[1:] == (48, 64, 3)
        except DecodeError as err:
            assert f"trial{trial}" in str(err)
