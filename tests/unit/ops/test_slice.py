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


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------

from helpers import assert_same_outputs, run_cpu_op, run_gpu_impl

from streamflow.gpu.ops.slice import collapse

_GPU_CASES = [
    ("hwc_pad_rgb", {"layout": "HWC", "named": {"start": [-20, -30], "shape": [190, 130]},
                     "out_of_bounds_policy": "pad", "fill_values": [255, 0, 128]}),
    ("hwc_inside", {"layout": "HWC", "named": {"rel_start": [0.2, 0.1], "rel_shape": [0.5, 0.6]}}),
    ("edge", {"layout": "HWC", "named": {"start": [-20, -30], "shape": [190, 130]}, "out_of_bounds_policy": "edge"}),
    ("reflect", {"layout": "HWC", "named": {"start": [-200, -30], "shape": [450, 330]},
                 "out_of_bounds_policy": "reflect"}),
    ("reflect_101", {"layout": "HWC", "named": {"start": [-20, -130], "shape": [190, 330]},
                     "out_of_bounds_policy": "reflect_101"}),
    ("wrap", {"layout": "HWC", "named": {"start": [-20, -30], "shape": [390, 130]}, "out_of_bounds_policy": "wrap"}),
    ("trim", {"layout": "HWC", "named": {"start": [-20, 60], "shape": [190, 130]},
              "out_of_bounds_policy": "trim_to_shape"}),
    ("channels_padded", {"layout": "HWC", "axis_names": "C", "named": {"start": [-1], "shape": [5]},
                         "out_of_bounds_policy": "pad", "fill_values": [1, 2, 3, 4, 5]}),
    ("dtype_uint8", {"layout": "HWC", "named": {"start": [-3, -4], "shape": [50, 40]}, "dtype": "UINT8",
                     "out_of_bounds_policy": "pad", "fill_values": -1.7}),
    ("dtype_float16", {"layout": "HWC", "named": {"start": [3, 4], "shape": [50, 40]}, "dtype": "FLOAT16"}),
]


@pytest.mark.parametrize("name, kw", _GPU_CASES, ids=[c[0] for c in _GPU_CASES])
@pytest.mark.parametrize("kind", ["uint8", "float"])
def test_gpu_slice_equals_cpu(kernel_ctx, grid, name, kw, kind) -> None:
    from dali_reference.geometry_cases import _float_images, _images

    images = _images() if kind == "uint8" else _float_images()
    kw = dict(kw)
    op = Slice(named={k: np.asarray(v) for k, v in kw.pop("named").items()}, **kw)
    gpu, gf = run_gpu_impl(kernel_ctx, op, images)
    cpu, cf = run_cpu_op(op, images)
    assert set(gf) == set(cf)
    assert_same_outputs(gpu, cpu, f"slice {name} {kind}")


@pytest.mark.parametrize("policy", ["constant", "edge", "reflect_1001", "reflect_101", "wrap"])
def test_gpu_slice_any_dims_equals_cpu(kernel_ctx, policy) -> None:
    from dali_reference.geometry_cases import signal, volume

    rng = np.random.default_rng(3)
    samples = [volume(), signal(300), signal(100, 2), rng.integers(0, 9, (2, 3, 1, 4, 2, 3, 2), dtype=np.int16),
               rng.random((3, 4, 5, 2, 3)).astype(np.float64)]
    ends = [[30, 50, 20, 1], [350], [120, 2], [2, 4, 1, 6, 2, 3, 2], [3, 5, 5, 2, 3]]
    starts = [[-3, -4, 10, 0], [-40], [-5, 0], [0, -1, 0, -1, 0, 0, 0], [0, 1, 0, 0, -2]]
    for sample, s, e in zip(samples, starts, ends):
        op = Slice(named={"start": np.asarray(s), "end": np.asarray(e)}, axes=list(range(sample.ndim)),
                   out_of_bounds_policy=policy, fill_values=7)
        gpu, gf = run_gpu_impl(kernel_ctx, op, [sample])
        cpu, cf = run_cpu_op(op, [sample])
        assert not gf and not cf, (gf, cf)
        assert_same_outputs(gpu, cpu, f"slice {policy} {sample.shape}")


def test_gpu_slice_errors_like_cpu(kernel_ctx) -> None:
    from dali_reference.geometry_cases import _gray

    op = Slice(named={"start": np.asarray([-1, -1]), "shape": np.asarray([3, 3])}, out_of_bounds_policy="pad",
               fill_values=[1, 2])
    _, gf = run_gpu_impl(kernel_ctx, op, _gray())
    assert "no channel axis" in str(gf[0])
    op = Slice(named={"start": np.asarray([-1, 0]), "shape": np.asarray([3, 3])})
    _, gf = run_gpu_impl(kernel_ctx, op, _gray())
    assert "leaves the sample" in str(gf[0])


def test_collapse_merges_whole_inner_dims() -> None:
    assert collapse((4, 5, 6, 3), (1, 0, 0, 0), (3, 5, 6, 3), "edge", None) == ([360], [90], [180], None)
    # a padded outer dimension merges only under the constant policy
    assert collapse((4, 5), (-1, 0), (3, 5), "edge", None) == ([4, 5], [-1, 0], [4, 5], None)
    assert collapse((4, 5), (-1, 0), (3, 5), "constant", None) == ([20], [-5], [20], None)
    assert collapse((4, 5, 3), (0, 0, 0), (4, 5, 3), "constant", 2) == ([20, 3], [0, 0], [20, 3], 1)
