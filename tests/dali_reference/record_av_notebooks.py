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
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import nvidia.dali as dali
import nvidia.dali.experimental.dynamic as ndd
from av_notebook_cases import PIPELINE_CASES
from npz_cases import record_each
from nvidia.dali import fn, types

OUT = HERE.parent / "data" / "dali" / "avnotebooks"


def _in_scratch(case):  # type: ignore[no-untyped-def]
    def run():  # type: ignore[no-untyped-def]
        with tempfile.TemporaryDirectory() as tmp:
            return case(dali, fn, types, ndd, Path(tmp))

    return run


def main(names: list[str]) -> int:
    return record_each({name: _in_scratch(case) for name, case in PIPELINE_CASES.items()}, OUT, names)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
