"""Operator arguments: checked when the pipeline is defined, DALI's tuning arguments accepted,
wrong names refused with a suggestion, and a constant that does not fit the data blamed on the
argument, not on the files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import DECODER_FILES, make_chunk, rand_image, run_batch

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError, PipelineError
from streamflow.ops.arguments import TUNING

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _src():  # type: ignore[no-untyped-def]
    return fn.external_source([[rand_image()]])


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda: fn.resize(_src(), resize_x="abc"), "resize: resize_x must be a number or per-sample data"),
        (lambda: fn.crop(_src(), crop=("a", 2)), "crop: crop must be a sequence of numbers or a number or None"),
        (lambda: fn.rotate(_src(), angle="x"), "rotate: angle must be a number"),
        (lambda: fn.crop_mirror_normalize(_src(), mean=[1, "a"]), "crop_mirror_normalize: mean must be"),
        (lambda: fn.resize(_src(), size=(2, 2), antialias="yes"), "resize: antialias must be True or False"),
        (lambda: fn.random.uniform(range=[0, "1"]), "random.uniform: range must be"),
        (lambda: fn.decoders.image(_src(), max_pixels=1.5), "decoders.image: max_pixels must be an integer or None"),
        (lambda: fn.crop_mirror_normalize(_src(), scale=fn.random.uniform()), "scale must be constant"),
    ],
)
def test_argument_types_are_checked_where_the_operator_is_added(build, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PipelineDefinitionError, match=words.replace("(", r"\(").replace(")", r"\)")):
        build()


@pytest.mark.parametrize(
    "build, name, suggestion",
    [
        (lambda: fn.resize(_src(), resize_xx=3), "resize_xx", "'resize_x'"),
        (lambda: fn.crop_mirror_normalize(_src(), means=[1, 2, 3]), "means", "'mean'"),
        (lambda: fn.decoders.image(_src(), device_memory_paddin=1), "device_memory_paddin", "'device_memory_padding'"),
        (lambda: fn.readers.file(file_root="x", random_shufle=True), "random_shufle", "'random_shuffle'"),
    ],
)
def test_a_wrong_argument_name_is_a_type_error_with_a_suggestion(build, name: str, suggestion: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'; did you mean {suggestion}"):
        build()


def test_dali_tuning_arguments_are_accepted(image_root: Path) -> None:
    @sf.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=image_root, read_ahead=True, dont_use_mmap=True, lazy_init=True,
                                        prefetch_queue_depth=4, bytes_per_sample_hint=1000, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", device_memory_padding=211025920, host_memory_padding=140544512,
                                   preallocate_width_hint=5980, preallocate_height_hint=6430, hw_decoder_load=0.65,
                                   affine=True)
        images = fn.resize(images, size=(32, 32), bytes_per_sample_hint=3000, preserve=True)
        return images, labels

    with pipe() as p:
        images, labels = p.run()
    assert images.as_tensor().shape == (2, 32, 32, 3)


def test_every_tuning_argument_is_documented() -> None:
    text = (DOCS / "dali-differences.md").read_text()
    missing = [name for name in TUNING if f"`{name}`" not in text]
    assert not missing, f"document these DALI arguments in docs/dali-differences.md: {missing}"


def test_per_channel_constants_are_checked_where_the_channels_are_known(image_root: Path) -> None:
    """Decoded images have 3 channels: two mean values fail at the call, not on every file."""

    @sf.pipeline_def(batch_size=2, num_threads=1)
    def pipe():  # type: ignore[no-untyped-def]
        jpegs, _ = fn.readers.file(file_root=image_root)
        images = fn.resize(fn.decoders.image(jpegs), size=(16, 16))
        return fn.crop_mirror_normalize(images, mean=[1, 2])

    with pytest.raises(PipelineDefinitionError, match=r"crop_mirror_normalize: mean must have 1 or 3 values, got 2 "
                                                      r"\(the input resize#\d+ has 3 channels\)"):
        pipe()

    @sf.pipeline_def(batch_size=2, num_threads=1)
    def gray():  # type: ignore[no-untyped-def]
        jpegs, _ = fn.readers.file(file_root=image_root)
        return fn.crop_mirror_normalize(fn.decoders.image(jpegs, output_type="gray"), mean=[1, 2, 3])

    with pytest.raises(PipelineDefinitionError, match="has 1 channels"):
        gray()


def test_channels_unknown_at_definition_are_checked_per_sample_with_the_argument_named() -> None:
    with pytest.raises(PipelineError, match=r"mean must have 1 or 3 values, got 2 \(this image has 3 channels\)"):
        run_batch([rand_image(), rand_image()], lambda x: fn.crop_mirror_normalize(x, mean=[1, 2]))


def test_a_per_sample_value_that_does_not_fit_fails_that_sample_naming_the_argument() -> None:
    images = [rand_image(seed=i) for i in range(3)]
    means = [np.float32([1, 2, 3]), np.float32([1, 2]), np.float32([4, 5, 6])]

    @sf.pipeline_def(batch_size=3, num_threads=1, seed=1, on_error="skip")
    def pipe():  # type: ignore[no-untyped-def]
        return fn.crop_mirror_normalize(fn.external_source([images]), mean=fn.external_source([means]))

    with pipe() as p:
        batch = p.run()
    assert len(batch[0]) == 2 and len(batch.dropped) == 1
    assert "per-sample mean" in batch.dropped[0][1].reason


def test_decoder_arguments_through_fn_aliases() -> None:
    """DALI's deprecated names stay usable."""
    data = [np.frombuffer(DECODER_FILES[0].read_bytes(), np.uint8)]
    out = run_batch(data, lambda x: fn.image_decoder(x, hw_decoder_load=0.5))
    assert out[0].at(0).shape[2] == 3


