"""Pipelines with the features of DALI's custom-operation, conditionals and multi-GPU tutorials.

Written once for DALI and streamflow: each case is ``case(dali, fn, types)``
(``dali`` is ``nvidia.dali`` or ``streamflow``), so the same code runs in both
with only the imports changed: ``record_custom_notebooks.py`` runs it with DALI
2.4 (CPU), ``tests/integration/test_dali_custom_notebooks.py`` with streamflow.
The code and parameters are this project's own; only the features (operators,
arguments, call styles, output handling) follow the tutorials
(``docs/examples/custom_operations/*``, ``general/conditionals*``,
``general/multigpu``). Random choices of the tutorials are fed in through
``external_source`` so both libraries compute the same thing.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
from op_notebook_cases import ASTRONAUT, CAT, COFFEE, PHOTOS, photos, samples

MOTORCYCLE = str(PHOTOS / "motorcycle_left.png")
FILES = (CAT, COFFEE, ASTRONAUT, MOTORCYCLE)


def _pipeline(dali: Any, batch_size: int = 4, **kw: Any) -> Any:
    return dali.pipeline.Pipeline(batch_size=batch_size, num_threads=1, device_id=None, **kw)


# ------------------------------------------------------------- custom_operations/python_operator


def swap_stripes(image1: np.ndarray, image2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Swap every other band of 4 rows between two images of the same shape (two outputs)."""
    assert image1.shape == image2.shape
    rows = (np.arange(image1.shape[0]) // 4) % 2 == 1
    out1, out2 = image1.copy(), image2.copy()
    out1[rows], out2[rows] = image2[rows], image1[rows]
    return out1, out2


def darken_by_batch_mean(images: list[np.ndarray]) -> list[np.ndarray]:
    """batch_processing=True: lists in, lists out; each image minus a quarter of the batch's mean."""
    mean = np.mean([im.mean() for im in images])
    return [np.clip(im.astype(np.float32) - mean / 4, 0, 255).astype(np.uint8) for im in images]


def python_operator(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """``fn.python_function`` with two outputs (``Pipeline`` + ``with``), with ``batch_processing``, and the
    legacy ``ops.PythonFunction`` in a ``define_graph`` subclass."""
    pipe = _pipeline(dali, exec_async=False, exec_pipelined=False, seed=99)
    with pipe:
        im1 = photos(fn, types, files=FILES, crop=(24, 32))
        im2 = photos(fn, types, files=FILES[::-1], crop=(24, 32))
        out1, out2 = fn.python_function(im1, im2, function=swap_stripes, num_outputs=2)
        dark = fn.python_function(im1, function=darken_by_batch_mean, batch_processing=True)
        pipe.set_outputs(out1, out2, dark)
    pipe.build()
    result = {n: samples(o) for n, o in zip(["swap1", "swap2", "batch_dark"], pipe.run())}

    ops = importlib.import_module(dali.__name__ + ".ops")

    class SwapPipeline(dali.pipeline.Pipeline):  # type: ignore[misc, name-defined]
        def __init__(self, batch_size: int, num_threads: int, device_id: Any) -> None:
            super().__init__(batch_size, num_threads, device_id, exec_async=False, exec_pipelined=False, seed=7)
            self.input1 = ops.readers.File(files=list(FILES))
            self.input2 = ops.readers.File(files=list(FILES[::-1]))
            self.decode = ops.decoders.Image(device="cpu", output_type=types.RGB)
            self.resize = ops.Resize(resize_x=20, resize_y=16)
            self.swap = ops.PythonFunction(function=swap_stripes, num_outputs=2)

        def define_graph(self) -> Any:
            jpegs1, _ = self.input1()
            jpegs2, _ = self.input2()
            return self.swap(self.resize(self.decode(jpegs1)), self.resize(self.decode(jpegs2)))

    legacy = SwapPipeline(4, 1, None)
    legacy.build()
    result.update({n: samples(o) for n, o in zip(["legacy1", "legacy2"], legacy.run())})
    return result


# ------------------------------------------------------------- custom_operations/numba_function


def transpose_setup(outs: Any, ins: Any) -> None:
    """setup_fn: the output is the input with height and width exchanged."""
    for i in range(len(outs)):
        for s in range(len(outs[i])):
            outs[i][s][0] = ins[i][s][1]
            outs[i][s][1] = ins[i][s][0]
            outs[i][s][2] = ins[i][s][2]


def rotate_left(out0: Any, in0: Any) -> None:
    """run_fn: a quarter turn counter-clockwise, element by element (nopython mode)."""
    w = in0.shape[1]
    for i in range(out0.shape[0]):
        for j in range(out0.shape[1]):
            out0[i, j] = in0[j, w - 1 - i]


def planes_setup(outs: Any, ins: Any) -> None:
    """setup_fn with three outputs: each an HW plane of the HWC input."""
    for i in range(len(outs)):
        for s in range(len(outs[i])):
            outs[i][s][0] = ins[0][s][0]
            outs[i][s][1] = ins[0][s][1]


def split_planes(red: Any, green: Any, blue: Any, image: Any) -> None:
    """run_fn with three outputs and one input."""
    for y in range(image.shape[0]):
        for x in range(image.shape[1]):
            red[y, x] = image[y, x, 0]
            green[y, x] = image[y, x, 1]
            blue[y, x] = image[y, x, 2]


def first_shape_setup(outs: Any, ins: Any) -> None:
    """setup_fn for one output shaped as the first input."""
    for s in range(len(outs[0])):
        for d in range(3):
            outs[0][s][d] = ins[0][s][d]


def average_two(out0: Any, in0: Any, in1: Any) -> None:
    """Two inputs, float output."""
    for y in range(out0.shape[0]):
        for x in range(out0.shape[1]):
            for c in range(out0.shape[2]):
                out0[y, x, c] = (np.float32(in0[y, x, c]) + np.float32(in1[y, x, c])) * np.float32(0.5)


def invert_batch(outs: Any, ins: Any) -> None:
    """batch_processing=True: lists of the batch's samples; no setup_fn (shaped as the input)."""
    for s in range(len(outs)):
        out, inp = outs[s], ins[s]
        for y in range(out.shape[0]):
            for x in range(out.shape[1]):
                for c in range(out.shape[2]):
                    out[y, x, c] = 255 - inp[y, x, c]


def numba_function(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """``numba_function`` (imported from DALI's plugin path) with ``setup_fn``, several outputs, two inputs,
    ``batch_processing``; types and dimensions given as lists."""
    plugin = importlib.import_module(dali.__name__ + ".plugin.numba.fn.experimental")
    pipe = _pipeline(dali)
    with pipe:
        images = photos(fn, types, files=FILES, crop=(12, 20))
        others = photos(fn, types, files=FILES[::-1], crop=(12, 20))
        rotated = plugin.numba_function(images, run_fn=rotate_left, setup_fn=transpose_setup,
                                        out_types=[types.UINT8], in_types=[types.UINT8], outs_ndim=[3], ins_ndim=[3])
        r, g, b = plugin.numba_function(images, run_fn=split_planes, setup_fn=planes_setup,
                                        out_types=[types.UINT8] * 3, in_types=[types.UINT8], outs_ndim=[2, 2, 2],
                                        ins_ndim=[3])
        mean = plugin.numba_function(images, others, run_fn=average_two, setup_fn=first_shape_setup,
                                     out_types=[types.FLOAT],
                                     in_types=[types.UINT8, types.UINT8], outs_ndim=[3], ins_ndim=[3, 3])
        inverted = plugin.numba_function(images, run_fn=invert_batch, out_types=[types.UINT8],
                                         in_types=[types.UINT8], outs_ndim=[3], ins_ndim=[3], batch_processing=True)
        pipe.set_outputs(images, rotated, r, g, b, mean, inverted)
    pipe.build()
    names = ["images", "rotated", "red", "green", "blue", "mean", "inverted"]
    return {n: samples(o) for n, o in zip(names, pipe.run())}


# ------------------------------------------------------------- general/conditionals


def conditionals(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """``enable_conditionals``: ``if`` on a BOOL DataNode with an ``else``, ``and`` / ``not`` of DataNodes,
    a branch-local operator with a per-sample argument; conditions fed in (the tutorial's coin flips)."""
    flags = [np.array(v, np.bool_) for v in (True, False, True, False)]
    small = [np.array(v, np.bool_) for v in (True, True, False, False)]
    angles = [np.array(v, np.float32) for v in (15.0, 25.0, 30.0, 10.0)]

    @dali.pipeline_def(enable_conditionals=True, batch_size=4, num_threads=1, device_id=None, seed=42)
    def rotate_pipe() -> Any:
        images = photos(fn, types, files=FILES, crop=(24, 32))
        do_rotate = fn.external_source(source=lambda: flags, dtype=types.BOOL)
        do_flip = fn.external_source(source=lambda: small, dtype=types.BOOL)
        angle = fn.external_source(source=lambda: angles)
        if do_rotate:
            result = fn.rotate(images, angle=angle, fill_value=0)
        else:
            result = images
        if do_flip and not do_rotate:
            result = fn.flip(result, horizontal=1)
        return fn.resize(result, resize_x=20, resize_y=20)

    pipe = rotate_pipe()
    pipe.build()
    (out,) = pipe.run()
    return {"rotated": samples(out)}


# ------------------------------------------------------------- general/conditionals-autoaugment


def _magnitude_range(lo: float, hi: float, steps: int = 10) -> Any:
    """Turns f(images, parameter) into f(images, magnitude index in [0, steps))."""

    def decorator(function: Any) -> Any:
        def wrapper(images: Any, magnitude: int) -> Any:
            return function(images, float(np.linspace(lo, hi, steps)[magnitude]))

        return wrapper

    return decorator


def _augmentations(fn: Any) -> dict[str, Any]:
    @_magnitude_range(-0.25, 0.25)
    def shear_x(images: Any, p: float) -> Any:
        return fn.warp_affine(images, matrix=fn.transforms.shear(shear=[p, 0]), fill_value=0, inverse_map=False)

    @_magnitude_range(-0.25, 0.25)
    def shear_y(images: Any, p: float) -> Any:
        return fn.warp_affine(images, matrix=fn.transforms.shear(shear=[0, p]), fill_value=0, inverse_map=False)

    @_magnitude_range(-8, 8)
    def translate_x(images: Any, p: float) -> Any:
        return fn.warp_affine(images, matrix=fn.transforms.translation(offset=[p, 0]), fill_value=0,
                              inverse_map=False)

    @_magnitude_range(-20, 20)
    def rotate(images: Any, p: float) -> Any:
        return fn.rotate(images, angle=p, fill_value=0, keep_size=True)

    @_magnitude_range(0.2, 1.8)
    def brightness(images: Any, p: float) -> Any:
        return fn.brightness(images, brightness=p)

    @_magnitude_range(0.2, 1.8)
    def contrast(images: Any, p: float) -> Any:
        return fn.contrast(images, contrast=p)

    return {"shear_x": shear_x, "shear_y": shear_y, "translate_x": translate_x, "rotate": rotate,
            "brightness": brightness, "contrast": contrast}


def _sub_policy(op0: Any, p0: float, mag0: int, op1: Any, p1: float, mag1: int) -> Any:
    def apply(images: Any, rand0: Any, rand1: Any) -> Any:
        if rand0 < p0:
            images = op0(images, mag0)
        if rand1 < p1:
            images = op1(images, mag1)
        return images

    return apply


def conditionals_autoaugment(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """The tutorial's structure: sub-policies as closures whose ``if rand < p`` are traced as conditionals,
    a Python ``for`` over the policies with ``if policy_id == i``, ``experimental.pipeline_def``, magnitudes
    mapped by a decorator; policy ids and random numbers fed in."""
    aug = _augmentations(fn)
    policies = [
        _sub_policy(aug["rotate"], 0.6, 2, aug["translate_x"], 0.4, 8),
        _sub_policy(aug["contrast"], 0.5, 7, aug["shear_y"], 0.8, 1),
        _sub_policy(aug["shear_x"], 0.7, 9, aug["brightness"], 0.3, 3),
        _sub_policy(aug["brightness"], 0.9, 1, aug["rotate"], 0.5, 8),
    ]
    policy_ids = [np.array(i, np.int32) for i in (2, 0, 3, 1, 1, 2, 0, 3)]
    rand0 = [np.array(v, np.float32) for v in (0.1, 0.9, 0.5, 0.2, 0.7, 0.8, 0.3, 0.95)]
    rand1 = [np.array(v, np.float32) for v in (0.2, 0.1, 0.4, 0.9, 0.6, 0.1, 0.5, 0.3)]
    experimental = importlib.import_module(dali.__name__ + ".pipeline").experimental

    @experimental.pipeline_def(enable_conditionals=True, batch_size=8, num_threads=1, device_id=None, seed=13)
    def auto_augment_pipe() -> Any:
        images = photos(fn, types, files=FILES * 2, crop=(24, 24))
        policy_id = fn.external_source(source=lambda: policy_ids, dtype=types.INT32)
        r0 = fn.external_source(source=lambda: rand0)
        r1 = fn.external_source(source=lambda: rand1)
        for i in range(len(policies)):
            if policy_id == i:
                images = policies[i](images, r0, r1)
        return fn.resize(images, resize_x=16, resize_y=16), policy_id

    pipe = auto_augment_pipe()
    pipe.build()
    images, ids = pipe.run()
    tensors = importlib.import_module(dali.__name__ + ".tensors")
    assert isinstance(images[0], tensors.TensorCPU)  # the tutorial's check before plotting
    return {"augmented": samples(images), "policy_id": ids.as_array()}


# ------------------------------------------------------------- general/multigpu


def multigpu(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """One legacy ``Pipeline`` subclass per shard (``shard_id`` / ``num_shards`` of ``ops.readers.File``),
    each run twice: the labels and image sizes every shard gives, and its ``epoch_size``."""
    ops = importlib.import_module(dali.__name__ + ".ops")
    files = [str(p) for p in sorted(PHOTOS.glob("*.png"))]

    class ShardPipeline(dali.pipeline.Pipeline):  # type: ignore[misc, name-defined]
        def __init__(self, batch_size: int, num_threads: int, device_id: Any, shard_id: int, num_shards: int) -> None:
            super().__init__(batch_size, num_threads, device_id)
            self.input = ops.readers.File(files=files, labels=list(range(len(files))), random_shuffle=False,
                                          shard_id=shard_id, num_shards=num_shards, name="Reader")
            self.decode = ops.decoders.Image(device="cpu", output_type=types.RGB)

        def define_graph(self) -> Any:
            jpegs, labels = self.input()
            images = self.decode(jpegs)
            return images.shape(), labels

    out: dict[str, Any] = {}
    for shard in range(3):
        pipe = ShardPipeline(2, 1, None, shard, 3)
        pipe.build()
        for it in range(2):
            shapes, labels = pipe.run()
            out[f"shard{shard}_it{it}_shapes"] = shapes.as_array()
            out[f"shard{shard}_it{it}_labels"] = labels.as_array()
        out[f"shard{shard}_epoch_size"] = np.array(pipe.epoch_size("Reader"))
    return out


# ------------------------------------------------------------- use_cases/pytorch/efficientnet (validation)

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def efficientnet_validation(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """The EfficientNet example's evaluation pipeline fed by name: ``external_source(name=..., no_copy=True)``
    of int8-encoded paths, ``io.file.read``, ``resize(resize_shorter, antialias=False)``,
    ``crop_mirror_normalize`` to float CHW; ``pipeline_def`` from ``pipeline.experimental``; ``feed_input``."""
    pipeline_def = importlib.import_module(dali.__name__ + ".pipeline.experimental").pipeline_def

    @pipeline_def
    def validation(size: int, crop: int) -> Any:
        paths = fn.external_source(name="images", no_copy=True)
        images = fn.decoders.image(fn.io.file.read(paths), device="cpu", output_type=types.RGB)
        images = fn.resize(images, resize_shorter=size, interp_type=types.INTERP_LINEAR, antialias=False)
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", crop=(crop, crop),
                                        mean=MEAN, std=STD)

    pipe = validation(40, 32, batch_size=4, num_threads=1, device_id=None)
    pipe.build()
    pipe.feed_input("images", [np.frombuffer(p.encode(), dtype=np.int8) for p in FILES])
    (out,) = pipe.run()
    return {"normalized": out.as_array(), "layout": str(out.layout())}


PIPELINE_CASES = {
    "python_operator": python_operator,
    "numba_function": numba_function,
    "conditionals": conditionals,
    "conditionals_autoaugment": conditionals_autoaugment,
    "multigpu": multigpu,
    "efficientnet_validation": efficientnet_validation,
}
