"""ROI arguments -> box (DALI readers.numpy arithmetic), and box -> file byte ranges."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamflow.errors import PipelineDefinitionError, ReadError
from streamflow.io import ByteRange, NpyHeader, Roi, RoiError, byte_ranges, plan_reads, resolve_roi
from streamflow.io.roi import WASTE_SLACK, roi_from_argument, roi_from_slices
from streamflow.types import OutOfBoundsPolicy

SHAPE = (10, 20, 30)


def box(roi: Roi) -> list[tuple[int, int]]:
    return list(zip(roi.start, roi.end))


# ---------------------------------------------------------------- resolve_roi


def test_no_arguments_is_whole_array() -> None:
    assert resolve_roi(SHAPE) == Roi.full(SHAPE)
    assert resolve_roi(SHAPE, roi_axes=[1]) == Roi.full(SHAPE)
    assert resolve_roi((), roi_start=[], roi_end=[]) == Roi((), ())


def test_absolute_start_end_shape() -> None:
    r = resolve_roi(SHAPE, roi_start=[1, 2, 3], roi_end=[4, 5, 6])
    assert box(r) == [(1, 4), (2, 5), (3, 6)]
    r = resolve_roi(SHAPE, roi_start=[1, 2, 3], roi_shape=[4, 5, 6])
    assert box(r) == [(1, 5), (2, 7), (3, 9)]
    r = resolve_roi(SHAPE, roi_end=[4, 5, 6])  # start defaults to 0
    assert box(r) == [(0, 4), (0, 5), (0, 6)]
    r = resolve_roi(SHAPE, roi_start=[1, 2, 3])  # end defaults to the extent
    assert box(r) == [(1, 10), (2, 20), (3, 30)]
    assert r.shape == (9, 18, 27)


def test_roi_axes_order_and_unlisted_axes_full() -> None:
    # roi_start[i] is for axis roi_axes[i]; axis 1 is not listed: full extent
    r = resolve_roi(SHAPE, roi_start=[7, 2], roi_end=[9, 5], roi_axes=[2, 0])
    assert box(r) == [(2, 5), (0, 20), (7, 9)]
    r = resolve_roi(SHAPE, rel_roi_start=[0.5], roi_axes=(-1,))  # negative axis = from the end
    assert box(r) == [(0, 10), (0, 20), (15, 30)]
    r = resolve_roi(SHAPE, roi_shape=3, roi_axes=1)  # scalars for a single axis
    assert box(r) == [(0, 10), (0, 3), (0, 30)]


def test_relative_rounds_half_up() -> None:
    # 0.25 * 10 = 2.5 -> 3 ; 0.45 * 10 = 4.4999999 in float32 -> 4
    r = resolve_roi((10,), rel_roi_start=[0.25], rel_roi_end=[0.45])
    assert box(r) == [(3, 4)]
    # 0.05 * 10 = 0.5 -> 1 (halves up), 0.15 * 10 = 1.5 -> 2
    assert box(resolve_roi((10,), rel_roi_start=[0.05], rel_roi_end=[0.15])) == [(1, 2)]
    # 0.35 * 10: float32(0.35) * 10 = 3.4999999 -> 3 (DALI keeps rel args as float32)
    assert box(resolve_roi((10,), rel_roi_start=[0.35])) == [(3, 10)]
    # 0.7 * 5: float32(0.7) = 0.69999999 -> 3.4999999 -> 3 (a float64 product would give 4)
    assert box(resolve_roi((5,), rel_roi_end=[0.7])) == [(0, 3)]


def test_rel_start_with_rel_shape_sums_before_scaling() -> None:
    # end = (0.25 + 0.5) * 10 = 7.5 -> 8 ; start 2.5 -> 3
    r = resolve_roi((10,), rel_roi_start=[0.25], rel_roi_shape=[0.5])
    assert box(r) == [(3, 8)]
    # absolute start + relative shape: end = 2 + 0.25 * 10 = 4.5 -> 5
    r = resolve_roi((10,), roi_start=[2], rel_roi_shape=[0.25])
    assert box(r) == [(2, 5)]
    # relative start + absolute shape: start 2.5 -> 3, end 2.5 + 3 = 5.5 -> 6
    r = resolve_roi((10,), rel_roi_start=[0.25], roi_shape=[3])
    assert box(r) == [(3, 6)]


def test_mutually_exclusive_and_malformed() -> None:
    with pytest.raises(PipelineDefinitionError, match="mutually exclusive"):
        resolve_roi(SHAPE, roi_start=[0, 0, 0], rel_roi_start=[0, 0, 0])
    for a, b in [
        ("roi_end", "roi_shape"),
        ("rel_roi_end", "roi_end"),
        ("rel_roi_shape", "roi_shape"),
    ]:
        with pytest.raises(PipelineDefinitionError, match="mutually exclusive"):
            resolve_roi(SHAPE, **{a: [1, 1, 1], b: [1, 1, 1]})
    with pytest.raises(PipelineDefinitionError, match="repeats"):
        resolve_roi(SHAPE, roi_start=[1, 1], roi_axes=[0, -3])
    with pytest.raises(PipelineDefinitionError, match="same number"):
        resolve_roi(SHAPE, roi_start=[1, 1], roi_end=[2, 2, 2])
    with pytest.raises(PipelineDefinitionError, match="one value per listed axis"):
        resolve_roi(SHAPE, roi_start=[1, 1], roi_axes=[0])
    with pytest.raises(PipelineDefinitionError, match="integers"):
        resolve_roi(SHAPE, roi_start=[1.5, 0, 0])
    with pytest.raises(PipelineDefinitionError, match="negative"):
        resolve_roi(SHAPE, roi_shape=[-1, 1, 1], out_of_bounds_policy="pad")
    with pytest.raises(PipelineDefinitionError, match="finite"):
        resolve_roi(SHAPE, rel_roi_start=[float("nan"), 0, 0])
    with pytest.raises(PipelineDefinitionError, match="numbers"):
        resolve_roi(SHAPE, roi_start="abc")
    with pytest.raises(PipelineDefinitionError, match="out_of_bounds_policy"):
        resolve_roi(SHAPE, roi_start=[0, 0, 0], out_of_bounds_policy="wrap")


def test_errors_that_depend_on_the_file_name_it() -> None:
    with pytest.raises(RoiError, match="3 dimensions") as info:
        resolve_roi(SHAPE, roi_start=[1, 1], source="vol.npy")
    assert info.value.source == "vol.npy" and isinstance(info.value, ReadError)
    with pytest.raises(RoiError, match="axis 3"):
        resolve_roi(SHAPE, roi_start=[1], roi_axes=[3], source="vol.npy")
    with pytest.raises(RoiError, match="ends before it starts"):
        resolve_roi(SHAPE, roi_start=[5, 0, 0], roi_end=[4, 1, 1], source="vol.npy")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"roi_start": [-1, 0, 0]},
        {"roi_end": [11, 1, 1]},
        {"roi_start": [10, 0, 0], "roi_end": [10, 1, 1]},  # start must be < extent (as DALI)
        {"rel_roi_start": [0, 0, 0], "rel_roi_end": [1.06, 1, 1]},  # 10.6 -> 11
        {"roi_start": [5], "roi_shape": [6], "roi_axes": [0]},
    ],
)
def test_error_policy(kwargs) -> None:
    with pytest.raises(RoiError, match="out of bounds") as info:
        resolve_roi(SHAPE, **kwargs, source="vol.npy")
    assert "vol.npy" in str(info.value) and "pad" in str(info.value)


def test_error_policy_accepts_edges() -> None:
    r = resolve_roi(SHAPE, roi_start=[9, 0, 29], roi_end=[10, 20, 30])
    assert r.shape == (1, 20, 1)
    assert resolve_roi(SHAPE, rel_roi_end=[1.04, 1, 1]).end == (10, 20, 30)  # 10.4 -> 10


def test_pad_and_trim() -> None:
    kw = {"roi_start": [-3, 18], "roi_end": [4, 25], "roi_axes": [0, 1]}
    pad = resolve_roi(SHAPE, **kw, out_of_bounds_policy=OutOfBoundsPolicy.PAD)
    assert box(pad) == [(-3, 4), (18, 25), (0, 30)]
    assert pad.needs_padding(SHAPE) and pad.inside(SHAPE) == ((0, 4), (18, 20), (0, 30))
    assert pad.placement(SHAPE) == (slice(3, 7), slice(0, 2), slice(0, 30))
    trim = resolve_roi(SHAPE, **kw, out_of_bounds_policy="trim_to_shape")
    assert box(trim) == [(0, 4), (18, 20), (0, 30)]
    # entirely outside: trimmed to empty, padded to all fill
    far = {"roi_start": [12], "roi_end": [15], "roi_axes": [0]}
    assert resolve_roi(SHAPE, **far, out_of_bounds_policy="trim_to_shape").shape == (0, 20, 30)
    p = resolve_roi(SHAPE, **far, out_of_bounds_policy="pad")
    assert p.shape == (3, 20, 30) and p.inside(SHAPE)[0] == (10, 10)
    # a negative relative start rounds halves away from zero (C llround): -0.25*10 = -2.5 -> -3
    assert resolve_roi((10,), rel_roi_start=[-0.25], out_of_bounds_policy="pad").start == (-3,)


def test_slices_and_dict_forms() -> None:
    assert roi_from_slices((slice(1, 3), slice(None, 4)), SHAPE) == Roi((1, 0, 0), (3, 4, 30))
    assert roi_from_slices((), SHAPE) == Roi.full(SHAPE)
    # negative bounds are coordinates, not wrap-around
    with pytest.raises(RoiError, match="out of bounds"):
        roi_from_slices((slice(-2, 3),), SHAPE)
    assert roi_from_slices((slice(-2, 3),), SHAPE, out_of_bounds_policy="pad").start == (-2, 0, 0)
    with pytest.raises(PipelineDefinitionError, match="step"):
        roi_from_slices((slice(0, 4, 2),), SHAPE)
    with pytest.raises(RoiError, match="4 slices"):
        roi_from_slices((slice(None),) * 4, SHAPE)
    with pytest.raises(PipelineDefinitionError, match="unknown ROI argument"):
        roi_from_argument({"start": [1]}, SHAPE)
    with pytest.raises(PipelineDefinitionError, match="tuple of slices"):
        roi_from_argument([1, 2], SHAPE)
    assert roi_from_argument({"roi_start": [1], "roi_axes": [2]}, SHAPE).start == (0, 0, 1)
    assert roi_from_argument(Roi((1, 1, 1), (2, 2, 2)), SHAPE).shape == (1, 1, 1)


# ---------------------------------------------------------------- byte ranges


def header(shape, dtype="<f4", fortran=False, offset=128) -> NpyHeader:
    dt = np.dtype(dtype)
    return NpyHeader((1, 0), dt, tuple(shape), fortran, offset, int(np.prod(shape)) * dt.itemsize)


def needed_bytes(h: NpyHeader, bx) -> set[int]:
    """Reference: the file byte offsets of every element of the box."""
    idx = np.arange(h.size).reshape(h.shape, order="F" if h.fortran_order else "C")
    sel = idx[tuple(slice(lo, hi) for lo, hi in bx)].ravel()
    return {int(h.data_offset + i * h.itemsize + b) for i in sel for b in range(h.itemsize)}


@st.composite
def shapes_and_boxes(draw):
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=0, max_size=4)))
    bx = []
    for d in shape:
        lo = draw(st.integers(0, d))
        hi = draw(st.integers(lo, d))
        bx.append((lo, hi))
    return shape, tuple(bx)


@settings(max_examples=300, deadline=None)
@given(
    sb=shapes_and_boxes(),
    fortran=st.booleans(),
    itemsize=st.sampled_from(["|u1", "<i2", ">f8"]),
    max_gap=st.sampled_from([0, 3, 64, 1 << 16]),
    max_waste=st.sampled_from([0.0, 0.1, 10.0]),
    max_reads=st.sampled_from([1, 2, 1024]),
)
def test_ranges_cover_exactly_the_box(sb, fortran, itemsize, max_gap, max_waste, max_reads) -> None:
    shape, bx = sb
    h = header(shape, itemsize, fortran)
    need = needed_bytes(h, bx)
    rs = byte_ranges(h, bx, max_gap=max_gap, max_waste=max_waste, max_reads=max_reads)
    got: set[int] = set()
    for r in rs:
        assert r.length > 0
        assert r.aligned_offset % 4096 == 0 and r.aligned_offset <= r.offset
        assert (r.aligned_offset + r.aligned_length) % 4096 == 0
        assert r.aligned_offset + r.aligned_length >= r.end
        got.update(range(r.offset, r.end))
    assert need <= got
    assert all(
        a.end < b.offset for a, b in itertools.pairwise(rs)
    )  # sorted, disjoint, not adjacent
    assert len(rs) <= max(max_reads, 0 if not need else 1)
    if max_gap == 0 and max_reads >= 1024:
        assert got == need  # no gap is read through
    if max_reads >= 1024:
        waste = len(got) - len(need)
        assert waste <= max_waste * len(need) + WASTE_SLACK


def test_contiguous_runs_merge_along_last_axes() -> None:
    h = header((8, 16, 32), "<f4")
    # full inner axes: one range
    assert byte_ranges(h, ((2, 5), (0, 16), (0, 32))) == [
        ByteRange(128 + 2 * 2048, 3 * 2048, 4096, 8192)
    ]
    # a partial middle axis: one run per outer index, here gaps of 2048 - 512 bytes
    rs = byte_ranges(h, ((2, 5), (4, 8), (0, 32)), max_gap=0)
    assert [r.length for r in rs] == [512, 512, 512]
    assert [r.offset for r in rs] == [128 + 2 * 2048 + 4 * 128 + i * 2048 for i in range(3)]
    # Fortran order: the first axes are contiguous
    hf = header((32, 16, 8), "<f4", fortran=True)
    rs = byte_ranges(hf, ((0, 32), (4, 8), (2, 5)), max_gap=0)
    assert [r.length for r in rs] == [512, 512, 512]


def test_aligned_ranges_capped_at_file_size() -> None:
    h = header((1000,), "|u1")
    (r,) = byte_ranges(h, ((990, 1000),), file_size=1128)
    assert (r.offset, r.length, r.aligned_offset, r.aligned_length) == (1118, 10, 0, 1128)


def test_max_reads_bounds_the_number_of_reads() -> None:
    h = header((512, 512), "|u1")
    bx = ((0, 512), (0, 1))  # a column: 512 runs of 1 byte, gaps of 511
    assert len(byte_ranges(h, bx, max_gap=0)) == 512
    rs = byte_ranges(h, bx, max_reads=8)
    assert len(rs) == 8


def test_plan_positions_and_alignment() -> None:
    h = header((64, 64, 64), "<f4")
    bx = ((10, 20), (3, 40), (5, 9))
    for alignment in (1, 4096):
        plan = plan_reads(h, bx, alignment=alignment, file_size=128 + h.nbytes, max_gap=0)
        assert plan.useful_bytes == 10 * 37 * 4 * 4
        assert plan.run_length == 16 and plan.run_positions.size == 370
        assert plan.buffer_size == sum(n for _, n, _ in plan.reads)
        if alignment > 1:
            assert all(o % 4096 == 0 for o, _, _ in plan.reads)
            assert all(a[0] + a[1] < b[0] for a, b in zip(plan.reads, plan.reads[1:]))
        # positions land on the right bytes of a simulated file
        data = np.arange(h.size, dtype="<f4")
        file = np.zeros(128 + h.nbytes, np.uint8)
        file[128:] = data.view(np.uint8)
        buf = np.concatenate([file[o : o + n] for o, n, _ in plan.reads])
        runs = np.stack([buf[p : p + 16] for p in plan.run_positions]).view("<f4")
        expect = data.reshape(64, 64, 64)[10:20, 3:40, 5:9].reshape(370, 4)
        assert np.array_equal(runs, expect)


@pytest.mark.parametrize(
    "shape, bx",
    [
        ((2048, 2048), ((900, 1105), (300, 505))),  # a 205 x 205 tile of an image
        ((256, 128, 128), ((100, 103), (0, 128), (0, 128))),  # a slab of a volume
        ((256, 128, 128), ((100, 135), (30, 65), (40, 75))),  # a 35**3 cube of a volume
    ],
)
def test_amplification_of_a_one_percent_region(shape, bx) -> None:
    h = header(shape, "<f4")  # 16 MiB of float32
    useful = int(np.prod([hi - lo for lo, hi in bx])) * 4
    assert 0.009 <= useful / h.nbytes <= 0.012
    ranges = byte_ranges(h, bx)
    plan = plan_reads(h, bx, file_size=128 + h.nbytes)
    assert plan.useful_bytes == useful
    assert plan.buffer_size / useful <= 1.1 + WASTE_SLACK / useful
    assert len(plan.reads) == len(ranges) <= 4096
    if len(shape) == 2 or bx[1] == (0, 128):
        # GDS reads whole 4 KiB blocks: at most two extra blocks per range
        gds = plan_reads(h, bx, alignment=4096, file_size=128 + h.nbytes)
        assert gds.buffer_size / useful <= 1.1 + (WASTE_SLACK + 8192 * len(ranges)) / useful
