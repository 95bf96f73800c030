"""DALI's custom-operation, conditionals and multi-GPU tutorials, with only the imports changed.

The pipelines are this project's own (``tests/dali_reference/custom_notebook_cases.py``,
the same code run by DALI 2.4 through ``record_custom_notebooks.py``), using the
features each tutorial shows; outputs are compared with DALI's recorded ones
(``tests/data/dali/customnotebooks``). The tests below the recorded cases cover
what DALI's CPU build cannot record (GPU devices on a machine without a GPU,
framework tensors, errors).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "dali_reference"))

import custom_notebook_cases as cases
from npz_cases import flatten

# --- the imports a DALI user changes: nvidia.dali -> streamflow ---------------------------------
import streamflow as dali
from streamflow import fn, pipeline_def, types
from streamflow.errors import PipelineDefinitionError
from streamflow.pipeline import Pipeline

REF = TESTS / "data" / "dali" / "customnotebooks"

#: (case, output) -> max abs difference allowed (default: exact)
TOLERANCES: dict[tuple[str, str], float] = {
    ("conditionals", "rotated"): 1,  # rotate by 10-30 degrees, then resize: rounding of the interpolation
    ("efficientnet_validation", "normalized"): 1.01 / (0.224 * 255),  # resize within 1 gray level, normalized
}


def compare(name: str, result: dict[str, Any]) -> None:
    """Every recorded DALI output of case ``name`` against streamflow's."""
    got = flatten(result)
    with np.load(REF / f"{name}.npz") as data:
        want = {k: data[k] for k in data.files}
    assert sorted(got) == sorted(want), f"{name}: outputs differ: {sorted(set(got) ^ set(want))}"
    problems = []
    for key, ref in want.items():
        out = got[key]
        if ref.dtype.kind == "U":
            if str(out) != str(ref):
                problems.append(f"{key}: {str(out)!r}, DALI {str(ref)!r}")
            continue
        if out.shape != ref.shape or out.dtype != ref.dtype:
            problems.append(f"{key}: {out.dtype}{out.shape}, DALI {ref.dtype}{ref.shape}")
            continue
        diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        atol = TOLERANCES.get((name, key.split("#")[0]), 2e-5 if ref.dtype.kind == "f" else 0)
        if diff.size and diff.max() > atol:
            problems.append(f"{key}: {(diff > atol).sum()}/{diff.size} elements off by more than {atol} "
                            f"(max {diff.max():g})")
    assert not problems, f"{name} differs from DALI 2.4:\n" + "\n".join(problems)


def check(name: str) -> dict[str, Any]:
    result = cases.PIPELINE_CASES[name](dali, fn, types)
    compare(name, result)
    return result


# --- custom_operations/python_operator ----------------------------------------------------------
def test_python_operator() -> None:
    """python_operator: python_function with num_outputs=2 in a ``with pipe:`` Pipeline (exec_async=False,
    exec_pipelined=False), batch_processing=True (lists in and out), legacy ops.PythonFunction in
    define_graph."""
    check("python_operator")


def test_python_operator_torch_and_dlpack_functions() -> None:
    """python_operator's TorchPythonFunction and DLTensorPythonFunction sections: torch tensors in and out;
    DLPack in, and DLPack capsules (``torch.utils.dlpack.to_dlpack``) returned, as DALI's users write."""
    torch = pytest.importorskip("torch")
    from torch.utils import dlpack as torch_dlpack

    def torch_swap(a: Any, b: Any) -> Any:
        return torch.flip(a, [1]), b.clone()

    def dlpack_double(capsule: Any) -> Any:
        tensor = torch_dlpack.from_dlpack(capsule)
        return torch_dlpack.to_dlpack(tensor.to(torch.int32) * 2)

    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None, exec_async=False, exec_pipelined=False)
    with pipe:
        images = cases.photos(fn, types, files=cases.FILES, crop=(8, 10))
        flipped, same = fn.torch_python_function(images, images, function=torch_swap, num_outputs=2)
        doubled = fn.dl_tensor_python_function(images, function=dlpack_double)
        pipe.set_outputs(images, flipped, same, doubled)
    pipe.build()
    images_out, flipped_out, same_out, doubled_out = (cases.samples(o) for o in pipe.run())
    for im, fl, sa, do in zip(images_out, flipped_out, same_out, doubled_out):
        np.testing.assert_array_equal(fl, im[:, ::-1])
        np.testing.assert_array_equal(sa, im)
        assert do.dtype == np.int32
        np.testing.assert_array_equal(do, im.astype(np.int32) * 2)


