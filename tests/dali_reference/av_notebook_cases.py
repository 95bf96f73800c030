"""Pipelines with the features of DALI's audio and video tutorials, written once for DALI and streamflow.

The tutorials (DALI ``docs/examples/``): ``audio_processing/audio_decoder`` and
``audio_processing/spectrogram`` (pipeline and dynamic mode),
``sequence_processing/video/{video_reader_simple, video_reader_label,
video_file_list_outputs}`` (pipeline and dynamic mode), ``sequence_reader_simple_example``
and ``video/video_per_frame_arguments``. Their code is not copied: the cases below
are this project's own pipelines, on this project's data (the speech clips of
``tests/data/audio``, the clips of ``tests/data/dali/video``, PNG frames written
here), that use the features a reader of each tutorial uses: the same operators,
arguments, call styles (``@pipeline_def`` with parameters, ``types.Constant(device=...)``,
``ndd.readers.File(...)()``, ``reader.next_epoch(batch_size=...)`` with ``islice``) and
output handling (``run()``, ``.at(0)``, ``.as_cpu().as_array()``, ``np.asarray``,
``ndd.as_tensor``).

Every case is ``case(dali, fn, types, ndd, where)``: ``dali``/``fn``/``types``/``ndd``
are the library's modules (``nvidia.dali...`` or ``streamflow...``) and ``where`` a
folder the case may write its inputs to. It returns ``{name: value}`` (a list of
per-sample arrays, an array, or a string). Frames are stored as hashes
(``frame_hashes``) and long spectra sub-sampled, so the recorded references
stay small. Shuffled readers are returned in an order-free form (sorted), since
the two libraries shuffle with different random streams.

DALI 2.4 decodes video on the CPU only with ``fn.experimental.readers.video``
(VP8/VP9/MJPEG); its ``fn.readers.video`` (the one the video tutorials use, with
``device="gpu"``) is GPU-only. The cases take the reader as a parameter
(``legacy``): DALI records with the experimental reader, the tests also run
the tutorials' ``fn.readers.video(device="gpu", ...)`` (CPU fallback) and compare
it with those recordings.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import wave
import zlib
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data"
AUDIO = DATA / "audio"
CLIPS = DATA / "dali" / "video"
PHOTO = DATA / "photos" / "chelsea.png"


# ----------------------------------------------------------------------------------- helpers


def digest(array: Any) -> str:
    """sha1 (16 hex digits) of an array's shape, dtype and bytes."""
    a = np.ascontiguousarray(np.asarray(array))
    h = hashlib.sha1(f"{a.shape}{a.dtype.str}".encode())
    h.update(a.tobytes())
    return h.hexdigest()[:16]


def frame_hashes(sequence: Any) -> str:
    """One sequence (F, H, W, C) as its frames' digests joined by spaces (float frames as uint8)."""
    seq = np.asarray(sequence)
    if seq.dtype.kind == "f":
        seq = seq.astype(np.uint8)
    return " ".join(digest(f) for f in seq)


def audio_folder(where: Path) -> str:
    """A labelled audio tree (one sub-folder per format) as the decoder tutorial reads it."""
    root = where / "audio"
    (root / "wav").mkdir(parents=True, exist_ok=True)
    (root / "flac").mkdir(exist_ok=True)
    for name in ("arctic_a0007.wav", "arctic_a0009.wav"):
        shutil.copy(AUDIO / name, root / "wav" / name)
    shutil.copy(AUDIO / "arctic_stereo_22k.flac", root / "flac" / "arctic_stereo_22k.flac")
    return str(root)


def speech(first: int = 8000, length: int = 12000) -> tuple[np.ndarray, int]:
    """An excerpt of a 16 kHz speech clip as float32 in [-1, 1) (what ``librosa.load`` would give), and its rate."""
    with wave.open(str(AUDIO / "arctic_a0007.wav")) as w:
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return (pcm[first:first + length].astype(np.float32) / 32768.0), rate


