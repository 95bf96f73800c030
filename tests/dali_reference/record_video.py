"""Record DALI 2.4's video outputs on the committed clips (``tests/data/dali/video/``).

Run with any Python that has ``nvidia-dali-cuda130`` (DALI 2.4; no GPU needed:
its CPU video reader and decoder run with ``device_id=None``)::

    python tests/dali_reference/record_video.py

It writes ``tests/data/dali/video/reference.json``: for each case, the
operator, its arguments and per sample the source file, label, frame numbers,
timestamps, shape and a hash of every frame (sha1 of the HWC uint8 bytes,
16 hex digits), which ``tests/unit/ops/test_readers_video.py`` and
``test_decoders_video.py`` compare against. DALI 2.4 decodes VP8, VP9 and
MJPEG on the CPU (H.264 and HEVC only on the GPU), hence the clips' codecs.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from nvidia.dali import fn, pipeline_def
from video_cases import CLIPS, frame_hashes, layout


def reader_cases(paths: dict[str, str]) -> list[dict[str, Any]]:
    a, b, c, lossless = (str(CLIPS / n) for n in ("a.webm", "b.webm", "c.avi", "lossless.webm"))
    cases: list[dict[str, Any]] = [
        dict(filenames=[a, b], labels=[4, 9], sequence_length=4, stride=2, enable_frame_num="sequence",
             enable_timestamps=True),
        dict(filenames=[b], sequence_length=4, step=10, stride=3, pad_mode="edge", enable_frame_num="sequence"),
        dict(file_root=paths["root"], sequence_length=8, step=10, enable_frame_num="scalar", enable_timestamps=True),
        dict(file_list=paths["frames.txt"], file_list_format="frames", sequence_length=4, step=3,
             enable_frame_num="sequence"),
        dict(filenames=[c, lossless], sequence_length=5, uniform_sample=True, enable_frame_num="sequence"),
        dict(filenames=[lossless], sequence_length=12),
    ]
    for mode, fill in (("constant", [1, 2, 3]), ("edge", 0), ("reflect", 0), ("symmetric", 0)):
        cases.append(dict(filenames=[b], sequence_length=8, step=10, pad_mode=mode, fill_value=fill,
                          enable_frame_num="sequence", enable_timestamps=True))
    for rounding in ("start_down_end_up", "start_up_end_down", "all_up", "all_down"):
        cases.append(dict(file_list=paths["times.txt"], file_list_rounding=rounding, sequence_length=1, step=1,
                          enable_frame_num="scalar"))
    return cases


def run_reader(kwargs: dict[str, Any]) -> dict[str, Any]:
    def build(batch_size: int) -> Any:
        @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=1)
        def pipe() -> Any:
            out = fn.experimental.readers.video(device="cpu", name="R", **kwargs)
            return tuple(out) if isinstance(out, (list, tuple)) else out

        p = pipe()
        p.build()
        return p

    size = build(1).epoch_size("R")
    pipe = build(size)
    outputs = pipe.run()
    has_labels = "labels" in kwargs or "file_root" in kwargs or "file_list" in kwargs
    samples = []
    for i in range(size):
        video = np.asarray(outputs[0][i])
        k = 1
        sample: dict[str, Any] = {"source": outputs[0][i].source_info(), "shape": list(video.shape),
                                  "frames": frame_hashes(video)}
        if has_labels:
            sample["label"] = np.asarray(outputs[k][i]).tolist()
            k += 1
        if kwargs.get("enable_frame_num", "none") != "none":
            sample["frame_num"] = np.asarray(outputs[k][i]).tolist()
            k += 1
        if kwargs.get("enable_timestamps"):
            sample["timestamps"] = np.asarray(outputs[k][i]).tolist()
        samples.append(sample)
    return {"epoch_size": size, "samples": samples}


DECODER_CASES: list[tuple[str, dict[str, Any]]] = [
    ("b.webm", {}),
    ("b.webm", dict(start_frame=3, sequence_length=4, stride=3)),
    ("b.webm", dict(start_frame=20, end_frame=30)),
    ("b.webm", dict(start_frame=20, sequence_length=10, stride=2, fill_value=[7, 8, 9])),
    ("b.webm", dict(start_frame=20, sequence_length=10, stride=2, pad_mode="edge")),
    ("b.webm", dict(start_frame=20, sequence_length=10, stride=2, pad_mode="reflect")),
    ("b.webm", dict(start_frame=20, sequence_length=10, stride=2, pad_mode="symmetric")),
    ("b.webm", dict(start_frame=20, sequence_length=10, stride=2, pad_mode="none")),
    ("b.webm", dict(frames=[5, 1, 1, 25])),
    ("b.webm", dict(frames=[5, 1, 30])),
    ("b.webm", dict(stride=5)),
    ("c.avi", dict(start_frame=2, sequence_length=6, stride=3)),
    ("lossless.webm", {}),
]


def run_decoder(name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    data = np.fromfile(CLIPS / name, dtype=np.uint8)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, seed=1)
    def pipe() -> Any:
        encoded = fn.external_source(source=lambda: [data], batch=True)
        return fn.decoders.video(encoded, device="cpu", **kwargs)

    p = pipe()
    p.build()
    video = np.asarray(p.run()[0][0])
    return {"shape": list(video.shape), "frames": frame_hashes(video)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = layout(Path(tmp))
        readers = []
        for kwargs in reader_cases(paths):
            result = run_reader(kwargs)
            for sample in result["samples"]:
                sample["source"] = Path(sample["source"]).name
            named = {k: (Path(v).name if k in ("file_root", "file_list") else
                         [Path(f).name for f in v] if k == "filenames" else v) for k, v in kwargs.items()}
            readers.append({"kwargs": named, **result})
    decoders = [{"clip": name, "kwargs": kwargs, **run_decoder(name, kwargs)} for name, kwargs in DECODER_CASES]
    out = CLIPS / "reference.json"
    out.write_text(json.dumps({"dali": "2.4", "readers": readers, "decoders": decoders}, indent=1) + "\n")
    print(f"wrote {out}: {len(readers)} reader cases, {len(decoders)} decoder cases")


if __name__ == "__main__":
    main()
