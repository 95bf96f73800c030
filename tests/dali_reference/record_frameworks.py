"""Record what DALI 2.4 gives for the cases of ``framework_cases.py`` (DALI's PyTorch tutorials' features).

Runnable with any Python that has ``nvidia-dali-cuda130`` (2.4), ``torch``, ``torchdata``,
``numpy``, ``lmdb`` and ``webdataset`` (no GPU needed: every pipeline is a CPU
pipeline, ``device_id=None``)::

    python tests/dali_reference/record_frameworks.py [CASE ...]

It writes the reference data sets in a temporary folder, runs every case (or
the named ones) with DALI's ``fn``, ``ops``, ``types``, ``pipeline_def`` and
``nvidia.dali.plugin.pytorch``, and stores the arrays in
``tests/data/dali/frameworks/frameworks.npz`` (named cases replace their own
arrays only).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import framework_cases as C
from npz_cases import record_into_one

OUT = TESTS / "data" / "dali" / "frameworks" / "frameworks.npz"


def main() -> None:
    lib = C.libraries("dali")

    def run(name: str) -> dict[str, np.ndarray]:
        return {f"{name}/{k}": v for k, v in C.CASES[name](lib, data).items()}

    with tempfile.TemporaryDirectory() as tmp:
        data = C.build_data(Path(tmp))
        record_into_one(run, list(C.CASES), OUT, sys.argv[1:])


if __name__ == "__main__":
    main()