def _png(path: Path, image: np.ndarray) -> None:
    """A minimal 8-bit RGB PNG writer (no dependency beyond zlib)."""
    h, w, _ = image.shape
    raw = b"".join(b"\x00" + image[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def frame_folders(where: Path) -> str:
    """Two "extracted video streams" as the sequence reader reads them: ``root/<stream>/<frame>.png``.

    The frames are moving 24x32 windows of a photo's pixels (a deterministic pan), so every frame differs."""
    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
    root = where / "frames"
    for stream, count in (("0", 7), ("1", 5)):
        (root / stream).mkdir(parents=True, exist_ok=True)
        for k in range(count):
            y, x = (3 * k) % 36, (5 * k + int(stream) * 11) % 48
            _png(root / stream / f"{k + 1:05d}.png", np.ascontiguousarray(base[y:y + 24, x:x + 32]))
    return str(root)


def clip_folder(where: Path) -> str:
    """Labelled folders of clips: ``cat/a.webm``, ``dog/b.webm``, ``dog/c.avi`` (labels 0, 1, 1)."""
    root = where / "clips"
    (root / "cat").mkdir(parents=True, exist_ok=True)
    (root / "dog").mkdir(exist_ok=True)
    shutil.copy(CLIPS / "a.webm", root / "cat" / "a.webm")
    shutil.copy(CLIPS / "b.webm", root / "dog" / "b.webm")
    shutil.copy(CLIPS / "c.avi", root / "dog" / "c.avi")
    return str(root)


def _reader(fn: Any, legacy: bool) -> Any:
    """The tutorials' ``fn.readers.video(device="gpu")``, or DALI's CPU reader (``legacy=False``)."""
    if legacy:
        return lambda **kw: fn.readers.video(device="gpu", **kw)
    return lambda **kw: fn.experimental.readers.video(device="cpu", **kw)


# ------------------------------------------------------------------------------ audio_decoder


def audio_decoder(dali: Any, fn: Any, types: Any, ndd: Any, where: Path) -> dict[str, Any]:
    """readers.file(file_root) of a folder per format + decoders.audio(dtype=INT16), batch of 1, ``.at(0)``,
    ``.flatten()``; then the default float output, downmixed."""
    root = audio_folder(where)

    @dali.pipeline_def
    def audio_decoder_pipe() -> Any:
        encoded, _ = fn.readers.file(file_root=root)
        audio, sr = fn.decoders.audio(encoded, dtype=types.INT16)
        return audio, sr

    pipe = audio_decoder_pipe(batch_size=1, num_threads=1, device_id=None)
    pipe.build()
    out: dict[str, Any] = {"shape": [], "digest": [], "head": [], "rate": [], "dtype": []}
    for _ in range(3):
        cpu_output = pipe.run()
        audio_data = cpu_output[0].at(0)
        sampling_rate = cpu_output[1].at(0)
        flat = audio_data.flatten()
        out["shape"].append(np.array(audio_data.shape))
        out["dtype"].append(str(audio_data.dtype))
        out["digest"].append(digest(audio_data))
        out["head"].append(flat[1000:1032])
        out["rate"].append(np.asarray(sampling_rate))

    @dali.pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def float_pipe() -> Any:
        encoded, label = fn.readers.file(file_root=root)
        audio, sr = fn.decoders.audio(encoded, downmix=True)
        return audio, sr, label

    pipe = float_pipe()
    pipe.build()
    audio, sr, label = pipe.run()
    out["float_digest"] = [digest(audio.at(i)) for i in range(3)]
    out["float_rate"] = [np.asarray(sr.at(i)) for i in range(3)]
    out["label"] = [np.asarray(label.at(i)) for i in range(3)]
    return out


def audio_decoder_dynamic(dali: Any, fn: Any, types: Any, ndd: Any, where: Path) -> dict[str, Any]:
    """ndd.readers.File(file_root=Path) called directly (one sample per call, going on past the epoch),
    ndd.decoders.audio(dtype=ndd.int16), np.asarray of the audio and of the rate."""
    reader = ndd.readers.File(file_root=Path(audio_folder(where)))
    out: dict[str, Any] = {"digest": [], "rate": [], "head": [], "label": []}
    for _ in range(4):
        encoded, label = reader()
        audio, sr = ndd.decoders.audio(encoded, dtype=ndd.int16)
        audio_data = np.asarray(audio)
        sampling_rate = np.asarray(sr)
        out["digest"].append(digest(audio_data))
        out["rate"].append(sampling_rate)
        out["head"].append(audio_data.flatten()[2000:2016])
        out["label"].append(np.asarray(label))
    return out


# -------------------------------------------------------------------------------- spectrogram

NFFT, HOP = 2048, 512


def _spectra(spec: np.ndarray) -> np.ndarray:
    """Every 16th frequency of a (frequency, time) spectrogram: what is recorded of it."""
    return np.ascontiguousarray(np.asarray(spec)[::16])


def spectrogram(dali: Any, fn: Any, types: Any, ndd: Any, where: Path) -> dict[str, Any]:
    """A parametrised @pipeline_def: types.Constant(device="cpu", value=audio), spectrogram(nfft, window_length,
    window_step, device="cpu"); to_decibels(multiplier=10, cutoff_db=-80) of it; mel_filter_bank(sample_rate,
    nfilter=128, freq_high=sr/2) and its decibels; mfcc of the mel decibels."""
    audio_data, sr = speech()

    @dali.pipeline_def
    def spectrogram_pipe(nfft: int, window_length: int, window_step: int, device: str = "cpu") -> Any:
        audio = types.Constant(device=device, value=audio_data)
        spectrogram = fn.spectrogram(audio, device=device, nfft=nfft, window_length=window_length,
                                     window_step=window_step)
        spectrogram_db = fn.to_decibels(spectrogram, multiplier=10.0, cutoff_db=-80)
        mel = fn.mel_filter_bank(spectrogram, sample_rate=sr, nfilter=128, freq_high=sr / 2.0)
        mel_db = fn.to_decibels(mel, multiplier=10.0, cutoff_db=-80)
        mfccs = fn.mfcc(mel_db, n_mfcc=40, dct_type=2, normalize=True)
        return spectrogram, spectrogram_db, mel, mel_db, mfccs

    pipe = spectrogram_pipe(device="cpu", batch_size=1, num_threads=1, device_id=None, nfft=NFFT,
                            window_length=NFFT, window_step=HOP)
    pipe.build()
    outputs = pipe.run()
    spec, spec_db, mel, mel_db, mfccs = (outputs[k].at(0) for k in range(5))
    return {"spectrogram": _spectra(spec), "spectrogram_db": _spectra(spec_db), "mel": mel, "mel_db": mel_db,
            "mfcc": mfccs, "spectrogram_shape": np.array(spec.shape), "layout": outputs[0].layout()}


def spectrogram_dynamic(dali: Any, fn: Any, types: Any, ndd: Any, where: Path) -> dict[str, Any]:
    """The same features in dynamic mode: ndd.as_tensor(audio) through ndd.spectrogram / to_decibels /
    mel_filter_bank / mfcc, np.asarray of each."""
    audio_data, sr = speech()
    audio = ndd.as_tensor(audio_data)
    spec = ndd.spectrogram(audio, nfft=NFFT, window_length=NFFT, window_step=HOP)
    spec_db = ndd.to_decibels(spec, multiplier=10.0, cutoff_db=-80)
    mel = ndd.mel_filter_bank(spec, sample_rate=sr, nfilter=128, freq_high=sr / 2.0)
    mel_db = ndd.to_decibels(mel, multiplier=10.0, cutoff_db=-80)
    mfccs = ndd.mfcc(mel_db, n_mfcc=40, dct_type=2, normalize=True)
    return {"spectrogram": _spectra(np.asarray(spec)), "spectrogram_db": _spectra(np.asarray(spec_db)),
            "mel": np.asarray(mel), "mel_db": np.asarray(mel_db), "mfcc": np.asarray(mfccs)}


# ---------------------------------------------------------------------- video_reader_simple

SEQUENCE_LENGTH = 8


def video_reader_simple(dali: Any, fn: Any, types: Any, ndd: Any, where: Path,
                        legacy: bool = False) -> dict[str, Any]:
    """readers.video over several files, shard_id/num_shards, initial_fill, seed; ``pipe_out[0].as_cpu().as_array()``
    for n iterations, in order and shuffled (one epoch, order-free)."""
    files = [str(CLIPS / "a.webm"), str(CLIPS / "b.webm")]
    read = _reader(fn, legacy)

    @dali.pipeline_def
    def video_pipe(filenames: list[str], shuffle: bool) -> Any:
        videos = read(filenames=filenames, sequence_length=SEQUENCE_LENGTH, shard_id=0, num_shards=1,
                      random_shuffle=shuffle, initial_fill=16, name="Reader")
        return videos

    out: dict[str, Any] = {}
    for shuffle in (False, True):
        pipe = video_pipe(batch_size=2, num_threads=2, device_id="auto" if legacy else None, filenames=files,
                          shuffle=shuffle, seed=123456)
        pipe.build()
        shapes, sequences = [], []
        for _ in range(3):  # one epoch: 3 + 3 sequences of 8 frames
            pipe_out = pipe.run()
            sequences_out = pipe_out[0].as_cpu().as_array()
            shapes.append(np.array(sequences_out.shape))
            sequences += [frame_hashes(s) for s in sequences_out]
        key = "shuffled" if shuffle else "ordered"
        out[f"{key}_shape"] = shapes
        out[key] = sorted(sequences) if shuffle else sequences
        out[f"{key}_layout"] = pipe_out[0].layout()
    return out


def video_reader_simple_dynamic(dali: Any, fn: Any, types: Any, ndd: Any, where: Path,
                                legacy: bool = False) -> dict[str, Any]:
    """A reader object iterated with ``islice(reader.next_epoch(batch_size=2), n)`` (tuples of one batch),
    ``ndd.as_tensor(videos).shape``, frames of a sequence by index."""
    files = [str(CLIPS / "a.webm"), str(CLIPS / "b.webm")]
    kw = dict(filenames=files, sequence_length=SEQUENCE_LENGTH, shard_id=0, num_shards=1, random_shuffle=False,
              initial_fill=16, seed=123456)
    # dynamic mode has no device_id="auto": without a GPU the tutorial's device="gpu" reader becomes "cpu"
    reader = ndd.readers.Video(device="cpu", **kw) if legacy else ndd.experimental.readers.Video(device="cpu", **kw)
    shapes, sequences, frames = [], [], []
    for (videos,) in islice(reader.next_epoch(batch_size=2), 3):
        shapes.append(np.array(ndd.as_tensor(videos).shape))
        batch = np.asarray(ndd.as_tensor(videos))
        sequences += [frame_hashes(s) for s in batch]
        frames.append(digest(np.asarray(batch[1][SEQUENCE_LENGTH - 1])))
    return {"shape": shapes, "sequences": sequences, "last_frames": frames}


# ----------------------------------------------------------------------- video_reader_label


def video_reader_label(dali: Any, fn: Any, types: Any, ndd: Any, where: Path, legacy: bool = False) -> dict[str, Any]:
    """readers.video(file_root=labelled folders): ``sequences_out, labels = pipe.run()``, both
    ``.as_cpu().as_array()`` (labels (N, 1)); in order, and shuffled over one epoch (pairs, order-free)."""
    root = clip_folder(where)
    read = _reader(fn, legacy)

    @dali.pipeline_def
    def video_pipe(file_root: str, shuffle: bool) -> Any:
        video, labels = read(file_root=file_root, sequence_length=SEQUENCE_LENGTH, random_shuffle=shuffle,
                             initial_fill=11, name="Reader")
        return video, labels

    out: dict[str, Any] = {}
    for shuffle in (False, True):
        pipe = video_pipe(batch_size=3, num_threads=2, device_id="auto" if legacy else None, file_root=root,
                          shuffle=shuffle, seed=12345)
        pipe.build()
        pairs, label_shapes = [], []
        for _ in range(3):  # one epoch: 3 (a) + 3 (b) + 3 (c) sequences
            sequences_out, labels = pipe.run()
            sequences_out = sequences_out.as_cpu().as_array()
            labels = labels.as_cpu().as_array()
            label_shapes.append(np.array(labels.shape))
            pairs += [f"{int(lab[0])} {frame_hashes(s)}" for s, lab in zip(sequences_out, labels)]
        key = "shuffled" if shuffle else "ordered"
        out[key] = sorted(pairs) if shuffle else pairs
        out[f"{key}_label_shape"] = label_shapes
    return out


# ------------------------------------------------------------------ video_file_list_outputs


def video_file_list(dali: Any, fn: Any, types: Any, ndd: Any, where: Path, legacy: bool = False) -> dict[str, Any]:
    """A file_list of ``file label first end`` frame ranges, sequences of 1 frame, labels, the frame number and
    the timestamp of each sequence; float frames (legacy: ``dtype=types.FLOAT``, ``image_type=types.RGB``)."""
    clip = str(CLIPS / "b.webm")
    file_list = where / "file_list.txt"
    file_list.write_text(f"{clip} 0 0 10\n{clip} 1 10 20\n{clip} 2 20 26\n")
    if legacy:
        def read(**kw: Any) -> Any:
            return fn.readers.video(device="gpu", image_type=types.RGB, dtype=types.FLOAT, file_list_frame_num=True,
                                    enable_frame_num=True, file_list_include_preceding_frame=True, **kw)
    else:
        def read(**kw: Any) -> Any:
            return fn.experimental.readers.video(device="cpu", file_list_format="frames", enable_frame_num="scalar",
                                                 **kw)

    @dali.pipeline_def
    def video_pipe(file_list: str) -> Any:
        video, label, start_frame_num, timestamps = read(file_list=file_list, sequence_length=1, shard_id=0,
                                                          num_shards=1, random_shuffle=False, initial_fill=10,
                                                          enable_timestamps=True)
        return video, label, start_frame_num, timestamps

    pipe = video_pipe(batch_size=4, num_threads=2, device_id="auto" if legacy else None, file_list=str(file_list))
    pipe.build()
    out: dict[str, Any] = {"frames": [], "label": [], "frame_num": [], "timestamps": []}
    for _ in range(7):  # 26 sequences, then the next epoch's first two
        pipe_out = pipe.run()
        sequences_out = pipe_out[0].as_cpu().as_array()
        out["frames"] += [frame_hashes(s) for s in sequences_out]
        out["label"].append(pipe_out[1].as_cpu().as_array().reshape(-1))
        out["frame_num"].append(pipe_out[2].as_cpu().as_array().reshape(-1))
        out["timestamps"].append(pipe_out[3].as_cpu().as_array().reshape(-1))
    return out


# ----------------------------------------------------------------------------- sequence_reader


def sequence_reader(dali: Any, fn: Any, types: Any, ndd: Any, where: Path) -> dict[str, Any]:
    """readers.sequence(file_root=streams of PNG frames, sequence_length, step, stride): FHWC sequences,
    ``.as_array()`` batches and per-sample ``.at(i)``, the epoch size by the reader's name."""
    root = frame_folders(where)
    out: dict[str, Any] = {}
    for key, kw in (("default", dict(sequence_length=3)), ("step_stride", dict(sequence_length=2, step=2, stride=2))):
        @dali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def sequence_pipe() -> Any:
            frames = fn.readers.sequence(file_root=root, name="Reader", **kw)
            return frames

        pipe = sequence_pipe()
        pipe.build()
        size = pipe.epoch_size("Reader")
        sequences = []
        for _ in range((size + 1) // 2):
            (frames,) = pipe.run()
            sequences += [frame_hashes(frames.at(i)) for i in range(len(frames))]
        out[key] = sequences
        out[f"{key}_epoch_size"] = np.array(size)
        out[f"{key}_layout"] = frames.layout()
        out[f"{key}_shape"] = np.array(frames.at(0).shape)
    return out


# -------------------------------------------------------------------- per-frame arguments


def per_frame_arguments(dali: Any, fn: Any, types: Any, ndd: Any, where: Path) -> dict[str, Any]:
    """Image operators on video sequences with per-frame arguments (``fn.per_frame``): gaussian_blur(sigma),
    laplacian(scale), rotate(angle), transforms (rotation about a centre, scale, translation, combine) feeding
    warp_affine and coord_transform of per-frame points; then sequence_rearrange and element_extract."""
    frames = 6
    sigma = np.linspace(0.5, 3.0, frames, dtype=np.float32)
    scale = np.linspace(0.2, 1.2, frames, dtype=np.float32)
    angle = np.linspace(-30, 45, frames, dtype=np.float32)
    zoom = np.stack([np.linspace(1.0, 1.5, frames)] * 2, axis=1).astype(np.float32)
    points = np.tile(np.float32([[10, 10], [54, 10], [32, 40]]), (frames, 1, 1))

    def per_frame(value: np.ndarray) -> Any:
        return fn.per_frame(fn.external_source(source=lambda: [value, value], batch=True))

    @dali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def per_frame_pipe() -> Any:
        video = fn.experimental.readers.video(device="cpu", filenames=[str(CLIPS / "a.webm"), str(CLIPS / "c.avi")],
                                              sequence_length=frames, step=12, name="Reader")
        blurred = fn.gaussian_blur(video, sigma=per_frame(sigma))
        edges = fn.laplacian(video, window_size=5, scale=per_frame(scale), dtype=types.FLOAT)
        rotated = fn.rotate(video, angle=per_frame(angle), fill_value=0)
        mt = fn.transforms.rotation(angle=per_frame(angle), center=[32, 24])
        mt = fn.transforms.combine(mt, fn.transforms.scale(scale=per_frame(zoom), center=[32, 24]),
                                   fn.transforms.translation(offset=[2, -3]))
        warped = fn.warp_affine(video, matrix=mt, fill_value=0, inverse_map=False)
        moved = fn.coord_transform(per_frame(points), MT=mt)
        reversed_ = fn.sequence_rearrange(video, new_order=[5, 4, 3, 2, 1, 0])
        first, last = fn.element_extract(video, element_map=[0, 5])
        return video, blurred, edges, rotated, warped, moved, reversed_, first, last

    pipe = per_frame_pipe()
    pipe.build()
    names = ["video", "blurred", "edges", "rotated", "warped", "moved", "reversed", "first", "last"]
    outs = pipe.run()
    result: dict[str, Any] = {}
    for name, o in zip(names, outs):
        samples = [np.asarray(o.at(i)) for i in range(len(o))]
        result[name] = [frame_hashes(s) if s.dtype == np.uint8 and s.ndim == 4 else
                        (digest(s) if s.dtype == np.uint8 else s) for s in samples]
        result[f"{name}_layout"] = o.layout()
    # the float Laplacian is large: one frame of each sample, every other pixel; warped frames (linear
    # interpolation: compared within 1) every other pixel
    result["edges"] = [np.asarray(outs[2].at(i))[1, ::2, ::2] for i in range(2)]
    result["warped"] = [np.ascontiguousarray(np.asarray(outs[4].at(i))[:, ::2, ::2]) for i in range(2)]
    return result


def per_frame_arguments_dynamic(dali: Any, fn: Any, types: Any, ndd: Any, where: Path) -> dict[str, Any]:
    """The per-frame tutorial in dynamic mode: a batch of sequences from a reader, ``ndd.per_frame`` of a batch of
    per-frame values into ndd.gaussian_blur / ndd.rotate / ndd.transforms.rotation -> ndd.warp_affine, and
    ``np.asarray(ndd.as_tensor(batch.cpu()))``."""
    frames = 6
    sigma = np.linspace(0.5, 3.0, frames, dtype=np.float32)
    angle = np.linspace(-30, 45, frames, dtype=np.float32)
    reader = ndd.experimental.readers.Video(device="cpu", filenames=[str(CLIPS / "a.webm"), str(CLIPS / "c.avi")],
                                            sequence_length=frames, step=12)
    (video,) = next(iter(reader.next_epoch(batch_size=2)))
    blurred = ndd.gaussian_blur(video, sigma=ndd.per_frame(ndd.as_batch([sigma, sigma])))
    rotated = ndd.rotate(video, angle=ndd.per_frame(ndd.as_batch([angle, angle])), fill_value=0)
    mt = ndd.transforms.rotation(angle=ndd.per_frame(ndd.as_batch([angle, angle])), center=[32, 24])
    warped = ndd.warp_affine(video, mt, fill_value=0, inverse_map=False)
    out: dict[str, Any] = {}
    for name, batch in (("video", video), ("blurred", blurred), ("rotated", rotated)):
        out[name] = [frame_hashes(s) for s in np.asarray(ndd.as_tensor(batch.cpu()))]
    out["warped"] = [np.ascontiguousarray(s[:, ::2, ::2]) for s in np.asarray(ndd.as_tensor(warped.cpu()))]
    return out


def video_reader_label_dynamic(dali: Any, fn: Any, types: Any, ndd: Any, where: Path) -> dict[str, Any]:
    """video_reader_label in dynamic mode: a reader over labelled folders, ``islice(reader.next_epoch(batch_size=3),
    n)`` of (videos, labels) pairs, ``np.asarray(ndd.as_tensor(...))`` of both."""
    reader = ndd.experimental.readers.Video(device="cpu", file_root=clip_folder(where), sequence_length=SEQUENCE_LENGTH,
                                            random_shuffle=False, initial_fill=11)
    pairs, label_shapes = [], []
    for videos, labels in islice(reader.next_epoch(batch_size=3), 3):
        labels = np.asarray(ndd.as_tensor(labels))
        label_shapes.append(np.array(labels.shape))
        pairs += [f"{int(lab[0])} {frame_hashes(s)}" for s, lab in zip(np.asarray(ndd.as_tensor(videos)), labels)]
    return {"ordered": pairs, "label_shape": label_shapes}


def video_resize(dali: Any, fn: Any, types: Any, ndd: Any, where: Path, legacy: bool = False) -> dict[str, Any]:
    """The per-frame tutorial's reader, ``readers.video_resize(device="gpu", resize_x, resize_y)`` (GPU-only in
    DALI); DALI's side: its CPU reader then ``fn.resize`` of the sequences."""

    @dali.pipeline_def(batch_size=2, num_threads=1, device_id="auto" if legacy else None)
    def resize_pipe() -> Any:
        kw = dict(filenames=[str(CLIPS / "a.webm"), str(CLIPS / "b.webm")], sequence_length=4, step=9)
        if legacy:
            return fn.readers.video_resize(device="gpu", resize_x=40, resize_y=30, **kw)
        return fn.resize(fn.experimental.readers.video(device="cpu", **kw), resize_x=40, resize_y=30)

    pipe = resize_pipe()
    pipe.build()
    (frames,) = pipe.run()
    return {"frames": [np.asarray(frames.at(i)) for i in range(2)], "layout": frames.layout()}


PIPELINE_CASES = {
    "audio_decoder": audio_decoder,
    "audio_decoder_dynamic": audio_decoder_dynamic,
    "spectrogram": spectrogram,
    "spectrogram_dynamic": spectrogram_dynamic,
    "video_reader_simple": video_reader_simple,
    "video_reader_simple_dynamic": video_reader_simple_dynamic,
    "video_reader_label": video_reader_label,
    "video_file_list": video_file_list,
    "sequence_reader": sequence_reader,
    "per_frame_arguments": per_frame_arguments,
    "per_frame_arguments_dynamic": per_frame_arguments_dynamic,
    "video_reader_label_dynamic": video_reader_label_dynamic,
    "video_resize": video_resize,
}
