"""Record what DALI 2.4 gives for the pipelines of ``notebook_cases.py`` (DALI's data-loading tutorials' features).

Runnable with any Python that has ``nvidia-dali-cuda130`` (2.4), ``numpy``,
``lmdb`` and ``webdataset`` installed (no GPU needed: every pipeline is a CPU
pipeline, ``device_id=None``)::

    python tests/dali_reference/record_notebooks.py [CASE ...]

It builds the data sets of ``notebook_cases.build_data`` (real JPEGs of
tests/data as a file tree, WebDataset shards, TFRecord, RecordIO, Caffe /
Caffe2 LMDB; .npy slices of tests/data/volumes; tests/data/coco) in a
temporary folder, runs every case (or the named ones) with DALI's ``fn``,
``types``, ``pipeline_def``, ``tfrecord`` and dynamic mode, and stores the
arrays in ``tests/data/dali/notebooks/notebooks.npz`` (named cases replace
their own arrays only).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import notebook_cases as C

OUT = TESTS / "data" / "dali" / "notebooks" / "notebooks.npz"


def main() -> None:
    names = sys.argv[1:] or list(C.CASES)
    arrays: dict[str, np.ndarray] = {}
    if OUT.exists() and sys.argv[1:]:
        with np.load(OUT) as old:
            arrays = {k: old[k] for k in old.files if k.split("/", 1)[0] not in names}
    lib = C.libraries("dali")
    with tempfile.TemporaryDirectory() as tmp:
        data = C.build_data(Path(tmp) / "data")
        for name in names:
            out = C.CASES[name](lib, data)
            print(f"{name}: {len(out)} arrays")
            arrays.update(out)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
