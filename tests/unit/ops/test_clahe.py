"""``clahe`` against DALI 2.4's CPU operator on real photos: bit-identical (both run OpenCV's CLAHE;
RGB luminance through OpenCV's Lab conversion), gray and RGB, odd sizes and grids."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.breadth_cases import CLAHE, check
from helpers import run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError

pytest.importorskip("cv2")


@pytest.mark.parametrize("case", CLAHE, ids=lambda c: c.name)
def test_clahe_matches_dali(case) -> None:
    check("clahe", case)


def test_arguments_are_checked() -> None:
    x = [np.zeros((8, 8, 1), np.uint8)]
    with pytest.raises(PipelineDefinitionError, match="tiles"):
        run_arrays(x, lambda a: fn.clahe(a, tiles_x=0, tiles_y=2, clip_limit=2.0))
    with pytest.raises(PipelineDefinitionError, match="power of 2"):
        run_arrays(x, lambda a: fn.clahe(a, tiles_x=2, tiles_y=2, clip_limit=2.0, bins=100))
    with pytest.raises(TypeError, match="tiles_x"):
        run_arrays(x, lambda a: fn.clahe(a, clip_limit=2.0))