# --- custom_operations/gpu_python_operator --------------------------------------------------------
def test_gpu_python_operator_with_device_id_auto() -> None:
    """gpu_python_operator's pipeline (decoders.image(device="mixed"), resize(device="gpu"),
    python_function(device="gpu")) with device_id="auto" on a machine without a GPU: it runs on the CPU,
    and the function gets numpy arrays (the tutorial's cupy code works unchanged when written against
    the array's own module, ``cupy.get_array_module``-style)."""

    def mix_channels(a: Any, b: Any) -> Any:
        out = a.copy()
        out[..., 1:] = b[..., 1:]
        return out

    pipe = Pipeline(batch_size=4, num_threads=1, device_id="auto", exec_async=False, exec_pipelined=False, seed=99)
    with pipe:
        files1, _ = fn.readers.file(files=list(cases.FILES))
        files2, _ = fn.readers.file(files=list(cases.FILES[::-1]))
        im1, im2 = fn.decoders.image([files1, files2], device="mixed", output_type=types.RGB)
        res1, res2 = fn.resize([im1, im2], device="gpu", resize_x=24, resize_y=16)
        out1, out2 = fn.python_function(res1, res2, device="gpu", function=cases.swap_stripes, num_outputs=2)
        mixed = fn.python_function(res1, res2, device="gpu", function=mix_channels)
        pipe.set_outputs(res1, res2, out1, out2, mixed)
    with pytest.warns(UserWarning):
        pipe.build()
    r1, r2, o1, o2, mx = (cases.samples(o.as_cpu()) for o in pipe.run())
    for a, b, x, y, m in zip(r1, r2, o1, o2, mx):
        want_x, want_y = cases.swap_stripes(a, b)
        np.testing.assert_array_equal(x, want_x)
        np.testing.assert_array_equal(y, want_y)
        np.testing.assert_array_equal(m, mix_channels(a, b))


# --- custom_operations/numba_function -----------------------------------------------------------
def test_numba_function() -> None:
    """numba_function (from streamflow.plugin.numba.fn.experimental, DALI's import path): setup_fn changing
    the shape, three outputs, two inputs with a float output, batch_processing without setup_fn."""
    pytest.importorskip("numba")
    result = check("numba_function")
    np.testing.assert_array_equal(result["rotated"][0], np.rot90(result["images"][0]))


def test_numba_function_from_fn_experimental_and_errors() -> None:
    """fn.experimental.numba_function is the same operator; definition errors are clear."""
    pytest.importorskip("numba")
    from streamflow.plugin.numba.fn import numba_function

    assert fn.experimental.numba_function is numba_function

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def bad_types():  # type: ignore[no-untyped-def]
        x = fn.external_source(lambda: [np.zeros(3, np.uint8)] * 2)
        return fn.experimental.numba_function(x, run_fn=cases.rotate_left, out_types=[types.FLOAT],
                                              in_types=[types.UINT8], outs_ndim=[1], ins_ndim=[1])

    with pytest.raises(PipelineDefinitionError, match="without setup_fn"):
        bad_types()

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def on_gpu():  # type: ignore[no-untyped-def]
        x = fn.external_source(lambda: [np.zeros(3, np.uint8)] * 2)
        return fn.experimental.numba_function(x, run_fn=cases.rotate_left, out_types=[types.UINT8],
                                              in_types=[types.UINT8], outs_ndim=[1], ins_ndim=[1], device="gpu",
                                              blocks=[1, 1, 1], threads_per_block=[32, 1, 1])

    with pytest.raises(PipelineDefinitionError, match="device='cpu'"):
        on_gpu()


