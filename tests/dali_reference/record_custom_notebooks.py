"""Record what DALI 2.4's CPU pipelines give for the cases of ``custom_notebook_cases.py``.

Run with a Python that has ``nvidia-dali-cuda130`` and ``numba`` installed (no GPU needed)::

    python tests/dali_reference/record_custom_notebooks.py [case ...]

It writes ``tests/data/dali/customnotebooks/<case>.npz`` (compressed; the inputs
are small crops of the photos in ``tests/data/photos``), which
``tests/integration/test_dali_custom_notebooks.py`` compares streamflow against.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import nvidia.dali as dali
from custom_notebook_cases import PIPELINE_CASES
from nvidia.dali import fn, types
from op_notebook_cases import flatten

OUT = HERE.parent / "data" / "dali" / "customnotebooks"


def main(names: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in names or list(PIPELINE_CASES):
        try:
            result = PIPELINE_CASES[name](dali, fn, types)
        except Exception:  # report and go on: one unsupported feature should not stop the others
            failed += 1
            print(f"{name}: FAILED\n{traceback.format_exc()}")
            continue
        flat = flatten(result)
        np.savez_compressed(OUT / f"{name}.npz", **flat)
        print(f"{name}: {len(flat)} arrays, {(OUT / f'{name}.npz').stat().st_size} bytes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
