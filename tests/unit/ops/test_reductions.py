"""``fn.reductions.*`` against DALI 2.4's recorded CPU outputs (and numpy).

Tolerance: integer results (min, max, sums, integer ``dtype``s) identical;
float32 results within relative 5e-7 of DALI's (about 4 float32 ulps; the
largest seen is 3.2e-7: both sum in wider arithmetic, in different orders).
"""

from __future__ import annotations

import numpy as np
import pytest
from augment_refs import batch, inputs, load
from helpers import make_chunk

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.reductions import Reduction

AXES = {
    "all": {}, "HW": dict(axis_names="HW"), "C": dict(axis_names="C"), "ax0": dict(axes=0),
    "ax_-1_keep": dict(axes=-1, keep_dims=True), "HW_keep": dict(axis_names="HW", keep_dims=True),
    "ax_0_2": dict(axes=(0, 2)),
}


def run(samples, build, layout="HWC", **extra):
    @sf.pipeline_def(batch_size=len(samples), num_threads=2, seed=1)
    def pipe():
        x = fn.external_source([list(samples)], layout=layout)
        nodes = {k: fn.external_source([list(v)]) for k, v in extra.items()}
        return build(x, **nodes)

    with pipe() as p:
        (out,) = p.run()
        return [np.asarray(out.at(i)) for i in range(len(samples))]


def assert_matches(got, want, what):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what}: {g.shape} {g.dtype} vs DALI {w.shape} {w.dtype}"
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=5e-7, atol=0, err_msg=what)
        else:
            assert np.array_equal(g, w), what


@pytest.mark.parametrize("kind", ["u8", "i16", "f32"])
@pytest.mark.parametrize("red", ["min", "max", "sum", "mean", "mean_square", "rms"])
def test_matches_dali(red: str, kind: str) -> None:
    data = inputs("reductions", kind)
    for case, kw in AXES.items():
        got = run(data, lambda x, kw=kw: getattr(fn.reductions, red)(x, **kw))
        assert_matches(got, batch("reductions", f"{red}/{kind}/{case}"), f"{red} {kind} {case}")


@pytest.mark.parametrize("red", ["std_dev", "variance"])
@pytest.mark.parametrize("kind", ["u8", "i16", "f32"])
def test_std_dev_variance_match_dali(red: str, kind: str) -> None:
    data = inputs("reductions", kind)
    f = getattr(fn.reductions, red)
    cases = {
        "all": lambda x: f(x, fn.reductions.mean(x)),
        "HW": lambda x: f(x, fn.reductions.mean(x, axis_names="HW"), axis_names="HW"),
        "HW_ddof1_keep": lambda x: f(x, fn.reductions.mean(x, axis_names="HW", keep_dims=True), axis_names="HW",
                                     ddof=1, keep_dims=True),
    }
    for case, build in cases.items():
        assert_matches(run(data, build), batch("reductions", f"{red}/{kind}/{case}"), f"{red} {kind} {case}")
    if kind == "u8":
        means = [np.full(3, 100.0, np.float32)] * len(data)
        got = run(data, lambda x, m: f(x, m, axis_names="HW"), m=means)
        assert_matches(got, batch("reductions", f"{red}/u8/HW_mean_100"), f"{red} given mean")


def test_dtypes_match_dali() -> None:
    data = inputs("reductions", "u8")
    for red in ("sum", "mean", "rms"):
        for suffix, dtype in (("float", sf.types.FLOAT), ("u8", sf.types.UINT8)):
            got = run(data, lambda x, red=red, dtype=dtype: getattr(fn.reductions, red)(x, axis_names="HW", dtype=dtype))
            assert_matches(got, batch("reductions", f"{red}/u8/HW_dtype_{suffix}"), f"{red} dtype {suffix}")
    got = run(data, lambda x: fn.reductions.mean_square(x, axis_names="HW", dtype=sf.types.UINT64))
    assert_matches(got, batch("reductions", "mean_square/u8/HW_dtype_u64"), "mean_square uint64")
    small = batch("reductions", "in_small")
    for red in ("mean", "rms"):  # integer accumulators wrap, then truncate
        got = run(small, lambda x, red=red: getattr(fn.reductions, red)(x, dtype=sf.types.UINT8), layout="HW")
        assert_matches(got, batch("reductions", f"{red}/small/dtype_u8"), f"{red} small uint8")
    for red in ("min", "sum", "mean"):  # axes=() reduces nothing
        got = run(data, lambda x, red=red: getattr(fn.reductions, red)(x, axes=()))
        assert_matches(got, batch("reductions", f"{red}/u8/none"), f"{red} no axes")
    assert load("reductions")["dali_version"] == "2.4.0"


