"""``water``, ``sphere`` against DALI 2.4's CPU operators on real photos; ``jitter`` (GPU-only in
DALI, random) for its invariants and determinism; the GPU versions through the host context.

Tolerances: nearest-neighbour outputs exact; linear within 1 on uint8 (measured: 0.2% of the
pixels differ by 1) and 2e-3 on float32 (measured 1.3e-3 on values up to 310): float32 rounding of
the interpolation.
"""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.breadth_cases import SPHERE, WATER, check
from dali_reference.geometry_cases import photo
from helpers import assert_same_outputs, make_chunk, run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.displacement import Jitter, Sphere, Water
from streamflow.types import InterpType


@pytest.mark.parametrize("case", WATER, ids=lambda c: c.name)
def test_water_matches_dali(case) -> None:
    check("water", case)


@pytest.mark.parametrize("case", SPHERE, ids=lambda c: c.name)
def test_sphere_matches_dali(case) -> None:
    check("sphere", case)


def test_jitter_moves_pixels_within_the_degree() -> None:
    img = photo("chelsea.png", 3)
    a, b, c = run_arrays([img, img], lambda x: (fn.jitter(x, nDegree=4), fn.jitter(x, nDegree=4), fn.jitter(x, nDegree=0)))
    assert not np.array_equal(a[0], img) and not np.array_equal(a[0], b[0])  # two operators, two streams
    assert np.array_equal(c[0], img)
    again = run_arrays([img, img], lambda x: fn.jitter(x, nDegree=4))[0]
    assert np.array_equal(again[0], a[0]) and not np.array_equal(again[0], again[1])  # per seed, per sample
    # every output pixel is an input pixel at most 2 away (offsets in [-2, 2], clamped)
    h, w, _ = img.shape
    for y in range(0, h, 7):
        for x in range(0, w, 9):
            window = img[max(0, y - 2): y + 3, max(0, x - 2): x + 3].reshape(-1, 3)
            assert (window == a[0][y, x]).all(axis=1).any()


def test_interp_and_layout_errors() -> None:
    img = photo("chelsea.png", 6)
    with pytest.raises(PipelineDefinitionError, match="INTERP_NN or INTERP_LINEAR"):
        run_arrays([img], lambda x: fn.water(x, interp_type="INTERP_CUBIC"))
    with pytest.raises(Exception, match="HWC uint8 or float32"):
        run_arrays([img.astype(np.int16)], lambda x: fn.sphere(x))


@pytest.mark.parametrize("op", [
    Water(ampl_x=3.0, ampl_y=8.0, freq_x=0.1, freq_y=0.05, phase_x=0.2, phase_y=0.0,
          interp=InterpType.INTERP_LINEAR, fill_value=9.0),
    Sphere(interp=InterpType.INTERP_NN, fill_value=0.0),
    Jitter(degree=3, interp=InterpType.INTERP_NN, fill_value=0.0),
], ids=["water", "sphere", "jitter"])
def test_gpu_equals_cpu(kernel_ctx, op) -> None:
    from streamflow.gpu.ops import find_impl

    images = [photo("coffee.png", 5), photo("chelsea.png", 4).astype(np.float32)]
    want = op.run(make_chunk(images))[0]
    with kernel_ctx.activate():
        got = find_impl(op)(op, make_chunk(kernel_ctx.to_device(images)), kernel_ctx)[0]
    assert_same_outputs([kernel_ctx.to_host(g) for g in got], want, op.name)
