"""``slice``: N-D regions against DALI 2.4's recorded outputs (exact), and its errors.

The cases (real photos, an MRI volume, signals; every way of giving the
region, every border policy, output types) are in
``tests/dali_reference/geometry_cases.py``; DALI's outputs were recorded by
``tests/dali_reference/record_geometry.py``. Tolerance: none (bit-exact).
"""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.geometry_cases import SLICE, check_case
from helpers import make_chunk, run_arrays

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.slice import Slice, extract_region


@pytest.mark.parametrize("case", SLICE, ids=lambda c: c.name)
def test_slice_matches_dali(case) -> None:
    check_case("slice", case)


def test_slice_region_policies_match_numpy_pad() -> None:
    x = np.arange(5 * 7, dtype=np.int16).reshape(5, 7)
    region = ((-9, -3), (8, 12))
    for policy, mode in (("edge", "edge"), ("reflect_1001", "symmetric"), ("reflect_101", "reflect"),
                         ("wrap", "wrap")):
        want = np.pad(x, ((9, 3), (3, 5)), mode=mode)
        assert np.array_equal(extract_region(x, region, policy), want), policy
    want = np.pad(x, ((9, 3), (3, 5)), constant_values=-4)
    assert np.array_equal(extract_region(x, region, "constant", (-4,)), want)


def test_slice_writes_into_output_buffer() -> None:
    img = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)
    (out,) = run_arrays([img, img], lambda x: fn.slice(x, start=[2, 1], shape=[3, 4]))
    assert np.array_equal(out[0], img[1:5, 2:5])


def test_slice_bad_arguments_are_definition_errors() -> None:
    def build(**kw):
        @sf.pipeline_def(batch_size=1, num_threads=1)
        def pipe():
            return fn.slice(fn.external_source([[np.zeros((4, 4), np.uint8)]]), **kw)
        return pipe()

    with pytest.raises(PipelineDefinitionError, match="out_of_bounds_policy"):
        build(start=[0, 0], out_of_bounds_policy="mirror")
    with pytest.raises(PipelineDefinitionError, match="shape must be >= 0"):
        build(start=[0, 0], shape=[-1, 2])
    with pytest.raises(PipelineDefinitionError, match="dtype"):
        build(start=[0, 0], dtype="int32")
    with pytest.raises(TypeError, match="unexpected keyword"):
        build(starts=[0, 0])


def test_slice_per_sample_failure_is_skipped() -> None:
    op = Slice(named={"start": np.array([0]), "shape": np.array([3])}, axes=[0])
    chunk = make_chunk([np.arange(5), np.arange(2), np.array(["a", "b", "c"])])
    out = op.run(chunk)[0]
    assert np.array_equal(out[0], [0, 1, 2])
    assert set(chunk.failures) == {1, 2}
    assert "leaves the sample" in str(chunk.failures[1])
    assert "numeric" in str(chunk.failures[2])


def test_slice_volume_from_numpy_reader(tmp_path) -> None:
    from dali_reference.geometry_cases import volume

    vol = volume()
    np.save(tmp_path / "v0.npy", vol)
    np.save(tmp_path / "v1.npy", vol[::-1].copy())

    @sf.pipeline_def(batch_size=2, num_threads=2, seed=1)
    def pipe():
        v = fn.readers.numpy(file_root=str(tmp_path))
        return fn.slice(v, start=[-2, 10, 5], shape=[8, 20, 24], axis_names="DHW", out_of_bounds_policy="edge")

    with pipe() as p:
        out = p.run()[0]
    for i, src in enumerate((vol, vol[::-1])):
        want = np.pad(src, ((2, 0), (0, 0), (0, 0), (0, 0)), mode="edge")[0:8, 10:30, 5:29]
        assert np.array_equal(out.at(i), want)
