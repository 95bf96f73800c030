"""Record what DALI 2.4's CPU pipelines give for ``if``/``else`` on pipeline data.

Run with a Python that has ``nvidia-dali-cuda130`` installed (no GPU needed)::

    python tests/dali_reference/record_conditionals.py

It writes ``tests/data/dali/conditionals/scalars.json`` and ``images.npz``,
which ``tests/unit/ops/test_conditional.py`` compares streamflow against.
Every condition is deterministic (computed from the data or fed in), so the
two libraries' different random streams play no part.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conditional_cases import IMAGE_CASES, SCALAR_CASES, image_inputs, scalar_inputs
from nvidia.dali import fn, pipeline_def, types

OUT = HERE.parent / "data" / "dali" / "conditionals"


def _constant(batch):  # type: ignore[no-untyped-def]
    return lambda: batch  # no parameter: DALI passes the iteration to a callback that takes one


def run(body, inputs):  # type: ignore[no-untyped-def]
    batch = len(inputs[0])

    @pipeline_def(batch_size=batch, num_threads=1, device_id=None, enable_conditionals=True, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        nodes = [fn.external_source(source=_constant(col), batch=True) for col in inputs]
        out = body(fn, types, *nodes)
        return out if isinstance(out, tuple) else (out,)

    p = pipe()
    p.build()
    return [[np.array(t.at(i)) for i in range(batch)] for t in p.run()]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    scalars = {}
    for name, body in SCALAR_CASES.items():
        (out,) = run(body, scalar_inputs())
        scalars[name] = {"dtype": str(out[0].dtype), "values": [o.tolist() for o in out]}
    (OUT / "scalars.json").write_text(json.dumps(scalars, indent=1, sort_keys=True) + "\n")
    arrays = {}
    for name, body in IMAGE_CASES.items():
        (out,) = run(body, image_inputs())
        for i, o in enumerate(out):
            arrays[f"{name}/{i}"] = o
    np.savez_compressed(OUT / "images.npz", **arrays)
    print(f"wrote {len(scalars)} scalar and {len(IMAGE_CASES)} image cases to {OUT}")


if __name__ == "__main__":
    main()
