"""Subscripts, ``shapes``, ``reshape``, ``squeeze``, ``expand_dims``, ``cat``, ``stack``: shapes, values and
layouts as DALI 2.4 gives them (recorded from its CPU pipelines on the same input)."""

from __future__ import annotations

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn

X = np.arange(24, dtype=np.int16).reshape(2, 3, 4)


def _one(build, *arrays, layout="HWC"):  # type: ignore[no-untyped-def]
    @sf.pipeline_def(batch_size=1, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        srcs = [fn.external_source([[a]], layout=layout) for a in arrays]
        return (build(*srcs),)

    with pipe() as p:
        (out,) = p.run()
    return np.asarray(out.at(0)), out.layout


CASES = [
    ("shapes", lambda a: fn.shapes(a), (X,), "int64", (3,), "", [2, 3, 4]),
    ("shape()", lambda a: a.shape(), (X,), "int64", (3,), "", [2, 3, 4]),
    ("shape(INT32)", lambda a: a.shape(dtype=sf.types.INT32), (X,), "int32", (3,), "", [2, 3, 4]),
    ("shapes(float)", lambda a: fn.shapes(a, dtype=sf.types.FLOAT), (X,), "float32", (3,), "", [2, 3, 4]),
    ("reshape", lambda a: fn.reshape(a, shape=[4, 6]), (X,), "int16", (4, 6), "", list(range(8))),
    ("reshape -1", lambda a: fn.reshape(a, shape=[-1, 4]), (X,), "int16", (6, 4), "", list(range(8))),
    ("reshape layout", lambda a: fn.reshape(a, shape=[6, 4], layout="AB"), (X,), "int16", (6, 4), "AB", list(range(8))),
    ("squeeze", lambda a: fn.squeeze(a, axes=[0]), (X[:1],), "int16", (3, 4), "WC", list(range(8))),
    ("squeeze names", lambda a: fn.squeeze(a, axis_names="H"), (X[:1],), "int16", (3, 4), "WC", list(range(8))),
    ("expand_dims", lambda a: fn.expand_dims(a, axes=[0, 2], new_axis_names="XY"), (X,), "int16", (1, 2, 1, 3, 4),
     "XHYWC", list(range(8))),
    ("cat", lambda a, b: fn.cat(a, b, axis=1), (X, X), "int16", (2, 6, 4), "HWC", list(range(8))),
    ("cat name", lambda a, b: fn.cat(a, b, axis_name="C"), (X, X), "int16", (2, 3, 8), "HWC", [0, 1, 2, 3, 0, 1, 2, 3]),
    ("stack", lambda a, b: fn.stack(a, b, axis=1), (X, X), "int16", (2, 2, 3, 4), "", list(range(8))),
    ("stack name", lambda a, b: fn.stack(a, b, axis=3, axis_name="N"), (X, X), "int16", (2, 3, 4, 2), "HWCN",
     [0, 0, 1, 1, 2, 2, 3, 3]),
    ("sub", lambda a: a[1, 1:3, ::2], (X,), "int16", (2, 2), "WC", [16, 18, 20, 22]),
    ("sub neg", lambda a: a[-1, :, -2], (X,), "int16", (3,), "W", [14, 18, 22]),
    ("sub col", lambda a: a[:, 0], (X,), "int16", (2, 4), "HC", [0, 1, 2, 3, 12, 13, 14, 15]),
    ("sub scalar", lambda a: a[1, 2, 3], (X,), "int16", (), "", [23]),
    # DALI 2.4: an unnamed newaxis drops the layout, a named one inserts its letter
    ("newaxis", lambda a: a[sf.newaxis], (X,), "int16", (1, 2, 3, 4), "", list(range(8))),
    ("newaxis named", lambda a: a[:, sf.newaxis("F")], (X,), "int16", (2, 1, 3, 4), "HFWC", list(range(8))),
    ("newaxis index", lambda a: a[0, sf.newaxis("X")], (X,), "int16", (1, 3, 4), "XWC", list(range(8))),
    ("newaxis last", lambda a: a[..., sf.newaxis("N")], (X,), "int16", (2, 3, 4, 1), "HWCN", list(range(8))),
]


@pytest.mark.parametrize("name, build, arrays, dtype, shape, layout, head", CASES, ids=[c[0] for c in CASES])
def test_matches_dali(name, build, arrays, dtype, shape, layout, head) -> None:  # type: ignore[no-untyped-def]
    out, got_layout = _one(build, *arrays)
    assert (str(out.dtype), out.shape, got_layout, got_layout()) == (dtype, shape, layout, layout)  # DALI: .layout()
    assert out.ravel()[:8].tolist() == head


def test_per_sample_subscript_bounds() -> None:
    images = [np.arange(10), np.arange(10) * 10]
    starts = [np.int32(2), np.int32(5)]

    @sf.pipeline_def(batch_size=2, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source([images])
        s = fn.external_source([starts])
        return (x[s:], x[s])

    with pipe() as p:
        tail, at = p.run()
    assert tail.at(0).tolist() == list(range(2, 10)) and tail.at(1).tolist() == [50, 60, 70, 80, 90]
    assert [int(np.asarray(at.at(i)).reshape(-1)[0]) for i in range(2)] == [2, 50]


def test_errors_name_the_problem() -> None:
    x = fn.external_source([[X]])
    with pytest.raises(sf.PipelineDefinitionError, match="at most one extent can be -1"):
        fn.reshape(x, shape=[-1, -1])
    with pytest.raises(sf.PipelineDefinitionError, match="None .new axis. is not supported"):
        x[None]
    with pytest.raises(sf.PipelineError, match="cannot take the shape"):
        _one(lambda a: fn.reshape(a, shape=[5, 5]), X)
    with pytest.raises(sf.PipelineError, match="index 7 is out of bounds"):
        _one(lambda a: a[7], X)


def test_reshape_src_dims_as_dali() -> None:
    """DALI 2.4: src_dims picks input extents (-1 inserts one; data order kept), rel_shape scales them; the
    layout is kept when the number of dimensions is (or named by layout=)."""
    x = np.arange(24, dtype=np.int32).reshape(1, 4, 6)
    out, lay = _one(lambda a: fn.reshape(a, src_dims=[1, -1, 2]), x, layout="CHW")
    assert out.shape == (4, 1, 6) and lay == "CHW" and out.ravel().tolist() == list(range(24))
    out, lay = _one(lambda a: fn.reshape(a, src_dims=[2, 1], rel_shape=[0.5, 2]), x, layout="CHW")
    assert out.shape == (3, 8) and lay == ""
    out, lay = _one(lambda a: fn.reshape(a, src_dims=[1, 2, -1], layout="HWC"), x, layout="CHW")
    assert out.shape == (4, 6, 1) and lay == "HWC"
    with pytest.raises(sf.PipelineError, match="only axes of extent 1 can be left out"):
        _one(lambda a: fn.reshape(a, src_dims=[2, 1]), x.reshape(2, 2, 6), layout="CHW")
    with pytest.raises(sf.PipelineDefinitionError, match="src_dims or shape"):
        fn.reshape(fn.external_source([[x]]), src_dims=[0], shape=[24])


def test_cat_and_stack_take_constant_inputs_as_dali() -> None:
    """DALI 2.4 turns constant inputs into constants: fn.stack(0, w) (int32), fn.cat(f, [3.0, 4.0]) (float32)."""

    @sf.pipeline_def(batch_size=1, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        w = fn.external_source([[np.int32(7)]])
        f = fn.external_source([[np.float32([1.5, 2])]])
        return fn.stack(0, w), fn.stack(w / 4, w / 2), fn.cat(f, [3.0, 4.0]), fn.stack(f, np.float32([9, 8]))

    with pipe() as p:
        out = [np.asarray(t.at(0)) for t in p.run()]
    assert [(o.dtype.name, o.tolist()) for o in out] == [
        ("int32", [0, 7]), ("float32", [1.75, 3.5]), ("float32", [1.5, 2.0, 3.0, 4.0]),
        ("float32", [[1.5, 2.0], [9.0, 8.0]])]
