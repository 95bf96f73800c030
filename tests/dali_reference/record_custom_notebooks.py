"""Record what DALI 2.4's CPU pipelines give for the cases of ``custom_notebook_cases.py``.

Run with a Python that has ``nvidia-dali-cuda130`` and ``numba`` installed (no GPU needed)::

    python tests/dali_reference/record_custom_notebooks.py [case ...]

It writes ``tests/data/dali/customnotebooks/<case>.npz`` (compressed; the inputs
are small crops of the photos in ``tests/data/photos``), which
``tests/integration/test_dali_custom_notebooks.py`` compares streamflow against.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import nvidia.dali as dali
from custom_notebook_cases import PIPELINE_CASES
from npz_cases import record_each
from nvidia.dali import fn, types

OUT = HERE.parent / "data" / "dali" / "customnotebooks"


def main(names: list[str]) -> int:
    return record_each({name: (lambda case=case: case(dali, fn, types)) for name, case in PIPELINE_CASES.items()},
                       OUT, names)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
