"""DALI's video reader examples, run by streamflow after changing the imports.

1. "Simple video pipeline": ``fn.readers.video(device="gpu", ...)`` over several
   files, shuffled; sequences of ``sequence_length`` frames (FHWC).
2. "Video pipeline with labels": a ``file_list`` of ``file label start end``
   lines with frame numbers, labels, frame numbers and timestamps as outputs.
3. Sequence processing (``fn.experimental.readers.video`` on the CPU): image operators on whole sequences (the same random
   flip on every frame of a sequence, a brightness per frame with
   ``fn.per_frame``), ``fn.sequence_rearrange`` and ``fn.element_extract``.

DALI's ``readers.video`` decodes on the GPU only; here the pipelines use
``device_id="auto"``: NVDEC where there is a GPU, FFmpeg (PyAV) on the CPU
otherwise (with one warning). The only other change from DALI's examples is
the import line. With no video files given, a few short clips are made first.

Run: python examples/video_reader.py [--videos a.mp4 b.mp4 ...] [--iterations N]
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import numpy as np

from streamflow import fn, pipeline_def  # was: from nvidia.dali import fn, pipeline_def

BATCH_SIZE = 2
SEQUENCE_LENGTH = 8
INITIAL_PREFETCH_SIZE = 11


# 1. Simple video pipeline --------------------------------------------------------------------
@pipeline_def
def video_pipe(filenames):
    videos = fn.readers.video(device="gpu", filenames=filenames, sequence_length=SEQUENCE_LENGTH,
                              random_shuffle=True, initial_fill=INITIAL_PREFETCH_SIZE, name="Reader")
    return videos


# 2. Video pipeline with labels ---------------------------------------------------------------
@pipeline_def
def video_label_pipe(file_list):
    video, label, start_frame, timestamps = fn.readers.video(
        device="gpu", file_list=file_list, sequence_length=SEQUENCE_LENGTH, random_shuffle=True,
        initial_fill=INITIAL_PREFETCH_SIZE, file_list_frame_num=True, enable_frame_num=True,
        enable_timestamps=True, file_list_include_preceding_frame=True, name="Reader")
    return video, label, start_frame, timestamps


# 3. Sequence processing ----------------------------------------------------------------------
@pipeline_def
def sequence_pipe(filenames):
    # DALI's CPU video reader (the colour operators below run on the CPU in this example)
    video = fn.experimental.readers.video(device="cpu", filenames=filenames, sequence_length=SEQUENCE_LENGTH,
                                          name="Reader")
    video = fn.flip(video, horizontal=fn.random.coin_flip())  # one draw per sequence, every frame flipped alike
    brightness = fn.random.uniform(range=[0.5, 1.5], shape=(SEQUENCE_LENGTH,))
    video = fn.brightness_contrast(video, brightness=fn.per_frame(brightness))  # one value per frame
    reversed_video = fn.sequence_rearrange(video, new_order=list(range(SEQUENCE_LENGTH - 1, -1, -1)))
    first, last = fn.element_extract(video, element_map=[0, SEQUENCE_LENGTH - 1])
    return video, reversed_video, first, last


def make_clips(folder: Path, count: int = 3, frames: int = 40) -> list[str]:
    """A few short H.264 clips of moving colour ramps (PyAV), for running the examples anywhere."""
    import av

    yy, xx = np.mgrid[0:96, 0:128]
    paths = []
    for k in range(count):
        path = folder / f"clip{k}.mp4"
        with av.open(str(path), "w") as container:
            stream = container.add_stream("libx264", rate=25)
            stream.width, stream.height, stream.pix_fmt = 128, 96, "yuv420p"
            for i in range(frames):
                rgb = np.stack([(xx * 2 + i * 6 + 40 * k) % 256, (yy * 2 + i * 3) % 256,
                                np.full_like(xx, 80 * k)], axis=-1).astype(np.uint8)
                for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
        paths.append(str(path))
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", nargs="*", help="video files (default: make a few short clips)")
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("once")  # the CPU fallback warning, once
    with tempfile.TemporaryDirectory() as tmp:
        videos = args.videos or make_clips(Path(tmp))

        print("== simple video pipeline")
        pipe = video_pipe(batch_size=BATCH_SIZE, num_threads=2, device_id="auto", seed=123456, filenames=videos)
        pipe.build()
        for _ in range(args.iterations):
            sequences_out = pipe.run()[0].as_cpu().as_array()
            print(sequences_out.shape, sequences_out.dtype)

        print("== video pipeline with labels")
        file_list = Path(tmp) / "file_list.txt"
        file_list.write_text("".join(f"{v} {i} 0 {20 + 4 * i}\n" for i, v in enumerate(videos)))
        pipe = video_label_pipe(batch_size=BATCH_SIZE, num_threads=2, device_id="auto", seed=123456,
                                file_list=str(file_list))
        pipe.build()
        for _ in range(args.iterations):
            video, label, start_frame, timestamps = (out.as_cpu() for out in pipe.run())
            for i in range(BATCH_SIZE):
                ts = np.asarray(timestamps.at(i))
                print(f"label {int(np.asarray(label.at(i))[0])}, frames {int(np.asarray(start_frame.at(i))[0])}.., "
                      f"timestamps {ts[0]:.2f}..{ts[-1]:.2f} s, video {np.asarray(video.at(i)).shape}")

        print("== sequence processing")
        pipe = sequence_pipe(batch_size=BATCH_SIZE, num_threads=2, device_id="auto", seed=7, filenames=videos)
        pipe.build()
        video, reversed_video, first, last = (out.as_cpu().as_array() for out in pipe.run())
        assert np.array_equal(reversed_video[:, 0], video[:, -1]) and np.array_equal(first, video[:, 0])
        print("sequences", video.shape, "first frames", first.shape, "last frames", last.shape)


if __name__ == "__main__":
    main()