# --- custom_operations/jax_operator_basic ---------------------------------------------------------
def test_jax_operator_basic() -> None:
    """jax_operator_basic: ``from ...plugin.jax.fn import jax_function``; ``@jax_function`` on a function of
    an NHWC jax.Array batch (a flip by indexing), and stacked on ``@jax.jit @jax.vmap`` per-sample code;
    images from readers.file + decoders.image(device="mixed") + resize(size=...), device_id="auto"."""
    jax = pytest.importorskip("jax")
    from streamflow.plugin.jax.fn import jax_function

    @jax_function
    def horz_flip(images: Any) -> Any:
        return images[:, :, ::-1, :]

    @jax_function
    @jax.jit
    @jax.vmap
    def vert_flip(image: Any) -> Any:
        return image[::-1, :, :]

    @pipeline_def(batch_size=4, num_threads=1, device_id="auto")
    def flips():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(files=list(cases.FILES), name="image_reader")
        images = fn.resize(fn.decoders.image(jpegs, device="mixed"), size=(30, 20))
        return images, horz_flip(images), vert_flip(images), labels

    with pytest.warns(UserWarning):
        pipe = flips()
        pipe.build()
    images, horz, vert, _ = (o.as_cpu().as_array() for o in pipe.run())
    assert images.shape == (4, 30, 20, 3)
    np.testing.assert_array_equal(horz, images[:, :, ::-1])
    np.testing.assert_array_equal(vert, images[:, ::-1])


# --- general/conditionals -----------------------------------------------------------------------
def test_conditionals() -> None:
    """conditionals: if/else on a BOOL DataNode, ``and not`` of DataNodes, a per-sample angle in a branch."""
    check("conditionals")


def test_conditionals_trace_both_branches_only_for_data_conditions(capsys: pytest.CaptureFixture[str]) -> None:
    """conditionals' "Python statements and tracing": an ``if`` on a DataNode traces both branches (each print
    runs once, at definition), an ``if`` on a Python value only the branch it takes."""
    import random

    from streamflow.types import DALIDataType

    def define(python_condition: bool):  # type: ignore[no-untyped-def]
        @pipeline_def(enable_conditionals=True, batch_size=4, num_threads=1, device_id=None, seed=42)
        def pipe():  # type: ignore[no-untyped-def]
            images = cases.photos(fn, types, files=cases.FILES, crop=(8, 8))
            flag = fn.random.coin_flip(dtype=DALIDataType.BOOL)
            if (random.choice([True]) if python_condition else flag):
                print("Tracing True branch")
                result = fn.cast(images + 10, dtype=types.UINT8)  # DALI runs only branches of one type
            else:
                print("Tracing False branch")
                result = images
            return result, flag, images

        return pipe()

    data_pipe = define(False)
    assert capsys.readouterr().out.split("\n")[:2] == ["Tracing True branch", "Tracing False branch"]
    define(True)
    assert capsys.readouterr().out == "Tracing True branch\n"
    result, flags, images = data_pipe.run()
    for i in range(4):
        plus = bool(np.asarray(flags.at(i)))
        want = np.minimum(images.at(i).astype(np.int64) + (10 if plus else 0), 255)  # cast saturates
        np.testing.assert_array_equal(np.asarray(result.at(i)).astype(np.int64), want)


def test_conditionals_autoaugment() -> None:
    """conditionals-autoaugment: closures with ``if rand < p``, ``for i in range(n): if policy_id == i``,
    experimental.pipeline_def, warp_affine(inverse_map=False) of transforms.shear/translation, rotate,
    brightness, contrast; tensors.TensorCPU outputs."""
    check("conditionals_autoaugment")


# --- general/multigpu ---------------------------------------------------------------------------
def test_multigpu_sharding() -> None:
    """multigpu: one legacy Pipeline per shard (shard_id / num_shards), run twice each; labels, decoded shapes
    and epoch_size("Reader") as DALI's."""
    check("multigpu")


def test_multigpu_device_ids_without_a_gpu(tmp_path: Path) -> None:
    """multigpu runs one pipeline per device_id with decoders.image(device="mixed"); on a machine without a GPU
    a DALI user writes device_id="auto" (or None) and each shard's pipeline runs on the CPU."""
    root = tmp_path / "images" / "class0"
    root.mkdir(parents=True)
    for f in cases.FILES:
        shutil.copy(f, root / Path(f).name)
    seen = []
    for shard in range(2):

        @pipeline_def(batch_size=2, num_threads=1, device_id="auto")
        def sharded(shard_id: int = shard):  # type: ignore[no-untyped-def]
            jpegs, labels = fn.readers.file(file_root=str(tmp_path / "images"), shard_id=shard_id, num_shards=2,
                                            random_shuffle=False, name="Reader")
            return fn.decoders.image(jpegs, device="mixed"), labels

        with pytest.warns(UserWarning):
            pipe = sharded()
            pipe.build()
        images, _ = pipe.run()
        seen.append([np.array(images.as_cpu().at(i)).shape for i in range(2)])
        assert pipe.epoch_size("Reader") == 4
    assert len({s for shard in seen for s in shard}) == 4  # the two shards read different files


