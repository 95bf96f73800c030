"""``debayer`` against DALI 2.4's CPU operator on Bayer mosaics of real photos: bit-identical for
every algorithm and tile position (both run OpenCV's demosaicing), uint8 and uint16, per-sample
positions and sequences."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.breadth_cases import DEBAYER, check
from helpers import run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError

pytest.importorskip("cv2")


@pytest.mark.parametrize("case", DEBAYER, ids=lambda c: c.name)
def test_debayer_matches_dali(case) -> None:
    check("debayer", case)


def test_arguments_are_checked() -> None:
    x = [np.zeros((4, 4), np.uint8)]
    with pytest.raises(PipelineDefinitionError, match="algorithm"):
        run_arrays(x, lambda a: fn.debayer(a, blue_position=[0, 0], algorithm="magic"))
    with pytest.raises(PipelineDefinitionError, match="blue_position"):
        run_arrays(x, lambda a: fn.debayer(a, blue_position=[2, 0]))
    out = run_arrays(x, lambda a: fn.experimental.debayer(a, blue_position=[0, 0]))[0][0]
    assert out.shape == (4, 4, 3)
