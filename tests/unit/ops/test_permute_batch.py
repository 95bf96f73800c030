"""``permute_batch``: DALI 2.4's results (recorded: ``out[i] = in[indices[i]]``), whole-batch execution, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import run_arrays

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError, PipelineError

DATA = [np.array([i, 10 * i], np.int32) for i in range(4)]


def test_constant_indices_match_dali() -> None:
    # DALI 2.4 CPU: permute_batch(x, indices=[3, 3, 0, 1]) -> [[3, 30], [3, 30], [0, 0], [1, 10]]
    (out,) = run_arrays(DATA, lambda x: fn.permute_batch(x, indices=[3, 3, 0, 1]))
    assert [o.tolist() for o in out] == [[3, 30], [3, 30], [0, 0], [1, 10]]


def test_per_sample_indices_match_dali() -> None:
    # DALI 2.4 CPU: indices fed as scalars 1, 0, 0, 2 -> [[1, 10], [0, 0], [0, 0], [2, 20]]
    idx = [np.array(v, np.int32) for v in (1, 0, 0, 2)]
    (out,) = run_arrays(DATA, lambda x, i: fn.permute_batch(x, indices=i), i=idx)
    assert [o.tolist() for o in out] == [[1, 10], [0, 0], [0, 0], [2, 20]]


def test_whole_batch_even_with_many_threads_and_chunks() -> None:
    data = [np.array([i], np.int64) for i in range(32)]

    @sf.pipeline_def(batch_size=32, num_threads=4, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source(source=[data])
        y = fn.permute_batch(x + 1, indices=list(range(31, -1, -1)))
        return y * 2

    with pipe() as p:
        (out,) = p.run()
    assert [int(v[0]) for v in out] == [2 * (32 - i) for i in range(32)]


def test_layout_is_kept() -> None:
    @sf.pipeline_def(batch_size=2, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source(source=[[np.zeros((2, 2, 3), np.uint8)] * 2], layout="HWC")
        return fn.permute_batch(x, indices=[1, 0])

    with pipe() as p:
        assert p.run()[0].layout == "HWC"


@pytest.mark.parametrize("indices", [[1, 2], [0, 1, 2, 9]])
def test_indices_that_do_not_fit_the_batch(indices: list[int]) -> None:
    with pytest.raises(PipelineError, match="permute_batch: ind"):
        run_arrays(DATA, lambda x: fn.permute_batch(x, indices=indices))


@pytest.mark.parametrize("bad", [[0.5, 1], [-1, 0], "01", [True, False]])
def test_bad_indices_are_refused_where_defined(bad: Any) -> None:
    with pytest.raises((PipelineDefinitionError, TypeError), match="indices"):
        run_arrays(DATA, lambda x: fn.permute_batch(x, indices=bad))


def test_python_function_batch_processing_sees_the_whole_batch() -> None:
    sizes: list[int] = []

    def total(batch: list[np.ndarray]) -> list[np.ndarray]:
        sizes.append(len(batch))
        s = sum(int(b[0]) for b in batch)
        return [np.array([s], np.int64) for _ in batch]

    data = [np.array([i], np.int64) for i in range(16)]

    @sf.pipeline_def(batch_size=16, num_threads=4, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.python_function(fn.external_source(source=[data]), function=total, batch_processing=True)

    with pipe() as p:
        (out,) = p.run()
    assert set(sizes) == {16}
    assert {int(o[0]) for o in out} == {120}


def test_gpu_implementation_picks_references() -> None:
    from streamflow.gpu.context import GpuContext
    from streamflow.gpu.ops.permute_batch import permute_batch_gpu
    from streamflow.operator import Chunk
    from streamflow.ops.permute_batch import PermuteBatch

    chunk = Chunk(inputs=[list(DATA)], args={}, sample_ids=np.arange(4), sources=[None] * 4, epoch=0)
    (out,) = permute_batch_gpu(PermuteBatch((2, 2, 1, 0)), chunk, GpuContext.on_host())
    assert out[0] is DATA[2] and out[1] is DATA[2] and out[3] is DATA[0]
