"""The detection operators' GPU implementations on DALI 2.4's recorded cases (``tests/data/dali/detection``).

``check_recorded_on_gpu(ctx, name)`` builds the operator a recorded case adds,
runs its GPU implementation through ``ctx`` (the kernels' host build in CI: the
code over numpy; a GPU: the same code over cupy) on the recorded inputs, and
checks it against the CPU operator (bit for bit; ``gpu_ulp`` on a real GPU)
and against DALI's recorded outputs (``dali_ulp``: the CPU tests' tolerance).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from dali_reference.record_detection import CASES, load
from helpers import make_chunk, recorded_operator, run_gpu_outputs


def _close(got: np.ndarray, want: np.ndarray, ulp: int, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
    if ulp and got.dtype.kind == "f":
        np.testing.assert_array_max_ulp(got, want, maxulp=ulp)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check_recorded_on_gpu(ctx: Any, name: str, dali_ulp: int = 0, gpu_ulp: int = 0) -> None:
    inputs, want = load(name)
    op, op_inputs, args = recorded_operator(CASES[name].build, inputs)
    gpu, failures = run_gpu_outputs(ctx, op, op_inputs, args)
    assert not failures, failures
    chunk = make_chunk(op_inputs[0], args)
    chunk.inputs.extend(op_inputs[1:])
    cpu = op.run(chunk)
    assert not chunk.failures
    on_device = ctx.xp is not np
    for k, (g_out, c_out, w_out) in enumerate(zip(gpu, cpu, want[-len(gpu):])):
        for i, (g, c, w) in enumerate(zip(g_out, c_out, w_out)):
            _close(g, np.asarray(c), gpu_ulp if on_device else 0, f"{name} output {k} sample {i} (GPU vs CPU)")
            _close(g, w, dali_ulp, f"{name} output {k} sample {i} (GPU vs DALI)")
