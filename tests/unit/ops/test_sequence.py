"""Sequences: image operators frame by frame (FHWC in, FHWC/FCHW out), ``per_frame``,
``sequence_rearrange``, ``element_extract``.

Against DALI 2.4 (``tests/dali_reference/record_sequence.py``): flip, resize,
crop, crop_mirror_normalize (FCHW), brightness_contrast and hue with per-frame
arguments, sequence_rearrange and element_extract on FHWC sequences, with each
operator's own DALI tolerance (exact for the index operators, flip and crop;
resize and the colour operators within 1 level, cmn within 1e-5). Against the
same operator run on each frame alone: bit for bit, random per-sample
arguments included (every frame of a sample gets the same values).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import assert_gpu_equals_cpu, rand_image, run_arrays

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError, PipelineError

REF = np.load(Path(__file__).parents[2] / "data" / "dali" / "sequence" / "reference.npz")
SEQS = [REF["input_0"], REF["input_1"]]
HUE = np.array([0.0, 30.0, -45.0, 90.0], dtype=np.float32)
BRIGHT = np.array([0.5, 1.0, 1.5, 2.0], dtype=np.float32)


def run_seq(build: Any, seqs: list[np.ndarray] = SEQS, **extra: list[Any]) -> list[list[np.ndarray]]:
    """``build`` over FHWC sequences fed with ``layout="FHWC"`` (extra keywords: per-sample sources)."""

    @sf.pipeline_def(batch_size=len(seqs), num_threads=2, device_id=None, seed=3)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source([list(seqs)], layout="FHWC")
        nodes = {k: fn.external_source([list(v)]) for k, v in extra.items()}
        out = build(x, **nodes)
        return out if isinstance(out, tuple) else (out,)

    with pipe() as p:
        return [[np.asarray(t.at(i)) for i in range(len(seqs))] for t in p.run()]


CASES = {
    "flip": (lambda x, **_: fn.flip(x, horizontal=1, vertical=1), 0),
    "resize": (lambda x, **_: fn.resize(x, resize_x=6, resize_y=5), 1),
    "crop": (lambda x, **_: fn.crop(x, crop=(6, 8), crop_pos_x=0.25, crop_pos_y=0.75), 0),
    "cmn": (lambda x, **_: fn.crop_mirror_normalize(x, crop=(6, 8), mirror=1, mean=[10, 20, 30], std=[2, 3, 4],
                                                    output_layout="FCHW"), 1e-5),
    "brightness_per_frame": (lambda x, b, **_: fn.brightness_contrast(x, brightness=fn.per_frame(b), contrast=1.5), 1),
    "hue_per_frame": (lambda x, h, **_: fn.hue(x, hue=fn.per_frame(h)), 1),
    "rearrange": (lambda x, **_: fn.sequence_rearrange(x, new_order=[3, 0, 0, 2]), 0),
    "extract": (lambda x, **_: fn.element_extract(x, element_map=[2]), 0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_sequences_match_dali(name: str) -> None:
    build, tol = CASES[name]
    (out,) = run_seq(build, b=[BRIGHT, BRIGHT], h=[HUE, HUE])
    for i in range(2):
        want = REF[f"{name}_{i}"]
        assert out[i].shape == want.shape and out[i].dtype == want.dtype, name
        np.testing.assert_allclose(out[i].astype(np.float64), want.astype(np.float64), atol=tol, rtol=0)


def test_layouts_follow_dali() -> None:
    x = fn.external_source([SEQS], layout="FHWC")
    nodes = {"resize": fn.resize(x, resize_x=6, resize_y=5), "cmn": fn.crop_mirror_normalize(x, output_layout="FCHW"),
             "extract": fn.element_extract(x, element_map=[1]), "rearrange": fn.sequence_rearrange(x, new_order=[0]),
             "flip": fn.flip(x), "hue_per_frame": fn.hue(x, hue=10.0)}
    for name, node in nodes.items():
        assert node.producer.op.layout(node.index) == str(REF[f"{name}_layout"]), name


@pytest.mark.parametrize("op", ["resize", "crop", "flip", "cmn", "color_twist", "brightness_contrast"])
def test_every_frame_gets_the_samples_random_arguments(op: str) -> None:
    """A sequence through an operator equals each frame through it alone, with the same (random) values."""
    def build(x: Any, **_: Any) -> Any:
        u = fn.random.uniform(range=[0.0, 1.0])
        coin = fn.random.coin_flip()
        return {
            "resize": lambda: fn.resize(x, resize_x=fn.random.uniform(range=[5.0, 9.0]), resize_y=7),
            "crop": lambda: fn.crop(x, crop=(5, 6), crop_pos_x=u, crop_pos_y=u),
            "flip": lambda: fn.flip(x, horizontal=coin, vertical=fn.random.coin_flip()),
            "cmn": lambda: fn.crop_mirror_normalize(x, crop=(6, 6), crop_pos_x=u, mirror=coin, mean=[1, 2, 3]),
            "color_twist": lambda: fn.color_twist(x, hue=fn.random.uniform(range=[-40.0, 40.0]),
                                                  saturation=fn.random.uniform(range=[0.5, 1.5])),
            "brightness_contrast": lambda: fn.brightness_contrast(x, contrast=fn.random.uniform(range=[0.5, 1.5])),
        }[op]()

    seqs = [np.stack([rand_image(9, 11, seed=10 * s + f) for f in range(5)]) for s in range(4)]
    (out,) = run_seq(build, seqs)
    # The same random draws reach frame f of sample s as reach sample s of a batch of single
    # frames (the draws are keyed on the sample, not the frame).
    for f in range(5):
        (single,) = run_arrays([s[f] for s in seqs], lambda x: build(x))
        for s in range(4):
            np.testing.assert_array_equal(out[s][f], single[s], err_msg=f"{op} sample {s} frame {f}")


def test_per_frame_arguments_vary_by_frame_and_are_checked() -> None:
    seqs = [np.stack([rand_image(6, 8, seed=f) for f in range(3)])]
    flags = [np.array([1, 0, 1], dtype=np.int32)]
    (out,) = run_seq(lambda x, h: fn.flip(x, horizontal=fn.per_frame(h)), seqs, h=flags)
    for f, flag in enumerate(flags[0]):
        np.testing.assert_array_equal(out[0][f], seqs[0][f][:, ::-1] if flag else seqs[0][f])
    with pytest.raises(PipelineError, match="per-frame argument horizontal has 2 values for a sequence of 3"):
        run_seq(lambda x, h: fn.flip(x, horizontal=fn.per_frame(h)), seqs, h=[np.array([1, 0], np.int32)])
    with pytest.raises(PipelineDefinitionError, match="not a sequence"):
        run_arrays([rand_image()], lambda x, h: fn.flip(x, horizontal=fn.per_frame(h)), h=[np.array([1], np.int32)])
    with pytest.raises(PipelineDefinitionError, match="replace=True"):
        run_seq(lambda x: fn.per_frame(fn.resize(fn.element_extract(x, element_map=[0]), resize_x=4, resize_y=4)))


def test_sequence_rearrange_and_element_extract() -> None:
    seqs = [np.arange(4 * 2 * 3 * 1, dtype=np.uint8).reshape(4, 2, 3, 1), np.arange(24, dtype=np.uint8).reshape(2, 3, 4, 1)]
    orders = [np.array([3, 3, 1], np.int32), np.array([1], np.int32)]
    (out,) = run_seq(lambda x, o: fn.sequence_rearrange(x, new_order=o), seqs, o=orders)
    np.testing.assert_array_equal(out[0], seqs[0][[3, 3, 1]])
    np.testing.assert_array_equal(out[1], seqs[1][[1]])
    a, b = run_seq(lambda x: fn.element_extract(x, element_map=[1, 0]), seqs)
    np.testing.assert_array_equal(a[0], seqs[0][1])
    np.testing.assert_array_equal(b[1], seqs[1][0])
    with pytest.raises(PipelineError, match=r"outside \[0, 2\)"):
        run_seq(lambda x: fn.sequence_rearrange(x, new_order=[2]), seqs)
    with pytest.raises(PipelineError, match="element 3 is outside"):
        run_seq(lambda x: fn.element_extract(x, element_map=[3]), seqs)
    with pytest.raises(PipelineDefinitionError, match="non-empty"):
        run_seq(lambda x: fn.sequence_rearrange(x, new_order=[]), seqs)
    with pytest.raises(PipelineDefinitionError, match="sequences of CHW frames"):
        run_seq(lambda x: fn.resize(fn.crop_mirror_normalize(x, output_layout="FCHW"), resize_x=3))


def test_a_video_pipeline_end_to_end() -> None:
    pytest.importorskip("av")
    from video_clips import clip, reference_frames

    path = str(clip("h264"))

    @sf.pipeline_def(batch_size=2, num_threads=2, device_id=None, seed=9)
    def pipe():  # type: ignore[no-untyped-def]
        video, label = fn.readers.video(filenames=[path], labels=[7], sequence_length=4, step=10, name="R")
        video = fn.resize(video, resize_x=32, resize_y=24)
        video = fn.crop_mirror_normalize(video, crop=(16, 16), mirror=fn.random.coin_flip(), dtype=types.FLOAT,
                                         output_layout="FCHW", mean=[128.0] * 3, std=[64.0] * 3)
        return video, label

    with pipe() as p:
        video, label = p.run()
    assert np.asarray(video.at(0)).shape == (4, 3, 16, 16) and int(np.asarray(label.at(0))[0]) == 7
    frames = reference_frames(path)[0:4]
    (want,) = run_arrays(list(frames), lambda x: fn.resize(x, resize_x=32, resize_y=24))
    mirrored = not np.allclose(np.asarray(video.at(0))[0], (want[0][4:20, 8:24].transpose(2, 0, 1) - 128) / 64)
    for f in range(4):
        window = want[f][4:20, 8:24][:, ::-1] if mirrored else want[f][4:20, 8:24]
        np.testing.assert_allclose(np.asarray(video.at(0))[f], (window.transpose(2, 0, 1) - 128.0) / 64, atol=1e-5)


# --- the GPU implementation (host build of the kernels in CI; a real GPU when present) -----------

from helpers import assert_same_outputs, make_chunk, run_cpu_op, run_gpu_impl

from streamflow.ops.crop import Crop, CropSpec
from streamflow.ops.flip import Flip
from streamflow.ops.sequence import FrameWise


@pytest.mark.parametrize("inner", ["flip", "crop", "gaussian_blur"])
def test_gpu_frame_wise_equals_cpu(kernel_ctx, inner: str) -> None:
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, 256, (int(rng.integers(1, 5)), 17, 23, 3), dtype=np.uint8) for _ in range(4)]
    if inner == "gaussian_blur":  # a per-frame sigma (fn.per_frame), as DALI's per-frame tutorial gives it
        from streamflow.ops.gaussian_blur import GaussianBlur

        op = FrameWise(GaussianBlur(layout="HWC"), frozenset({"sigma"}))
        args = {"sigma": [(rng.random(len(s)) * 2 + 0.5).astype(np.float32) for s in seqs]}
    elif inner == "flip":
        op = FrameWise(Flip(), frozenset({"horizontal"}))
        args = {"horizontal": [rng.integers(0, 2, len(s)).astype(np.int32) for s in seqs]}
    else:
        op = FrameWise(Crop(CropSpec.from_args("crop", crop=(9, 11))), frozenset())
        args = {"crop_pos_x": [np.float32(v) for v in rng.random(4)]}
    assert_gpu_equals_cpu(kernel_ctx, op, seqs, args, what=f"frame-wise {inner}")


def test_gpu_rearrange_and_element_extract_equal_cpu(kernel_ctx) -> None:
    from streamflow.gpu.ops import find_impl
    from streamflow.ops.sequence import ElementExtract, SequenceRearrange

    rng = np.random.default_rng(5)
    seqs = [rng.integers(0, 256, (n, 4, 5, 3), dtype=np.uint8) for n in (3, 1, 4)]
    op = SequenceRearrange([2, 0, 0], "FHWC")
    gpu, gf = run_gpu_impl(kernel_ctx, op, seqs)
    cpu, cf = run_cpu_op(op, seqs)
    assert set(gf) == set(cf) == {1}  # 1 frame: index 2 is outside it
    assert_same_outputs(gpu, cpu, "sequence_rearrange")

    op2 = ElementExtract([0, 2], "FHWC")
    with kernel_ctx.activate():
        chunk = make_chunk(kernel_ctx.to_device(seqs))
        gpu_outs = find_impl(op2)(op2, chunk, kernel_ctx)
    kernel_ctx.synchronize()
    cpu_chunk = make_chunk(seqs)
    cpu_outs = op2.run(cpu_chunk)
    assert set(chunk.failures) == set(cpu_chunk.failures) == {1}
    for k in range(2):
        assert_same_outputs([None if o is None else kernel_ctx.to_host(o) for o in gpu_outs[k]], cpu_outs[k],
                            f"element_extract {k}")
