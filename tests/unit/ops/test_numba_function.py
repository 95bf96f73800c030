"""``fn.experimental.numba_function``: Numba-compiled run/setup functions (DALI's ``numba_function``).

Checked against DALI 2.4 in ``tests/integration/test_dali_custom_notebooks.py`` (exact);
here: the calling conventions, shapes, types and errors.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from helpers import run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import MissingDependencyError

pytest.importorskip("numba")


def double(out0: Any, in0: Any) -> None:
    for i in range(out0.shape[0]):
        out0[i] = in0[i] * 2


def repeat_setup(outs: Any, ins: Any) -> None:
    for s in range(len(outs[0])):
        outs[0][s][0] = ins[0][s][0] * 2
        outs[1][s][0] = 1


def repeat_and_sum(rep: Any, total: Any, x: Any) -> None:
    n = x.shape[0]
    total[0] = 0
    for i in range(n):
        rep[i] = x[i]
        rep[n + i] = x[i]
        total[0] += x[i]


def batch_sum(outs: Any, ins: Any) -> None:
    grand = 0
    for s in range(len(ins)):
        for v in ins[s]:
            grand += v
    for s in range(len(outs)):
        for i in range(outs[s].shape[0]):
            outs[s][i] = ins[s][i] + grand


def numba(x: Any, **kw: Any) -> Any:
    return fn.experimental.numba_function(x, **kw)


def test_per_sample_without_setup_keeps_shape_and_type() -> None:
    data = [np.arange(3, dtype=np.int32), np.arange(5, dtype=np.int32)]
    (out,) = run_arrays(data, lambda x: numba(x, run_fn=double, out_types=[types.INT32], in_types=[types.INT32],
                                               outs_ndim=[1], ins_ndim=[1]))
    for o, d in zip(out, data):
        np.testing.assert_array_equal(o, d * 2)
        assert o.dtype == np.int32


def test_setup_fn_shapes_several_outputs() -> None:
    data = [np.array([1, 2, 3], np.int64), np.array([7], np.int64)]
    rep, total = run_arrays(data, lambda x: tuple(numba(
        x, run_fn=repeat_and_sum, setup_fn=repeat_setup, out_types=[types.INT64, types.FLOAT64],
        in_types=[types.INT64], outs_ndim=[1, 1], ins_ndim=[1])))
    np.testing.assert_array_equal(rep[0], [1, 2, 3, 1, 2, 3])
    np.testing.assert_array_equal(rep[1], [7, 7])
    assert total[0].dtype == np.float64 and total[0].tolist() == [6.0] and total[1].tolist() == [7.0]


def test_batch_processing_sees_the_whole_batch() -> None:
    data = [np.array([1, 2], np.int32), np.array([10], np.int32)]
    (out,) = run_arrays(data, lambda x: numba(x, run_fn=batch_sum, out_types=[types.INT32], in_types=[types.INT32],
                                               outs_ndim=[1], ins_ndim=[1], batch_processing=True))
    assert out[0].tolist() == [14, 15] and out[1].tolist() == [23]


def test_input_not_matching_in_types_fails_clearly() -> None:
    data = [np.arange(3, dtype=np.float32)]
    with pytest.raises(sf.PipelineError, match="input 0 is float32 with 1 dimensions, but in_types"):
        run_arrays(data, lambda x: numba(x, run_fn=double, out_types=[types.INT32], in_types=[types.INT32],
                                          outs_ndim=[1], ins_ndim=[1]))


def test_definition_errors() -> None:
    src = fn.external_source([[np.zeros(1)]])
    with pytest.raises(sf.PipelineDefinitionError, match="run_fn"):
        fn.experimental.numba_function(src, out_types=[types.UINT8], in_types=[types.UINT8], outs_ndim=[1],
                                       ins_ndim=[1])
    with pytest.raises(sf.PipelineDefinitionError, match="one outs_ndim per out_types"):
        numba(src, run_fn=double, out_types=[types.UINT8], in_types=[types.UINT8], outs_ndim=[1, 2], ins_ndim=[1])
    with pytest.raises(sf.PipelineDefinitionError, match="1 input"):
        numba(src, run_fn=double, out_types=[types.UINT8], in_types=[types.UINT8] * 2, outs_ndim=[1],
              ins_ndim=[1, 1])
    with pytest.raises(sf.PipelineDefinitionError, match="float16"):
        numba(src, run_fn=double, setup_fn=repeat_setup, out_types=[types.FLOAT16], in_types=[types.UINT8],
              outs_ndim=[1], ins_ndim=[1])


def test_without_numba_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numba", None)
    src = fn.external_source([[np.zeros(1)]])
    with pytest.raises(MissingDependencyError, match=r"streamflow\[numba\]"):
        numba(src, run_fn=double, out_types=[types.UINT8], in_types=[types.UINT8], outs_ndim=[1], ins_ndim=[1])
