"""``grid_mask`` against DALI 2.4's recorded CPU outputs (tolerance: identical)."""

from __future__ import annotations

import numpy as np
import pytest
from augment_refs import as_f32, batch, images, max_diff
from dali_reference.augment_cases import GRID_MASKS
from helpers import make_chunk, run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.grid_mask import GridMask, grid_keep_mask

CASES = GRID_MASKS


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(case: str) -> None:
    (out,) = run_arrays(images("grid_mask"), lambda x: fn.grid_mask(x, **CASES[case]))
    assert max_diff(out, batch("grid_mask", f"u8/{case}")) == 0


def test_float_and_per_sample_arguments() -> None:
    (out,) = run_arrays(as_f32(images("grid_mask")), lambda x: fn.grid_mask(x, **CASES["rotated_shifted"]))
    assert max_diff(out, batch("grid_mask", "f32/rotated_shifted")) == 0
    img = np.full((12, 12), 9, np.int16)
    tiles = [np.int32(4), np.int32(6)]
    (out,) = run_arrays([img, img], lambda x, t: fn.grid_mask(x, tile=t, ratio=0.5), t=tiles)
    for o, t in zip(out, tiles):
        keep = grid_keep_mask(12, 12, int(t), 0.5, 0.0, 0.0, 0.0)
        assert np.array_equal(o, np.where(keep, img, 0))
        assert (o == 0).mean() == pytest.approx(0.25, abs=0.05)


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="tile must be a positive integer"):
        GridMask(tile=0)
    chunk = make_chunk([np.zeros((3, 3), np.float64), np.zeros(4, np.uint8)])
    GridMask().run(chunk)
    assert "unsupported type float64" in str(chunk.failures[0]) and "HWC or HW" in str(chunk.failures[1])