def test_against_numpy_on_odd_shapes_and_layouts() -> None:
    rng = np.random.default_rng(3)
    data = [rng.normal(size=(2, 5, 7, 3)).astype(np.float32) for _ in range(2)]
    mean = run(data, lambda x: fn.reductions.mean(x, axis_names="FC"), layout="FHWC")
    std = run(data, lambda x: fn.reductions.std_dev(x, fn.reductions.mean(x, axes=(1, 2)), axes=(1, 2), ddof=1))
    for d, m, s in zip(data, mean, std):
        np.testing.assert_allclose(m, d.astype(np.float64).mean(axis=(0, 3)), rtol=1e-6)
        np.testing.assert_allclose(s, d.astype(np.float64).std(axis=(1, 2), ddof=1), rtol=1e-6)


def test_output_layout() -> None:
    op = Reduction("mean", axis_names="HW", layout="HWC")
    assert op.layout(0) == "C" and op.axes == (0, 1)
    assert Reduction("sum", axes=-1, layout="HWC").layout(0) == "HW"
    assert Reduction("sum", axes=-1, keep_dims=True, layout="HWC").layout(0) == "HWC"
    assert Reduction("max", layout="HWC").layout(0) == ""


def test_errors() -> None:
    with pytest.raises(PipelineDefinitionError, match="axes or axis_names"):
        Reduction("sum", axes=0, axis_names="H", layout="HWC")
    with pytest.raises(PipelineDefinitionError, match="reductions.sum: axis_names='D': 'D' is not in the input layout 'HWC'"):
        Reduction("sum", axis_names="D", layout="HWC")
    with pytest.raises(PipelineDefinitionError, match="layout, which is unknown"):
        Reduction("sum", axis_names="H")
    with pytest.raises(PipelineDefinitionError, match="reductions.mean: dtype must be"):
        run([np.zeros((2, 2), np.uint8)], lambda x: fn.reductions.mean(x, dtype=5))
    chunk = make_chunk([np.zeros((2, 3), np.uint8), np.zeros((2, 3), np.float64), np.zeros(4, np.int16)])
    Reduction("mean", axes=(0, 1), dtype="int8").run(chunk)
    assert "dtype=int8 is not supported for uint8 input; allowed: float32, uint8" in str(chunk.failures[0])
    assert "unsupported input type float64" in str(chunk.failures[1])
    assert "reductions.mean: axes=[0, 1]: axis 1 is out of range for a 1-D sample (valid: -1..0)" in str(chunk.failures[2])
    chunk = make_chunk([np.zeros((2, 3), np.float32)])
    chunk.inputs.append([np.zeros(2, np.float32)])
    Reduction("std_dev", axes=0).run(chunk)
    assert "needs one value per output, shape (3,)" in str(chunk.failures[0])


@pytest.mark.parametrize("kind", ["min", "max", "sum", "mean", "mean_square", "rms", "std_dev", "variance"])
def test_uint8_histogram_path_equals_the_general_one(kind) -> None:
    from streamflow.ops.reductions import reduce_sample

    rng = np.random.default_rng(4)
    x = rng.integers(3, 250, (31, 17, 4)).astype(np.uint8)
    for axes, mean in (((0, 1), x.reshape(-1, 4).mean(0).astype(np.float32)), ((0, 1, 2), np.float32(x.mean()))):
        op = Reduction(kind, axes=axes, keep_dims=False)
        chunk = make_chunk([x])
        if kind in ("std_dev", "variance"):
            chunk.inputs.append([mean])
        got = op.run(chunk)[0][0]
        want = reduce_sample(kind, x, axes, op.out_dtype(x.dtype), mean, 0)
        assert got.dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-7)
