"""``pad`` (DALI's generic N-D pad): against DALI 2.4 CPU outputs (identical) and DALI's documented examples."""

from __future__ import annotations

import numpy as np
import pytest
from audio_helpers import assert_close_decimated, dali, excerpts, photo
from dali_reference.audio_cases import PADS
from helpers import run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.pad import Pad


@pytest.mark.parametrize("case", sorted(PADS))
def test_signals_match_dali(case: str) -> None:
    ref = dali("pad")
    (out,) = run_arrays(excerpts(), lambda a: fn.pad(a, **PADS[case]))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"{case}/{i}", atol=0)


def test_integers_spectrograms_and_images_match_dali() -> None:
    ref = dali("pad")
    x = excerpts()
    (out,) = run_arrays([(v * 32767).astype(np.int16) for v in x], lambda a: fn.pad(a, fill_value=-7.9))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"int16_fill/{i}", atol=0)
    specs = [np.ascontiguousarray(v.reshape(-1)[: 40 * (len(v) // 40)].reshape(40, -1)) for v in x]
    for case, kw in {"nemo": dict(fill_value=0.0, axes=(0, 1), align=(16, 1), shape=(1, -1)),
                     "names_t": dict(axis_names="t", align=7)}.items():
        (out,) = run_arrays(specs, lambda a, kw=kw: fn.pad(fn.reshape(a, layout="ft"), **kw))
        for i, o in enumerate(out):
            assert_close_decimated(o, ref, f"{case}/{i}", atol=0)
    imgs = [photo(), np.ascontiguousarray(photo()[:41, :57])]
    (out,) = run_arrays(imgs, lambda a: fn.pad(fn.reshape(a, layout="HWC"), axis_names="HW", fill_value=255))
    for i, o in enumerate(out):
        assert_close_decimated(o, ref, f"image_hw/{i}", atol=0)


def test_dali_doc_examples() -> None:
    batch = [np.array([3, 4, 2, 5, 4]), np.array([2, 2]), np.array([3, 199, 5])]
    (out,) = run_arrays(batch, lambda a: fn.pad(a, fill_value=-1, axes=(0,), shape=(1,), align=(2,)))
    assert [o.tolist() for o in out] == [[3, 4, 2, 5, 4, -1], [2, 2], [3, 199, 5, -1]]
    two = [np.arange(1, 7).reshape(2, 3), np.array([[1, 2], [4, 5], [6, 7]])]
    (out,) = run_arrays(two, lambda a: fn.pad(a, axes=(0, 1), align=(1, 2), shape=(4, -1)))
    assert [o.shape for o in out] == [(4, 4), (4, 4)] and out[1][2].tolist() == [6, 7, 0, 0]


def test_whole_batch_even_with_many_threads() -> None:
    """The batch's largest extent is found across the whole batch, not per worker chunk."""
    batch = [np.ones(n, np.float32) for n in range(1, 41)]
    (out,) = run_arrays(batch, lambda a: fn.pad(a))
    assert {o.shape for o in out} == {(40,)}


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="exclusive"):
        Pad(axes=[0], axis_names="t")
    with pytest.raises(Exception, match="same number of dimensions"):
        run_arrays([np.zeros(3), np.zeros((2, 2))], lambda a: fn.pad(a))


# --- the GPU implementation -----------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(PADS))
def test_gpu_equals_cpu(kernel_ctx, case: str) -> None:
    from audio_helpers import gpu_vs_cpu

    gpu_vs_cpu(kernel_ctx, Pad(**PADS[case]), excerpts())
    gpu_vs_cpu(kernel_ctx, Pad(**PADS[case]), [(v * 300).astype(np.int16) for v in excerpts()])
