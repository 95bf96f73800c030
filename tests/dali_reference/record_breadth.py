"""Record DALI 2.4's outputs for the "breadth" operators' reference cases.

Runs with any Python that has DALI (``pip install nvidia-dali-cuda130``, CPU
pipelines only, ``device_id=None``: no GPU needed), Pillow and numpy::

    python tests/dali_reference/record_breadth.py            # every operator
    python tests/dali_reference/record_breadth.py constant   # some of them

The cases are in ``breadth_cases.py``; each operator's outputs go to
``tests/data/dali/breadth/<operator>.npz`` (keys ``<case>/<output>/<sample>``
and ``<case>/error``, plus ``__dali_version__``), as ``record_geometry.py``
does for the geometry operators. ``source_info`` of ``readers.file`` (a reader,
not an external source) goes to ``source_info.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from breadth_cases import CASES
from record_geometry import record_cases

OUT = HERE.parent / "data" / "dali" / "breadth"
PHOTOS = HERE.parent / "data" / "photos"


def record(op: str) -> Path:
    return record_cases(CASES[op], OUT / f"{op}.npz")


def source_info_tree(root: Path) -> list[str]:
    """Two class folders of photos under ``root`` (the layout ``readers.file`` expects); their paths."""
    rels = ["a/chelsea.png", "a/coffee.png", "b/rocket.jpg"]
    for rel in rels:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes((PHOTOS / Path(rel).name).read_bytes())
    return rels


def record_source_info() -> Path:
    """``get_property(key="source_info")`` of readers.file (file_root, and files + file_root), raw and decoded."""
    import tempfile

    from nvidia.dali import fn, pipeline_def

    result: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        rels = source_info_tree(Path(tmp))
        result["tree"] = rels
        for mode in ("file_root", "files"):
            @pipeline_def(batch_size=len(rels), num_threads=1, device_id=None, seed=1)
            def pipe():  # type: ignore[no-untyped-def]
                if mode == "file_root":
                    jpegs, _ = fn.readers.file(file_root=tmp)
                else:
                    jpegs, _ = fn.readers.file(file_root=tmp, files=rels[::-1])
                return (fn.get_property(jpegs, key="source_info"),
                        fn.get_property(fn.decoders.image(jpegs), key="source_info"))

            p = pipe()
            p.build()
            raw, decoded = p.run()
            result[mode] = [[bytes(np.array(t[i])).decode() for i in range(len(rels))] for t in (raw, decoded)]
    path = OUT / "source_info.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    return path


def dump_image_inputs() -> list[np.ndarray]:
    """Two small real images: an RGB crop and a 1-channel crop."""
    from breadth_cases import photo

    return [np.ascontiguousarray(photo("chelsea.png", 9)[:5, :7]),
            np.ascontiguousarray(photo("camera.png", 9)[:4, :6, None])]


def record_dump_image() -> Path:
    """The files ``dump_image(suffix="dbg")`` writes for ``dump_image_inputs()`` (name -> text)."""
    import os
    import tempfile

    from nvidia.dali import fn, pipeline_def

    images = dump_image_inputs()

    @pipeline_def(batch_size=len(images), num_threads=1, device_id=None, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.dump_image(fn.external_source(lambda: images, layout="HWC"), suffix="dbg")

    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            p = pipe()
            p.build()
            p.run()
        finally:
            os.chdir(here)
        files = {name: (Path(tmp) / name).read_text() for name in sorted(os.listdir(tmp))}
    path = OUT / "dump_image.json"
    path.write_text(json.dumps(files, indent=1) + "\n")
    return path


def sequence_tree(root: Path) -> None:
    """Three streams of PNG frames (7, 4 and 2 frames) cut from real photos, plus a stray text file."""
    from breadth_cases import photo
    from PIL import Image

    for k, (name, frames) in enumerate((("cat", 7), ("coffee", 4), ("astronaut", 2))):
        image = photo(f"{name}.png" if name != "cat" else "chelsea.png", 6)
        folder = root / f"stream{k}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(frames):
            Image.fromarray(np.ascontiguousarray(image[i:i + 20, 2 * i:2 * i + 24])).save(folder / f"{i:04d}.png")
    (root / "stream0" / "notes.txt").write_text("not a frame")


SEQUENCE_CONFIGS = {"len3": dict(sequence_length=3), "len2_step2_stride2": dict(sequence_length=2, step=2, stride=2),
                    "gray_len4": dict(sequence_length=4, image_type="GRAY")}


def record_sequence() -> Path:
    """One epoch of ``readers.sequence`` over ``sequence_tree`` per configuration (batch 1, in order)."""
    import tempfile

    from nvidia.dali import fn, pipeline_def, types

    arrays: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sequence_tree(Path(tmp))
        for key, kw in SEQUENCE_CONFIGS.items():
            kw = dict(kw)
            if "image_type" in kw:
                kw["image_type"] = getattr(types, str(kw["image_type"]))

            @pipeline_def(batch_size=1, num_threads=1, device_id=None, seed=1)
            def pipe():  # type: ignore[no-untyped-def]
                return fn.readers.sequence(file_root=tmp, name="r", **kw)

            p = pipe()
            p.build()
            n = p.epoch_size("r")
            for i in range(n):
                arrays[f"{key}/{i}"] = np.array(p.run()[0][0])
            arrays[f"{key}/size"] = np.array(n)
    path = OUT / "readers_sequence.npz"
    np.savez_compressed(path, **arrays)
    return path


def main(argv: list[str]) -> None:
    for op in argv or list(CASES):
        print(record(op))
    if not argv:
        print(record_source_info())
        print(record_dump_image())
        print(record_sequence())


if __name__ == "__main__":
    main(sys.argv[1:])