def test_dali_pipeline_options_are_accepted_and_a_wrong_one_is_refused() -> None:
    @sf.pipeline_def(batch_size=1, num_threads=1, exec_async=False, exec_pipelined=False, set_affinity=True,
                     enable_memory_stats=True, prefetch_queue_depth={"cpu_size": 2, "gpu_size": 3}, py_num_workers=4)
    def pipe():  # type: ignore[no-untyped-def]
        return _src()

    p = pipe(enable_checkpointing=True, max_streams=2)
    assert p.prefetch_queue_depth == 3
    with p:
        assert p.run()[0].at(0).shape == (23, 31, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'exec_asynk'; did you mean 'exec_async'"):
        sf.Pipeline(batch_size=1, exec_asynk=True)
    assert sf.Pipeline(batch_size=1, enable_conditionals=True).enable_conditionals


# --- axes / axis_names: one resolution (ops/arguments.py), one message per mistake -------------------------
def _axes_ops() -> dict[str, Any]:
    from streamflow.ops.erase import Erase
    from streamflow.ops.normalize import Normalize
    from streamflow.ops.pad import Pad
    from streamflow.ops.reductions import Reduction
    from streamflow.ops.slice import Slice

    return {
        "normalize": Normalize,
        "reductions.sum": lambda **kw: Reduction("sum", **kw),
        "erase": lambda **kw: Erase(anchor=[0, 0], shape=[1, 1], **kw),
        "pad": Pad,
        "slice": lambda **kw: Slice(named={"start": np.array([0, 0]), "shape": np.array([1, 1])}, **kw),
    }


@pytest.mark.parametrize("name", ["normalize", "reductions.sum", "erase", "pad", "slice"])
def test_axes_out_of_range_fail_the_sample_naming_operator_argument_and_axis(name: str) -> None:
    op = _axes_ops()[name](axes=[0, 5])
    # pad plans the whole batch at once (its samples share one number of dimensions): no second row there
    wide = [] if name == "pad" else [np.zeros((2, 2, 2, 2, 2, 2), np.float32)]
    chunk = make_chunk([np.zeros((4, 4), np.float32), *wide])
    op.run(chunk)
    assert f"{name}: axes=[0, 5]: axis 5 is out of range for a 2-D sample (valid: -2..1)" in str(chunk.failures[0])
    assert list(chunk.failures) == [0]


@pytest.mark.parametrize("name", ["normalize", "reductions.sum", "erase", "pad"])
def test_axis_names_not_in_the_layout_are_refused_at_definition(name: str) -> None:
    with pytest.raises(PipelineDefinitionError,
                       match=f"{name}: axis_names='HD': 'D' is not in the input layout 'HWC'"):
        _axes_ops()[name](axis_names="HD", layout="HWC")


@pytest.mark.parametrize("name", ["normalize", "erase", "pad"])
def test_axis_names_need_a_layout_that_fits_the_sample(name: str) -> None:
    op = _axes_ops()[name](axis_names="H", layout="HWC")
    chunk = make_chunk([np.zeros((4, 4), np.float32)])
    op.run(chunk)
    assert f"{name}: axis_names='H' needs the input layout; 'HWC' does not describe a 2-D sample" in str(
        chunk.failures[0])


@pytest.mark.parametrize("name", ["normalize", "reductions.sum", "erase", "pad", "slice"])
def test_axes_that_are_not_integers_are_refused_at_definition(name: str) -> None:
    with pytest.raises(PipelineDefinitionError, match=f"{name}: axes must be an int or a list of ints, got 'x'"):
        _axes_ops()[name](axes="x")
    assert _axes_ops()[name](axes=-1).axes == (-1,)


@pytest.mark.parametrize("name, build", [
    ("squeeze", lambda x, **kw: fn.squeeze(x, **kw)),
    ("tensor_resize", lambda x, **kw: fn.tensor_resize(x, sizes=[2], **kw)),
    ("reductions.sum", lambda x, **kw: fn.reductions.sum(x, **kw)),
])
def test_axis_names_resolved_at_definition_need_the_layout(name: str, build: Any) -> None:
    with pytest.raises(PipelineDefinitionError, match=f"{name}: axis_names='D': 'D' is not in the input layout 'HWC'"):
        build(fn.external_source([[np.zeros((1, 2, 3))]], layout="HWC"), axis_names="D")
    with pytest.raises(PipelineDefinitionError, match=f"{name}: axis_names='H' needs the input's layout, which is unknown"):
        build(fn.external_source([[np.zeros((1, 2, 3))]]), axis_names="H")


def test_tensor_resize_axes_out_of_range_fail_the_sample() -> None:
    from streamflow.ops.tensor_resize import TensorResize

    op = TensorResize(axes=(0, -3), sizes=(2.0, 2.0), scales=None, mode="default", max_size=None,
                      size_rounding="round", roi_start=None, roi_end=None, roi_relative=False,
                      subpixel_scale=True, alignment=(0.5,), interp=sf.types.InterpType.INTERP_LINEAR,
                      antialias=True, dtype=None, layout="")
    chunk = make_chunk([np.zeros((4, 4), np.float32), np.zeros((4, 4, 4), np.float32)])
    op.run(chunk)
    assert "tensor_resize: axes=[0, -3]: axis -3 is out of range for a 2-D sample (valid: -2..1)" in str(
        chunk.failures[0])
    assert list(chunk.failures) == [0]
