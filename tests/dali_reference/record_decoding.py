"""Record DALI 2.4's CPU image decoder on the decoding corpus (tests/data).

Runs ``fn.decoders.image(device="cpu")`` of DALI (``pip install
nvidia-dali-cuda130``; CPU pipelines need no GPU: ``device_id=None``) over
every file of ``tests/data/pillow-corpus`` and ``tests/data/jpeg-quirks`` for
each configuration in ``CONFIGS`` (output_type, dtype, adjust_orientation),
and writes ``tests/data/dali/decoding/decoded.json`` (per file and
configuration: shape, dtype, SHA-256 of the samples, or DALI's error) and
``decoded.npz`` (a subsample of each output: the pixels of a grid of at most
16 x 16, all of them for small images), which ``tests/unit/test_decoding_corpus.py``
compares streamflow against.

Run from the repository root with any Python that has DALI and numpy::

    python tests/dali_reference/record_decoding.py

DALI 2.4 crashes on some inputs (a grayscale JPEG decoded to ``ANY_DATA``
corrupts the heap), so each configuration runs in a child process, which is
restarted after a crash; the crash is recorded for the file that caused it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
OUT = DATA / "dali" / "decoding"
FOLDERS = ["pillow-corpus", "jpeg-quirks"]
SUFFIXES = {".jpg", ".png", ".tif", ".tiff", ".bmp", ".ppm", ".pgm", ".pbm", ".jp2", ".j2k", ".webp"}

#: name -> (output_type, dtype, adjust_orientation)
CONFIGS = {
    "RGB-uint8": ("RGB", "UINT8", True),
    "BGR-uint8": ("BGR", "UINT8", True),
    "GRAY-uint8": ("GRAY", "UINT8", True),
    "YCbCr-uint8": ("YCbCr", "UINT8", True),
    "ANY_DATA-uint8": ("ANY_DATA", "UINT8", True),
    "RGB-uint16": ("RGB", "UINT16", True),
    "ANY_DATA-uint16": ("ANY_DATA", "UINT16", True),
    "RGB-float32": ("RGB", "FLOAT", True),
    "RGB-uint8-unoriented": ("RGB", "UINT8", False),
}

GRID = 16  # subsample: at most GRID x GRID pixels


def corpus_files() -> list[str]:
    """Paths relative to tests/data, sorted."""
    files = []
    for folder in FOLDERS:
        for p in sorted((DATA / folder).iterdir()):
            if p.suffix.lower() in SUFFIXES:
                files.append(f"{folder}/{p.name}")
    return files


def subsample(a: np.ndarray) -> np.ndarray:
    """The pixels at rows ``linspace(0, H-1, min(H, GRID))`` and the same for columns."""
    h, w = a.shape[:2]
    ys = np.linspace(0, h - 1, min(h, GRID)).round().astype(int)
    xs = np.linspace(0, w - 1, min(w, GRID)).round().astype(int)
    return a[ys][:, xs]


def worker(config: str) -> None:
    """Decode the files named on stdin with one DALI pipeline; one JSON line each."""
    from nvidia.dali import fn, pipeline_def, types

    output_type, dtype, orient = CONFIGS[config]

    def build():
        @pipeline_def(batch_size=1, num_threads=1, device_id=None, prefetch_queue_depth=1)
        def pipe():
            x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
            return fn.decoders.image(x, device="cpu", output_type=getattr(types, output_type),
                                     dtype=getattr(types, dtype), adjust_orientation=orient)

        p = pipe()
        p.build()
        return p

    p = build()
    for line in sys.stdin:
        name = line.strip()
        data = np.frombuffer((DATA / name).read_bytes(), np.uint8)
        try:
            p.feed_input("x", [data])
            (out,) = p.run()
            a = np.ascontiguousarray(np.array(out.as_tensor())[0])
            sub = np.ascontiguousarray(subsample(a))
            rec = {
                "shape": list(a.shape), "dtype": str(a.dtype),
                "sha256": hashlib.sha256(a.tobytes()).hexdigest(),
                "sample_shape": list(sub.shape),
                "sample": base64.b64encode(sub.tobytes()).decode(),
            }
        except Exception as exc:  # DALI's error for this file; the pipeline must be rebuilt
            rec = {"error": str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else repr(exc)}
            p = build()
        print(json.dumps({"file": name, **rec}), flush=True)


def record(config: str, files: list[str]) -> dict[str, dict]:
    """Run ``config`` over ``files`` in child processes, restarting after a crash."""
    results: dict[str, dict] = {}
    todo = list(files)
    while todo:
        proc = subprocess.run([sys.executable, __file__, "--worker", config], input="\n".join(todo),
                              capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                rec = json.loads(line)
                results[rec.pop("file")] = rec
        todo = [f for f in todo if f not in results]
        if proc.returncode != 0 and todo:
            results[todo[0]] = {"crash": f"DALI's process died (exit status {proc.returncode})"}
            todo = todo[1:]
    return results


def main() -> None:
    import nvidia.dali

    files = corpus_files()
    OUT.mkdir(parents=True, exist_ok=True)
    meta: dict[str, dict] = {"dali_version": nvidia.dali.__version__, "configs": {}}  # type: ignore[dict-item]
    arrays: dict[str, np.ndarray] = {}
    for config in CONFIGS:
        results = record(config, files)
        for name, rec in results.items():
            if "sample" in rec:
                sample = np.frombuffer(base64.b64decode(rec.pop("sample")), dtype=rec["dtype"])
                arrays[f"{config}/{name}"] = sample.reshape(rec.pop("sample_shape"))
        meta["configs"][config] = {name: results[name] for name in files}
        print(config, sum("sha256" in r for r in results.values()), "decoded of", len(files), flush=True)
    (OUT / "decoded.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    np.savez_compressed(OUT / "decoded.npz", **arrays)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        main()