def test_multigpu_device_id_1_without_a_gpu_names_the_fix() -> None:
    """The tutorial's ``device_id=1`` on a machine without that GPU: a clear error that suggests "auto"."""
    from streamflow.backend import gpu_count
    from streamflow.errors import DeviceUnavailableError

    if gpu_count() > 1:
        pytest.skip("this machine has GPU 1")
    ops = __import__("streamflow.ops", fromlist=["readers"])

    class OnGpu1(Pipeline):
        def __init__(self) -> None:
            super().__init__(batch_size=2, num_threads=1, device_id=1)
            self.input = ops.readers.File(files=list(cases.FILES), random_shuffle=False)
            self.decode = ops.decoders.Image(device="mixed", output_type=types.RGB)

        def define_graph(self) -> Any:
            jpegs, labels = self.input()
            return self.decode(jpegs), labels

    with pytest.raises(DeviceUnavailableError, match="GPU 1.*device_id='auto'"):
        OnGpu1().build()


# --- use_cases/pytorch/efficientnet ---------------------------------------------------------------
def test_efficientnet_validation_pipeline() -> None:
    """EfficientNet's evaluation pipeline fed by name (feed_input) with int8-encoded paths, io.file.read,
    resize_shorter without antialias, crop_mirror_normalize to CHW float; as DALI's within one gray level."""
    check("efficientnet_validation")


@pytest.mark.parametrize("augmentation", ["autoaugment", "trivialaugment", "none"])
def test_efficientnet_training_pipeline_with_device_id_auto(augmentation: str) -> None:
    """EfficientNet's training pipeline: image_random_crop, resize(size, antialias=False), ``images.gpu()``,
    flip by a coin flip, auto_augment_image_net / trivial_augment_wide with ``shape`` under
    enable_conditionals, crop_mirror_normalize; device_id="auto" runs the GPU part on the CPU."""
    from streamflow.pipeline.experimental import pipeline_def as experimental_pipeline_def

    from streamflow.auto_aug import auto_augment, trivial_augment

    @experimental_pipeline_def(enable_conditionals=True)
    def training(size: int, automatic_augmentation: str):  # type: ignore[no-untyped-def]
        paths = fn.external_source(name="images", no_copy=True)
        images = fn.decoders.image_random_crop(fn.io.file.read(paths), device="mixed", output_type=types.RGB,
                                               random_aspect_ratio=[0.75, 4.0 / 3.0], random_area=[0.08, 1.0])
        images = fn.resize(images, size=[size, size], interp_type=types.INTERP_LINEAR, antialias=False)
        images = images.gpu()
        images = fn.flip(images, horizontal=fn.random.coin_flip(probability=0.5))
        if automatic_augmentation == "autoaugment":  # a Python value: decided once, at definition
            images = auto_augment.auto_augment_image_net(images, shape=[size, size])
        elif automatic_augmentation == "trivialaugment":
            images = trivial_augment.trivial_augment_wide(images, shape=[size, size])
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", crop=(size, size),
                                        mean=cases.MEAN, std=cases.STD)

    with pytest.warns(UserWarning):
        pipe = training(24, augmentation, batch_size=4, num_threads=1, device_id="auto", seed=5)
        pipe.build()
    for _ in range(2):
        pipe.feed_input("images", [np.frombuffer(p.encode(), dtype=np.int8) for p in cases.FILES])
        (out,) = pipe.run()
        batch = out.as_cpu().as_array()
        assert batch.shape == (4, 3, 24, 24) and batch.dtype == np.float32 and out.layout() == "CHW"
        assert np.isfinite(batch).all() and -2.2 < batch.min() < batch.max() < 2.7
