"""``readers.video`` and ``experimental.readers.video``: sequences, labels, frame numbers, timestamps,
sharding, seeking and damaged files.

Against DALI 2.4's CPU reader (``experimental.readers.video``; recorded by
``tests/dali_reference/record_video.py`` on VP9/MJPEG clips): the same samples
in the same order, labels, frame numbers, timestamps (1e-9) and frames bit for
bit. Against PyAV decoding the clip directly: frames bit for bit for H.264,
HEVC, VP9 and MJPEG; lossless clips within 2 levels of the source frames.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dali_reference.video_cases import frame_hashes, layout
from video_clips import DALI_CLIPS, clip, frames, psnr, reference_frames

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError, PipelineError
from streamflow.ops.readers.video import VideoFileWarning

pytest.importorskip("av")

REFERENCE = json.loads((DALI_CLIPS / "reference.json").read_text())


def read_all(build: Any, batch_size: int | None = None, **pipe_kw: Any) -> list[list[np.ndarray]]:
    """Every sample of one epoch of the reader ``build()`` makes: per output, the samples."""

    @sf.pipeline_def(batch_size=batch_size or 1, num_threads=2, device_id=None, seed=5, **pipe_kw)
    def pipe():  # type: ignore[no-untyped-def]
        out = build()
        return out if isinstance(out, tuple) else (out,)

    columns: list[list[np.ndarray]] | None = None
    with pipe() as p:
        for batch in p.iter():
            if columns is None:
                columns = [[] for _ in batch]
            for col, tl in zip(columns, batch):
                col.extend(np.asarray(tl.at(i)) for i in range(len(tl)))
    assert columns is not None
    return columns


@pytest.mark.parametrize("case", range(len(REFERENCE["readers"])))
def test_experimental_reader_matches_dali(case: int, tmp_path: Path) -> None:
    ref = REFERENCE["readers"][case]
    paths = layout(tmp_path)
    kwargs = dict(ref["kwargs"])
    if "filenames" in kwargs:
        kwargs["filenames"] = [str(DALI_CLIPS / f) for f in kwargs["filenames"]]
    if "file_root" in kwargs:
        kwargs["file_root"] = paths["root"]
    if "file_list" in kwargs:
        kwargs["file_list"] = paths[kwargs["file_list"]]
    cols = read_all(lambda: fn.experimental.readers.video(**kwargs, name="R"), batch_size=4)
    assert len(cols[0]) == ref["epoch_size"]
    has_labels = any(k in kwargs for k in ("labels", "file_root", "file_list"))
    for i, sample in enumerate(ref["samples"]):
        video = cols[0][i]
        assert list(video.shape) == sample["shape"] and video.dtype == np.uint8
        assert frame_hashes(video) == sample["frames"], f"sample {i}: frames differ from DALI's"
        k = 1
        if has_labels:
            assert cols[k][i].tolist() == sample["label"] and cols[k][i].dtype == np.int32
            k += 1
        if "frame_num" in sample:
            assert cols[k][i].tolist() == sample["frame_num"] and cols[k][i].dtype == np.int32
            k += 1
        if "timestamps" in sample:
            assert cols[k][i].dtype == np.float64
            np.testing.assert_allclose(cols[k][i], sample["timestamps"], atol=1e-9)
        assert len(cols) == k + ("timestamps" in sample)


@pytest.mark.parametrize("name", ["h264_lossless", "h264", "hevc", "vp9_lossless", "mjpeg"])
def test_frames_match_a_direct_pyav_decode(name: str) -> None:
    path = clip(name)
    ref = reference_frames(path)
    cols = read_all(lambda: fn.experimental.readers.video(filenames=[str(path)], sequence_length=3, step=7, stride=2,
                                                          enable_frame_num="sequence", labels=[1]), batch_size=2)
    videos, labels, numbers = cols
    assert len(videos) == len(range(0, len(ref) - 6 + 1, 7))
    for video, label, frame_num in zip(videos, labels, numbers):
        assert label.tolist() == [1]
        np.testing.assert_array_equal(video, ref[frame_num])
    src = frames(len(ref))
    for video, frame_num in zip(videos, numbers):
        if "lossless" in name:  # only RGB <-> YUV rounding
            assert np.abs(video.astype(int) - src[frame_num]).max() <= 2
        for k, f in enumerate(frame_num):  # each frame is nearest to its own source frame
            scores = [psnr(video[k], s) for s in src]
            assert int(np.argmax(scores)) == f and scores[f] > 18, (name, f)


def test_legacy_reader_cuts_sequences_as_dali_does() -> None:
    # 26 frames, sequence_length 8, default step 8: 0, 8, 16 (16 + 7 < 26); pad_sequences adds 24.
    b = str(DALI_CLIPS / "b.webm")
    ref = reference_frames(b)
    videos, labels, numbers, stamps = read_all(lambda: fn.readers.video(
        filenames=[b], labels=[], sequence_length=8, pad_sequences=True, enable_frame_num="sequence",
        enable_timestamps=True), batch_size=2)
    assert [n[0] for n in numbers] == [0, 8, 16, 24]
    assert numbers[3].tolist() == [24, 25, -1, -1, -1, -1, -1, -1]
    np.testing.assert_array_equal(videos[3][:2], ref[24:26])
    assert not videos[3][2:].any()  # zero frames
    np.testing.assert_allclose(stamps[3], [0.96, 1.0, -1, -1, -1, -1, -1, -1])
    assert all(lbl.tolist() == [0] for lbl in labels)
    # stride 3: a sequence spans 1 + 2 * 3 = 7 frames; default step = 3 * 3 = 9
    (numbers,) = read_all(lambda: fn.readers.video(filenames=[b], labels=[2], sequence_length=3, stride=3,
                                                   enable_frame_num="scalar")[2:], batch_size=2)
    assert [int(n[0]) for n in numbers] == [0, 9, 18]


def test_legacy_reader_outputs_dtype_and_ycbcr() -> None:
    import av

    b = str(DALI_CLIPS / "b.webm")
    (video,) = read_all(lambda: fn.readers.video(filenames=[b], sequence_length=2, step=100, dtype=types.FLOAT,
                                                 normalized=True))
    assert video[0].dtype == np.float32
    np.testing.assert_allclose(video[0], reference_frames(b)[:2] / np.float32(255), rtol=1e-6)
    (ycc,) = read_all(lambda: fn.readers.video(filenames=[b], sequence_length=1, step=100,
                                               image_type=types.YCbCr))
    from av.video.reformatter import Interpolation as I

    with av.open(b) as c:
        first = next(c.decode(video=0))
        planes = first.reformat(format="yuv444p", interpolation=I.BILINEAR | I.FULL_CHR_H_INT | I.ACCURATE_RND)
    np.testing.assert_array_equal(ycc[0][0], planes.to_ndarray().reshape(3, 48, 64).transpose(1, 2, 0))


def test_legacy_file_list_times_and_frame_numbers(tmp_path: Path) -> None:
    b = DALI_CLIPS / "b.webm"  # 25 fps, 26 frames
    (tmp_path / "t.txt").write_text(f"{b} 3 0.1 0.5\n{b} 4 -0.4\n")
    (tmp_path / "f.txt").write_text(f"{b} 3 2 9\n")

    def first_frames(**kw: Any) -> list[tuple[int, int]]:
        _, labels, numbers = read_all(lambda: fn.readers.video(sequence_length=1, step=1, enable_frame_num="scalar",
                                                               **kw), batch_size=4)
        return [(int(lbl[0]), int(n[0])) for lbl, n in zip(labels, numbers)]

    # ceil(0.1 * 25) = 3 .. floor(0.5 * 25) = 12 (exclusive); from 26 + ceil(-10) = 16 to the end
    got = first_frames(file_list=str(tmp_path / "t.txt"))
    assert got == [(3, f) for f in range(3, 12)] + [(4, f) for f in range(16, 26)]
    got = first_frames(file_list=str(tmp_path / "t.txt"), file_list_include_preceding_frame=True)
    assert got[0] == (3, 2) and got[10] == (3, 12)  # floor(2.5) .. ceil(12.5)
    assert first_frames(file_list=str(tmp_path / "f.txt"), file_list_frame_num=True) == [(3, f) for f in range(2, 9)]


def test_outputs_and_argument_errors() -> None:
    b = str(DALI_CLIPS / "b.webm")
    # One output alone is returned as a DataNode; labels only when given.
    (video,) = read_all(lambda: fn.experimental.readers.video(filenames=[b], sequence_length=26))
    assert video[0].shape == (26, 48, 64, 3)
    with pytest.raises(PipelineDefinitionError, match="frame numbers and timestamps"):
        fn.readers.video(filenames=[b], sequence_length=2, enable_frame_num="scalar")
    with pytest.raises(PipelineDefinitionError, match="exactly one of"):
        fn.readers.video(filenames=[b], file_root="x", sequence_length=2)
    with pytest.raises(PipelineDefinitionError, match="pad_mode"):
        fn.experimental.readers.video(filenames=[b], sequence_length=2, pad_mode="wrap")
    with pytest.raises(PipelineDefinitionError, match="no sequences"):
        fn.experimental.readers.video(filenames=[b], sequence_length=27)
    with pytest.raises(TypeError, match="sequence_lenght"):
        fn.readers.video(filenames=[b], sequence_lenght=2)  # typo: named, with the closest names


def test_shards_split_the_sequences_and_shuffling_is_seeded() -> None:
    a, b = str(DALI_CLIPS / "a.webm"), str(DALI_CLIPS / "b.webm")

    def firsts(**kw: Any) -> list[tuple[int, int]]:
        _, labels, numbers = read_all(lambda: fn.experimental.readers.video(
            filenames=[a, b], labels=[0, 1], sequence_length=2, enable_frame_num="scalar", **kw), batch_size=3)
        return [(int(lbl[0]), int(n[0])) for lbl, n in zip(labels, numbers)]

    everything = firsts()
    assert len(everything) == 15 + 13
    halves = [firsts(shard_id=s, num_shards=2, stick_to_shard=True) for s in (0, 1)]
    assert halves[0] + halves[1] == everything  # shard i covers [i*N/S, (i+1)*N/S)
    shuffled = firsts(random_shuffle=True, initial_fill=8)
    assert sorted(shuffled) == sorted(everything) and shuffled != everything
    assert firsts(random_shuffle=True, initial_fill=8) == shuffled  # a function of the seed


def test_a_sequence_decodes_only_its_gops(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamflow.codecs import video as codec

    path = str(clip("h264_long"))  # 120 frames, a keyframe every 12
    decoded: list[int] = []
    original = codec.VideoDecoder._frame_iter

    def counting(self: Any, container: Any) -> Any:
        for frame in original(self, container):
            decoded.append(frame.pts)
            yield frame

    monkeypatch.setattr(codec.VideoDecoder, "_frame_iter", counting)
    decoder = codec.VideoDecoder(path, path)
    assert decoder.index.keyframes.tolist() == list(range(0, 120, 12))
    out = decoder.decode([100, 101, 102, 103])
    np.testing.assert_array_equal(out, reference_frames(path)[100:104])
    # From keyframe 96: at most the frames 96..103 plus the decoder's reorder delay.
    assert 8 <= len(decoded) <= 12
    decoded.clear()
    decoder.decode([104, 105])  # right after: decoded on, no seek
    assert len(decoded) <= 4


def _corrupt(src: Path, dst: Path) -> Path:
    data = bytearray(src.read_bytes())
    for k in range(len(data) // 3, 2 * len(data) // 3, 97):  # damage the middle third, not the headers
        data[k] ^= 0x5A
    dst.write_bytes(bytes(data))
    return dst


def _video_pipe(files: list[str], on_error: str, **kw: Any) -> Any:
    @sf.pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=1, on_error=on_error)
    def p():  # type: ignore[no-untyped-def]
        return fn.readers.video(filenames=files, labels=list(range(len(files))), sequence_length=4, step=6, **kw)

    return p()


def test_corrupt_frames_name_the_file_frame_and_time_or_are_skipped(tmp_path: Path) -> None:
    bad = str(_corrupt(clip("h264_lossless"), tmp_path / "corrupt.mkv"))
    good = str(clip("h264"))
    with _video_pipe([good, bad], "raise") as p, pytest.raises(PipelineError) as info:
        for _ in p.iter():
            pass
    message = str(info.value)
    assert "corrupt.mkv" in message and "frame " in message and "t=" in message, message
    with _video_pipe([good, bad], "skip") as p:
        labels = [int(np.asarray(b[1].at(i))[0]) for b in p.iter() for i in range(len(b[1]))]
        assert p.stats().skipped_total > 0 and "corrupt.mkv" in str(p.stats().skipped[0])
    assert len(labels) == 10 and set(labels) <= {0, 1}  # full batches: replacements from the same shard


def test_truncated_files_read_their_first_frames_and_say_so(tmp_path: Path) -> None:
    data = clip("h264").read_bytes()  # MP4 with its index first: the container lists 30 frames
    truncated = tmp_path / "truncated.mp4"
    truncated.write_bytes(data[: len(data) * 2 // 3])
    with pytest.warns(VideoFileWarning, match=r"truncated.mp4 is damaged, reading its first \d+ frames"):
        pipe = _video_pipe([str(truncated)], "raise", enable_frame_num="scalar")
    with pipe as p:
        firsts = [int(np.asarray(b[2].at(i))[0]) for b in p.iter() for i in range(len(b[2]))]
    ref = reference_frames(clip("h264"))
    assert firsts and firsts[-1] + 4 <= 30
    # Truncated after the index was built: the decoder names the frame it cannot reach.
    whole = tmp_path / "later.mp4"
    whole.write_bytes(data)
    with _video_pipe([str(whole)], "raise") as p:
        whole.write_bytes(data[: len(data) // 2])
        with pytest.raises(PipelineError, match=r"later.mp4.*frame \d+ \(t="):
            for _ in p.iter():
                pass
    assert ref.shape[0] == 30


def test_unreadable_files_are_left_out_with_a_warning(tmp_path: Path) -> None:
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 4)
    b = str(DALI_CLIPS / "b.webm")
    with pytest.warns(VideoFileWarning, match="junk.mp4"):
        fn.experimental.readers.video(filenames=[b, str(junk)], sequence_length=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(PipelineDefinitionError, match="no sequences"):
            fn.experimental.readers.video(filenames=[str(junk)], sequence_length=4)
