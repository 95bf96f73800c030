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

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import notebook_cases as C
from npz_cases import record_into_one

OUT = TESTS / "data" / "dali" / "notebooks" / "notebooks.npz"


def main() -> None:
    lib = C.libraries("dali")
    with tempfile.TemporaryDirectory() as tmp:
        data = C.build_data(Path(tmp) / "data")
        record_into_one(lambda name: C.CASES[name](lib, data), list(C.CASES), OUT, sys.argv[1:])


if __name__ == "__main__":
    main()
