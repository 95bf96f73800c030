"""Record DALI 2.4's outputs of ``fn.resize`` on the cases of ``resize_cases.py``.

Runs with any Python that has DALI (``pip install nvidia-dali-cuda130``: CPU
pipelines with ``device_id=None``, no GPU needed), Pillow and numpy::

    python tests/dali_reference/record_resize.py

Writes ``tests/data/dali/resize/resize.npz`` with keys
``<case>/<output>/<sample>`` and ``<case>/error`` (1 when DALI refused the
case), plus ``__dali_version__``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from record_geometry import record_cases
from resize_cases import CASES, REFERENCE


def main() -> None:
    record_cases(CASES, REFERENCE)
    print(REFERENCE, f"{REFERENCE.stat().st_size / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
