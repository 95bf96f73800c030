"""Record what DALI 2.4's CPU pipelines give for the audio/video tutorial cases of ``av_notebook_cases.py``.

Run with a Python that has ``nvidia-dali-cuda130`` installed (no GPU needed)::

    python tests/dali_reference/record_av_notebooks.py [case ...]

It writes ``tests/data/dali/avnotebooks/<case>.npz`` (compressed; frames as
hashes, spectra sub-sampled), which ``tests/integration/test_dali_av_notebooks.py``
compares streamflow against. The inputs are the repository's clips
(``tests/data/audio``, ``tests/data/dali/video``) and PNG frames the cases write to a
temporary folder. Video cases use DALI's CPU reader (``fn.experimental.readers.video``):
DALI 2.4's ``fn.readers.video`` decodes on the GPU only.
"""

from __future__ import annotations

import sys
import tempfile
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import nvidia.dali as dali
import nvidia.dali.experimental.dynamic as ndd
from av_notebook_cases import PIPELINE_CASES, flatten
from nvidia.dali import fn, types

OUT = HERE.parent / "data" / "dali" / "avnotebooks"


def main(names: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in names or list(PIPELINE_CASES):
        try:
            with tempfile.TemporaryDirectory() as tmp:
                result = PIPELINE_CASES[name](dali, fn, types, ndd, Path(tmp))
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
