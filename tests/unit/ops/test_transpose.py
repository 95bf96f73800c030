"""``transpose``: permutations and layout names.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    rand_image,
)

import streamflow as sf
from streamflow import fn


# --- transpose --------------------------------------------------------------
def test_transpose_perm_layout_and_default_reverse() -> None:
    images = [rand_image(4, 5, seed=1), rand_image(6, 3, seed=2)]

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        x = fn.external_source([images], layout="HWC")
        return fn.transpose(x, perm=[2, 0, 1]), fn.transpose(x), fn.transpose(x, perm=[1, 0, 2], output_layout="WHC")

    with pipe() as p:
        chw, rev, named = p.run()
    assert np.array_equal(chw.at(0), images[0].transpose(2, 0, 1)) and chw.layout == "CHW"
    assert np.array_equal(rev.at(1), images[1].transpose(2, 1, 0)) and rev.layout == "CWH"
    assert np.array_equal(named.at(1), images[1].transpose(1, 0, 2)) and named.layout == "WHC"
    with pytest.raises(sf.PipelineDefinitionError, match="permutation"):
        fn.transpose(fn.external_source([[]]), perm=[0, 0, 1])
