"""Record what DALI 2.4's CPU pipelines give for the operator-tutorial cases of ``op_notebook_cases.py``.

Run with a Python that has ``nvidia-dali-cuda130`` installed (no GPU needed)::

    python tests/dali_reference/record_op_notebooks.py [case ...]

It writes ``tests/data/dali/opnotebooks/<case>.npz`` (compressed; the inputs are
small crops of the photos in ``tests/data/photos``), which
``tests/integration/test_dali_op_notebooks.py`` compares streamflow against.
Every case is deterministic: parameters DALI's tutorials draw at random are fed
in, so the two libraries' different random streams play no part.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import nvidia.dali as dali
import nvidia.dali.experimental.dynamic as ndd
from npz_cases import record_each
from nvidia.dali import fn, types
from op_notebook_cases import PIPELINE_CASES, dynamic_mode

OUT = HERE.parent / "data" / "dali" / "opnotebooks"


def main(names: list[str]) -> int:
    cases = {name: (lambda case=case: case(dali, fn, types)) for name, case in PIPELINE_CASES.items()}
    cases["dynamic_mode"] = lambda: dynamic_mode(ndd, types)
    return record_each(cases, OUT, names)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
