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

OUT = TESTS / "data" / "dali" / "frameworks" / "frameworks.npz"


def main() -> None:
    names = sys.argv[1:] or list(C.CASES)
    arrays: dict[str, np.ndarray] = {}
    if OUT.exists() and sys.argv[1:]:
        with np.load(OUT) as old:
            arrays = {k: old[k] for k in old.files if k.split("/", 1)[0] not in names}
    lib = C.libraries("dali")
    with tempfile.TemporaryDirectory() as tmp:
        data = C.build_data(Path(tmp))
        for name in names:
            got = C.CASES[name](lib, data)
            arrays.update({f"{name}/{k}": v for k, v in got.items()})
            print(f"{name}: {len(got)} arrays")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)


if __name__ == "__main__":
    main()
