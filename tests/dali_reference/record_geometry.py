"""Record DALI 2.4's outputs for the geometry operators' reference cases.

Runs with any Python that has DALI (``pip install nvidia-dali-cuda130``, CPU
pipelines only, ``device_id=None``: no GPU needed), Pillow and numpy::

    python tests/dali_reference/record_geometry.py            # every operator
    python tests/dali_reference/record_geometry.py slice      # some of them

The cases (inputs, pipelines, tolerances) are in ``geometry_cases.py``; each
operator's outputs go to ``tests/data/dali/geometry/<operator>.npz`` with keys
``<case>/<output>/<sample>`` and ``<case>/error`` (1 when DALI refused the
case), plus ``__dali_version__``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from geometry_cases import CASES, Case

OUT = HERE.parent / "data" / "dali" / "geometry"


def _source(values: list[np.ndarray]) -> Any:
    return lambda: values  # no parameter: DALI would pass the iteration index


def run_case(case: Case) -> list[list[np.ndarray]] | None:
    """DALI's outputs of ``case`` (per output, per sample), or ``None`` if DALI refuses it."""
    import nvidia.dali as dali
    from nvidia.dali import fn, pipeline_def, types

    samples = case.samples()
    extra = case.extra()
    m = SimpleNamespace(fn=fn, types=types)

    @pipeline_def(batch_size=len(samples), num_threads=1, device_id=None, seed=1234)
    def pipe() -> Any:
        x = fn.external_source(_source(samples), batch=True, layout=case.layout)
        nodes = {k: fn.external_source(_source(v), batch=True) for k, v in extra.items()}
        out = case.build(m, x, **nodes)
        return out if isinstance(out, tuple) else (out,)

    try:
        p = pipe()
        p.build()
        outputs = p.run()
    except Exception as err:  # DALI raises RuntimeError / ValueError / TypeError for refused cases
        if not case.error:
            raise RuntimeError(f"DALI refused case {case.name!r}: {err}") from err
        return None
    if case.error:
        raise RuntimeError(f"case {case.name!r} is marked error=True but DALI ran it")
    del dali
    return [[np.array(o[i]) for i in range(len(samples))] for o in outputs]


def record_cases(cases: list[Case], path: Path) -> Path:
    """Run ``cases`` on DALI and save the outputs to ``path`` (keys ``<case>/<output>/<sample>``,
    ``<case>/error``, ``__dali_version__``); also used by ``record_breadth.py`` and ``record_resize.py``."""
    import nvidia.dali as dali

    arrays: dict[str, np.ndarray] = {"__dali_version__": np.array(dali.__version__)}
    for case in cases:
        result = run_case(case)
        arrays[f"{case.name}/error"] = np.array(result is None)
        for k, output in enumerate(result or []):
            for i, sample in enumerate(output):
                arrays[f"{case.name}/{k}/{i}"] = sample
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    return path


def record(op: str) -> Path:
    return record_cases(CASES[op], OUT / f"{op}.npz")


def main(argv: list[str]) -> None:
    for op in argv or list(CASES):
        print(record(op))


if __name__ == "__main__":
    main(sys.argv[1:])
