"""``paste`` and ``multi_paste`` against DALI 2.4's recorded outputs (exact), and their errors.

Cases in ``tests/dali_reference/geometry_cases.py`` (real photos; a sweep of
120 real patches for paste's truncations; mosaics with absolute, relative and
per-sample regions for multi_paste). Tolerance: none (bit-exact).
"""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.geometry_cases import MULTI_PASTE, PASTE, check_case
from helpers import assert_gpu_equals_cpu, make_chunk

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.paste import MultiPaste, Paste, paste_geometry


@pytest.mark.parametrize("case", PASTE, ids=lambda c: c.name)
def test_paste_matches_dali(case) -> None:
    check_case("paste", case)


@pytest.mark.parametrize("case", MULTI_PASTE, ids=lambda c: c.name)
def test_multi_paste_matches_dali(case) -> None:
    check_case("multi_paste", case)


def test_paste_geometry_truncates() -> None:
    assert paste_geometry(5, 7, 1.3, 0.5, 0.5, 0) == (6, 9, 0, 1)
    assert paste_geometry(5, 7, 1.0, 0.5, 0.5, 12.5) == (12, 12, 3, 2)


def test_paste_channel_mismatch_fails_the_sample() -> None:
    op = Paste(ratio=2.0, fill_value=(1, 2, 3))
    chunk = make_chunk([np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4, 1), np.uint8)])
    out = op.run(chunk)[0]
    assert out[0].shape == (8, 8, 3) and out[1] is None
    assert "channels" in str(chunk.failures[1])


def test_paste_float_images() -> None:
    op = Paste(ratio=2.0, fill_value=(0.5,), n_channels=1)
    out = op.run(make_chunk([np.ones((2, 2, 1), np.float32)]))[0][0]
    assert out.dtype == np.float32 and out.sum() == 4 + 0.5 * 12


def test_multi_paste_in_ids_sees_the_whole_batch() -> None:
    # 8 samples over 2 threads would be several chunks; in_ids must reach every row.
    tiles = [np.full((4, 4, 1), i, np.uint8) for i in range(8)]

    @sf.pipeline_def(batch_size=8, num_threads=2, seed=1)
    def pipe():
        x = fn.external_source([tiles], layout="HWC")
        return fn.multi_paste(x, in_ids=[7, 0], out_anchors=[[0, 0], [2, 2]], shapes=[[4, 4], [2, 2]])

    with pipe() as p:
        out = p.run()[0]
    for i in range(8):
        s = np.asarray(out.at(i))[..., 0]
        assert s[0, 0] == 7 and s[1, 3] == 7 and s[2, 2] == 0 and s[3, 3] == 0


def test_multi_paste_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="exactly one input"):
        @sf.pipeline_def(batch_size=1, num_threads=1)
        def pipe():
            x = fn.external_source([[np.zeros((2, 2, 1), np.uint8)]])
            return fn.multi_paste(x, x, in_ids=[0])
        pipe()
    op = MultiPaste(num_inputs=1, in_ids=[0, 5], output_size=[4, 4])
    chunk = make_chunk([np.zeros((2, 2, 1), np.uint8)])
    assert op.run(chunk)[0] == [None]
    assert "outside the batch" in str(chunk.failures[0])


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------



@pytest.mark.parametrize("fill", [(255, 0, 128), (17,)])
def test_gpu_paste_equals_cpu(kernel_ctx, grid, fill) -> None:
    from dali_reference.geometry_cases import _images, _paste_sweep

    images = _images()
    op = Paste(ratio=1.37, fill_value=fill, paste_x=0.1, paste_y=0.9)
    assert_gpu_equals_cpu(kernel_ctx, op, images, what=f"paste {fill}")
    samples, extra = _paste_sweep()
    op = Paste(ratio=None, fill_value=(7,), n_channels=1)
    args = {"ratio": extra["r"], "paste_x": extra["px"], "paste_y": extra["py"], "min_canvas_size": extra["mc"]}
    assert_gpu_equals_cpu(kernel_ctx, op, samples, args, what="paste sweep")
