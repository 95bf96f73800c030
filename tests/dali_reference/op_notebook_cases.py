"""Pipelines with the features of DALI's operator tutorials, written once for DALI and streamflow.

Each case is ``case(dali, fn, types)``: ``dali`` is the top-level module
(``nvidia.dali`` or ``streamflow``), so the same code runs in both libraries
with only the imports changed (``record_op_notebooks.py`` runs it with DALI,
``tests/integration/test_dali_op_notebooks.py`` with streamflow). A case builds
and runs its pipelines the way the tutorial's reader would (``Pipeline`` +
``with pipe:``, ``@pipeline_def``, ``pipe.run()``, ``.at()``, ``.as_array()``,
``.layout()``) and returns ``{name: value}``: a list of per-sample numpy
arrays, one array, or a string. The code and parameters are this project's
own; only the features follow the tutorials. Every value is deterministic:
where a tutorial draws random parameters, the case feeds fixed ones (the two
libraries draw different random numbers).

Inputs are the real photos of ``tests/data/photos`` (PNG: decoded exactly by
both libraries), cropped small so the recorded outputs stay small.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data"
PHOTOS = DATA / "photos"
CAT, COFFEE, ASTRONAUT, CAMERA = (str(PHOTOS / n) for n in ("chelsea.png", "coffee.png", "astronaut.png",
                                                            "camera.png"))


def photos(fn: Any, types: Any, files: tuple[str, ...] = (CAT, COFFEE), crop: tuple[int, int] = (40, 48),
           output_type: Any = None, **crop_args: Any) -> Any:
    """Decoded photos (file reader + image decoder), cropped to ``crop`` (around their centre by default)."""
    jpegs, _labels = fn.readers.file(files=list(files))
    images = fn.decoders.image(jpegs, device="cpu", output_type=output_type or types.RGB)
    return fn.crop(images, crop=crop, **crop_args)


def samples(batch: Any) -> list[np.ndarray]:
    """A batch as per-sample numpy arrays (``len(batch)`` and ``batch.at(i)``)."""
    return [np.array(batch.at(i)) for i in range(len(batch))]


def run(pipe: Any, names: list[str]) -> dict[str, Any]:
    pipe.build()
    return {n: samples(o) for n, o in zip(names, pipe.run())}


def _pipeline(dali: Any, batch_size: int = 2, **kw: Any) -> Any:
    return dali.pipeline.Pipeline(batch_size=batch_size, num_threads=1, device_id=None, **kw)


# --------------------------------------------------------------------- general/expressions


def expr_examples(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """Tensor-tensor, tensor-constant and tensor-scalar-batch arithmetic; ``.as_array()`` outputs."""
    left = [np.int32([[42, -7, 0], [9, 100, -13]]), np.int32([[5, 10, 15], [-10, 100, 1000]])]
    right = [np.int32([[3, 3, -3], [2, -4, 5]]), np.int32([[1, 5, 5], [7, 1, -9]])]
    names = ["add", "sub", "mul", "floordiv", "truediv", "neg", "pos", "add_200", "mul_075", "rsub_200",
             "const_sub", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor"]
    pipe = _pipeline(dali)
    with pipe:
        lhs, rhs = fn.external_source(source=lambda: (left, right), num_outputs=2)
        pipe.set_outputs(lhs + rhs, lhs - rhs, lhs * rhs, lhs // rhs, lhs / rhs, -lhs, +lhs, lhs + 200, lhs * 0.75,
                         200 - lhs, types.Constant(15).float32() - rhs, lhs == rhs, lhs != rhs, lhs < rhs,
                         lhs <= rhs, lhs > rhs, lhs >= rhs, lhs & rhs, lhs | rhs, lhs ^ rhs)
    pipe.build()
    out: dict[str, Any] = {n: o.as_array() for n, o in zip(names, pipe.run())}
    pipe = _pipeline(dali)
    with pipe:
        tensors = fn.external_source(lambda: left)
        scalars = fn.external_source(lambda: np.arange(1, 3))  # one array: a batch of 0-d samples
        pipe.set_outputs(tensors + scalars, scalars * tensors, scalars)
    pipe.build()
    out.update({n: o.as_array() for n, o in zip(["plus_scalar", "scalar_times", "scalars"], pipe.run())})
    return out


def _constant_batch(*columns: list[np.ndarray]) -> Any:
    """A source giving the same batch each time (no parameter: DALI would pass the iteration to one)."""
    return (lambda: columns) if len(columns) > 1 else (lambda: columns[0])


PROMOTION_RIGHT = ["uint8", "int8", "uint16", "int16", "int32", "uint32", "int64", "float32", "float64", "bool"]


def expr_type_promotions(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """Every binary operator over pairs of types (``dtype=[...]`` per output), and typed constants."""
    out: dict[str, Any] = {}
    ops = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
           "truediv": lambda x, y: x / y, "floordiv": lambda x, y: x // y, "or": lambda x, y: x | y,
           "and": lambda x, y: x & y, "xor": lambda x, y: x ^ y}
    for left_type in ("uint8", "int16"):
        for right_type in PROMOTION_RIGHT:
            lvals = np.array([42, 8, 250], left_type)
            rvals = np.array([True, False, True]) if right_type == "bool" else (
                np.array([9, -2, 7], right_type) if right_type[0] in "if" else np.array([9, 2, 7], right_type))
            usable = [k for k in ops if not (k in ("or", "and", "xor") and right_type.startswith("float"))
                      and not (k == "floordiv" and right_type == "bool")]  # // False: division by zero
            pipe = _pipeline(dali, batch_size=1)
            with pipe:
                lhs, rhs = fn.external_source(
                    source=_constant_batch([lvals], [rvals]), num_outputs=2,
                    dtype=[types.to_dali_type(np.dtype(left_type).name), types.to_dali_type(np.dtype(right_type).name)])
                pipe.set_outputs(*[ops[k](lhs, rhs) for k in usable])
            pipe.build()
            for k, o in zip(usable, pipe.run()):
                out[f"{left_type}_{k}_{right_type}"] = o.as_array()
    constant = types.Constant
    for tensor_type in ("uint8", "float32"):
        pipe = _pipeline(dali, batch_size=1)
        with pipe:
            t = fn.external_source(source=_constant_batch([np.array([42, 8, 250], tensor_type)]),
                                   dtype=types.to_dali_type(tensor_type))
            pipe.set_outputs(t + 10, t + 42.3, t * constant(10), constant(10.0) * t,
                             t * constant(10, types.DALIDataType.UINT8), constant(10.0, types.DALIDataType.UINT8) * t,
                             constant(10).uint8() * t, t - constant(3).int16(), constant(2).float64() * t)
        pipe.build()
        for k, o in enumerate(pipe.run()):
            out[f"{tensor_type}_const{k}"] = o.as_array()
    return out


def expr_conditional_and_masking(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """A per-sample boolean multiplexing two images, and per-pixel masks from comparisons and bitwise ops."""
    pipe = _pipeline(dali)
    with pipe:
        imgs = photos(fn, types)
        adjusted = fn.brightness_contrast(imgs, brightness=2.5, contrast=1.3)
        condition = fn.external_source(lambda: [np.array(True), np.array(False)], dtype=types.DALIDataType.BOOL)
        neg_condition = condition ^ True
        mux = condition * adjusted + neg_condition * imgs
        brightest = fn.reductions.max(imgs, axis_names="C", keep_dims=True)
        darkest = fn.reductions.min(imgs, axes=2, keep_dims=True)
        dark = brightest < 90
        bright = darkest > 150
        either = dark | bright
        neither = either ^ True
        masked = either * adjusted + neither * imgs
        pipe.set_outputs(mux, neg_condition, adjusted, dark, bright, either, masked, imgs & 0xF0, dark & bright)
    return run(pipe, ["mux", "neg_condition", "adjusted", "dark", "bright", "either", "masked", "high_bits",
                      "both"])


def expr_blend_image(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """Two readers decoded as one list, resized as a list, blended in float and in uint16."""
    pipe = _pipeline(dali, batch_size=1, seed=42)
    with pipe:
        cats_jpegs, _ = fn.readers.file(files=[CAT])
        coffee_jpegs, _ = fn.readers.file(files=[COFFEE])
        images = fn.decoders.image([cats_jpegs, coffee_jpegs], device="cpu", output_type=types.RGB)
        cats, coffee = fn.resize(images, resize_x=48, resize_y=40)
        blend_float = (0.3 * cats + 0.7 * coffee) / 2
        blend_uint16 = (types.Constant(3).uint16() * cats + types.Constant(7).uint16() * coffee) // types.Constant(
            20).uint16()
        pipe.set_outputs(cats, coffee, fn.cast(blend_float, dtype=types.DALIDataType.UINT8),
                         fn.cast(blend_uint16, dtype=types.DALIDataType.UINT8), blend_uint16)
    return run(pipe, ["cats", "coffee", "blend_float", "blend_uint16", "uint16"])


# --------------------------------------------------------------------- general


def reductions(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """min/max/sum/mean/mean_square/rms/std_dev/variance over axes, axis_names, keep_dims, dtype."""
    backend = importlib.import_module(dali.__name__ + ".backend")

    def get_batch() -> list[np.ndarray]:
        return [np.reshape(np.arange(12, dtype=np.int32), (2, 3, 2)) * (i + 2) - 5 for i in range(2)]

    pipe = _pipeline(dali)
    with pipe:
        x = fn.external_source(source=get_batch, layout="ABC")
        mean = fn.reductions.mean(x)
        mean_a = fn.reductions.mean(x, axes=0)
        pipe.set_outputs(fn.reductions.max(x), fn.reductions.min(x), fn.reductions.sum(x), fn.reductions.min(x, axes=0),
                         fn.reductions.min(x, axes=1), fn.reductions.min(x, axis_names="B"),
                         fn.reductions.min(x, axes=(0, 1)), fn.reductions.min(x, axes=()),
                         fn.reductions.min(x, axis_names="AC"), fn.reductions.min(x, axis_names=""), mean,
                         fn.reductions.std_dev(x, mean), fn.reductions.variance(x, mean),
                         fn.reductions.std_dev(x, mean, keep_dims=True),
                         fn.reductions.sum(x, dtype=types.INT64), fn.reductions.sum(x, dtype=types.FLOAT),
                         fn.reductions.min(x, axis_names="AC", keep_dims=True), fn.reductions.max(x, keep_dims=True),
                         mean_a, fn.reductions.mean_square(x), fn.reductions.rms(x, axes=(), dtype=types.FLOAT),
                         fn.reductions.std_dev(x, mean_a, axes=0), fn.reductions.variance(x, mean_a, axes=0,
                                                                                          keep_dims=True),
                         fn.reductions.variance(x, mean, ddof=1))
    pipe.build()
    names = ["max", "min", "sum", "min_0", "min_1", "min_B", "min_01", "min_none", "min_AC", "min_empty_names",
             "mean", "std_dev", "variance", "std_dev_keep", "sum_i64", "sum_float", "min_AC_keep", "max_keep",
             "mean_0", "mean_square", "rms_none", "std_dev_0", "variance_0_keep", "variance_ddof"]
    out: dict[str, Any] = {}
    for name, o in zip(names, pipe.run()):
        if isinstance(o, backend.TensorListGPU):
            o = o.as_cpu()
        out[name] = samples(o)
    pipe = _pipeline(dali)
    with pipe:
        imgs = photos(fn, types)
        channel_mean = fn.reductions.mean(imgs, axis_names="HW")
        pipe.set_outputs(channel_mean, fn.reductions.std_dev(imgs, channel_mean, axis_names="HW"),
                         fn.reductions.sum(imgs, axes=(0, 1)), fn.reductions.max(imgs, axis_names="C"))
    out.update(run(pipe, ["image_mean_HW", "image_std_HW", "image_sum_01", "image_max_C"]))
    return out


def normalize(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """Default, per-axis, batch-wide, given and computed statistics, scale/shift into uint8, epsilon, ddof."""
    pipe = _pipeline(dali)
    with pipe:
        imgs = photos(fn, types, crop=(20, 24))
        mean = fn.reductions.mean(imgs, keep_dims=True)  # DALI: a per-sample mean has the input's dimensions
        stddev = fn.reductions.std_dev(imgs, mean, keep_dims=True)
        pipe.set_outputs(fn.normalize(imgs), fn.normalize(imgs, axes=[0, 1]), fn.normalize(imgs, axis_names="W"),
                         fn.normalize(imgs, batch=True), fn.normalize(imgs, batch=True, axis_names="HW"),
                         fn.normalize(imgs, mean=120, stddev=50), fn.normalize(imgs, mean=mean, stddev=stddev),
                         fn.normalize(imgs, scale=48, shift=128, dtype=types.UINT8),
                         fn.normalize(imgs, axes=[0, 1], epsilon=100, ddof=1), fn.normalize(imgs, mean=100))
    return run(pipe, ["default", "axes_01", "names_W", "batch", "batch_HW", "given", "from_reductions", "uint8",
                      "epsilon_ddof", "given_mean"])


def erase(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """Absolute, multiple, normalized and centred regions; per-channel fill; axes; per-sample anchors."""
    pipe = _pipeline(dali, seed=1234)
    with pipe:
        imgs = photos(fn, types)
        anchor = fn.external_source(lambda: [np.float32([3, 30]), np.float32([20, 2])])
        pipe.set_outputs(
            fn.erase(imgs, anchor=[5, 6], shape=[10, 12], axis_names="HW"),
            fn.erase(imgs, anchor=[5, 6, 25, 30], shape=[10, 12, 8, 6], axis_names="HW", fill_value=(118, 185, 0)),
            fn.erase(imgs, anchor=[0.2, 0.3], shape=[0.5, 0.4], axis_names="HW", normalized_anchor=True,
                     normalized_shape=True),
            fn.erase(imgs, anchor=[0.5, 0.5], shape=[10, 20], axis_names="HW", normalized_anchor=True,
                     centered_anchor=True, fill_value=255),
            fn.erase(imgs, anchor=[12], shape=[7], axis_names="W", fill_value=100),
            fn.erase(imgs, anchor=(2, 3), shape=(4, 5), axes=(0, 1), fill_value=50),
            fn.erase(imgs, anchor=anchor, shape=[9, 9], axis_names="HW"),
        )
    return run(pipe, ["absolute", "two_regions", "normalized", "centered", "along_W", "axes", "per_sample"])


def reinterpret(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """reshape (fixed, wildcard, src_dims, rel_shape, layouts), squeeze / expand_dims, reinterpret's dtype."""
    flat = [np.arange(25, dtype=np.int32) * 3 % 10, np.arange(25, dtype=np.int32) % 7]
    var = [np.arange(15, dtype=np.int32), np.arange(35, dtype=np.int32) % 9]
    chw = [np.arange(18, dtype=np.int32).reshape(1, 6, 3), np.arange(4, dtype=np.int32).reshape(1, 2, 2)]
    rows = [np.arange(24, dtype=np.int32).reshape(4, 6), np.arange(12, dtype=np.int32).reshape(2, 6)]
    raw = [np.arange(48, dtype=np.uint8).reshape(4, 12) * 5, np.arange(20, dtype=np.uint8).reshape(5, 4) * 11]
    sources = [flat, var, chw, rows, raw]

    def one_by_one(values: list[np.ndarray]) -> Any:
        it = iter(values)
        return lambda: next(it)  # no parameter: called once per sample (batch=False)

    @dali.pipeline_def(device_id=None, num_threads=1, batch_size=2)
    def pipe_fn():  # type: ignore[no-untyped-def]
        inp = [fn.external_source(one_by_one(src), batch=False, dtype=types.UINT8 if k == 4 else types.INT32,
                                  layout="CHW" if k == 2 else None) for k, src in enumerate(sources)]
        squeezed = fn.squeeze(inp[2], axes=[0])
        return (fn.reshape(inp[0], shape=[5, 5], layout="HW"), fn.reshape(inp[1], shape=[-1, 5]), squeezed,
                fn.expand_dims(squeezed, axes=[0, 3], new_axis_names="FC"), fn.reshape(inp[3], src_dims=[1, 0]),
                fn.reshape(inp[2], src_dims=[1, 2, -1], layout="HWC"),
                fn.reshape(inp[3], rel_shape=[0.5, 2], src_dims=[1, 0]), fn.reinterpret(inp[4], dtype=types.UINT32))

    pipe = pipe_fn()
    pipe.build()
    out: dict[str, Any] = {}
    names = ["fixed", "wildcard", "squeezed", "expanded", "src_dims", "src_dims_new", "rel_shape", "reinterpret"]
    for name, o in zip(names, pipe.run()):
        o = o.as_cpu() if hasattr(o, "as_cpu") else o
        out[name] = [np.array(o[i]) for i in range(len(o))]
        out[name + "_layout"] = o.layout()
    return out


def tensor_join(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """cat and stack of constant tensors along every axis; with layouts, by axis name."""
    arr = np.arange(1, 25, dtype=np.int32).reshape(2, 3, 4)
    pipe = _pipeline(dali, batch_size=1)
    with pipe:
        src1, src2, src3 = types.Constant(arr), types.Constant(arr + 100), types.Constant(arr + 200)
        # a source of the batch: streamflow needs one (DALI also runs pipelines made only of constants)
        hwc = fn.external_source(lambda: [arr.reshape(3, 2, 4) * -1], layout="HWC")
        pipe.set_outputs(fn.cat(src1, src2, src3, axis=0), fn.cat(src1, src2, src3, axis=1),
                         fn.cat(src1, src2, src3, axis=2), fn.stack(src1, src2, src3, axis=0),
                         fn.stack(src1, src2, src3, axis=1), fn.stack(src1, src2, src3, axis=2),
                         fn.stack(src1, src2, src3, axis=3), fn.cat(hwc, hwc + 1, axis_name="W"),
                         fn.stack(hwc, hwc * 2, axis=1, axis_name="N"))
    out = run(pipe, ["cat_0", "cat_1", "cat_2", "stack_0", "stack_1", "stack_2", "stack_3", "cat_W", "stack_N"])
    return out


# --------------------------------------------------------------------- image_processing


def augmentation_gallery(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """The gallery's operators with this project's parameters, one output each."""
    augmentations = {
        "erase": lambda images: fn.erase(images, anchor=[0.25, 0.2], shape=[0.4, 0.5], normalized_anchor=True,
                                         normalized_shape=True, axis_names="HW"),
        "slice": lambda images: fn.slice(images, rel_start=[0.2, 0.1], rel_shape=[0.6, 0.7], axis_names="HW"),
        "water": lambda images: fn.water(images),
        "sphere": lambda images: fn.sphere(images),
        "rotate": lambda images: fn.rotate(images, angle=25, interp_type=types.INTERP_LINEAR, fill_value=0),
        "warp_affine": lambda images: fn.warp_affine(images, matrix=[1.0, 0.3, -4.0, 0.1, 1.1, 2.0],
                                                     interp_type=types.INTERP_LINEAR),
        "brightness_contrast": lambda images: fn.brightness_contrast(images, brightness=0.6, contrast=1.4),
        "jpeg_compression_distortion": lambda images: fn.jpeg_compression_distortion(images, quality=10),
        "hsv": lambda images: fn.hsv(images, hue=30.0, saturation=0.5),
        "paste": lambda images: fn.paste(images, ratio=1.5, fill_value=(10, 200, 100), paste_x=0.2, paste_y=0.6),
        "flip": lambda images: fn.flip(images, vertical=1, horizontal=1),
    }

    @dali.pipeline_def()
    def gallery():  # type: ignore[no-untyped-def]
        images = photos(fn, types)
        return tuple([images] + [aug(images) for aug in augmentations.values()])

    pipe = gallery(batch_size=2, num_threads=1, device_id=None, seed=10)
    return run(pipe, ["images", *augmentations])


def brightness_contrast(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """brightness_shift + contrast around a given centre, an inverted image, a float output."""

    @dali.pipeline_def()
    def bc_pipeline():  # type: ignore[no-untyped-def]
        images = photos(fn, types)
        return (fn.brightness_contrast(images, brightness_shift=0.2, contrast=0.5, contrast_center=90),
                fn.brightness_contrast(images, contrast=1.2, brightness_shift=1, brightness=-1),
                fn.brightness_contrast(images, brightness=1.3, dtype=types.FLOAT))

    return run(bc_pipeline(batch_size=2, num_threads=1, device_id=None), ["shift_contrast", "negative", "float"])


def clahe_example(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """CLAHE on resized RGB photos (luma only) and on a grayscale photo with coarse / fine tiles."""

    @dali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def clahe_pipeline():  # type: ignore[no-untyped-def]
        jpegs, _ = fn.readers.file(files=[CAT, ASTRONAUT])
        images = fn.resize(fn.decoders.image(jpegs), size=[64, 64])
        # two windows of the grayscale photo (an RGB photo decoded to gray can differ by 1 between libraries)
        gray = photos(fn, types, files=(CAMERA, CAMERA), crop=(64, 64), output_type=types.GRAY,
                      crop_pos_x=fn.external_source(lambda: [np.float32(0.5), np.float32(0.1)]))
        return (images, fn.clahe(images, tiles_x=8, tiles_y=8, clip_limit=2.0, luma_only=True), gray,
                fn.clahe(gray, tiles_x=8, tiles_y=8, clip_limit=2.0), fn.clahe(gray, tiles_x=16, tiles_y=16,
                                                                               clip_limit=4.0),
                fn.clahe(gray, tiles_x=4, tiles_y=4, clip_limit=1.0))

    return run(clahe_pipeline(), ["resized", "rgb_luma", "gray", "gray_8", "gray_16", "gray_4"])


def color_space_conversion(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """RGB to BGR, YCbCr and gray (and back from YCbCr)."""
    conversions = [("bgr", types.RGB, types.BGR), ("ycbcr", types.RGB, types.YCbCr), ("gray", types.RGB, types.GRAY)]

    @dali.pipeline_def()
    def conversion_pipeline():  # type: ignore[no-untyped-def]
        images = photos(fn, types)
        converted = [fn.color_space_conversion(images, image_type=i, output_type=o) for _, i, o in conversions]
        back = fn.color_space_conversion(converted[1], image_type=types.YCbCr, output_type=types.RGB)
        return tuple([images, *converted, back])

    pipe = conversion_pipeline(batch_size=2, num_threads=1, device_id=None)
    return run(pipe, ["images", *[c[0] for c in conversions], "ycbcr_to_rgb"])


def hsv(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """hue / saturation / value as constants and as per-sample data (a grayscale switch)."""

    @dali.pipeline_def()
    def hsv_pipeline(hue, saturation, value):  # type: ignore[no-untyped-def]
        images = photos(fn, types)
        keep_color = fn.external_source(lambda: [np.float32(0.0), np.float32(1.0)])
        return (fn.hsv(images, hue=hue, saturation=saturation, value=value), fn.hsv(images, saturation=keep_color),
                fn.hsv(images, hue=-40, dtype=types.FLOAT))

    pipe = hsv_pipeline(hue=100, saturation=1.2, value=0.6, batch_size=2, num_threads=1, device_id=None)
    return run(pipe, ["hsv", "grayscale_switch", "float"])


INTERPS = ["INTERP_NN", "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_TRIANGULAR", "INTERP_GAUSSIAN", "INTERP_LANCZOS3"]


def interp_types(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """Downscaling and upscaling with every interpolation type."""
    pipe = _pipeline(dali)
    with pipe:
        images = photos(fn, types, crop=(96, 96))
        small = fn.crop(images, crop=(12, 16))
        down = [fn.resize(images, resize_x=20, resize_y=24, interp_type=getattr(types, i)) for i in INTERPS]
        up = [fn.resize(small, resize_x=48, resize_y=36, interp_type=getattr(types, i)) for i in INTERPS]
        pipe.set_outputs(*down, *up)
    return run(pipe, [f"down_{i}" for i in INTERPS] + [f"up_{i}" for i in INTERPS])


def multiple_crops(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """Crops as frames of a sequence: warp_affine with per-frame crop matrices (fixed and scaled windows)."""
    crop_w_values = [np.int32(20), np.int32(24)]
    crop_h_values = [np.int32(16), np.int32(10)]
    xs = [np.int32([0, 10, 28]), np.int32([5, 40])]
    ys = [np.int32([0, 20, 44]), np.int32([50, 3])]

    @dali.pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=42)
    def crops_pipeline():  # type: ignore[no-untyped-def]
        img = photos(fn, types, crop=(60, 80))
        shape = img.shape(dtype=types.INT32)
        h, w = shape[0], shape[1]
        crop_w = fn.external_source(lambda: crop_w_values)
        crop_h = fn.external_source(lambda: crop_h_values)
        crop_x_range = fn.cast(fn.stack(0, w - crop_w), dtype=types.FLOAT)  # stacking different types
        crop_y_range = fn.cast(fn.stack(0, h - crop_h), dtype=types.FLOAT)
        crop_x = fn.external_source(lambda: xs)
        crop_y = fn.external_source(lambda: ys)
        crop_start = fn.stack(crop_x, crop_y, axis=1)
        crop_size = fn.stack(crop_w, crop_h, axis=0)[dali.newaxis]
        crop_end = crop_start + crop_size
        start_f = fn.per_frame(crop_start + 0.0)
        end_f = fn.per_frame(crop_end + 0.0)
        size_f = fn.per_frame(crop_size + 0.0)
        mtx = fn.transforms.crop(from_start=start_f, from_end=end_f, to_start=0.0, to_end=size_f)
        crops = fn.warp_affine(img, mtx, size=fn.stack(crop_h, crop_w), interp_type=types.INTERP_NN,
                               inverse_map=False)
        # variable-size windows scaled to one output size
        out_size = [20, 30]
        scaled_mtx = fn.transforms.crop(from_start=start_f, from_end=fn.per_frame(crop_start + 12.5),
                                        to_start=[0.0, 0.0], to_end=out_size[::-1])
        scaled = fn.warp_affine(img, scaled_mtx, size=out_size, interp_type=types.INTERP_LINEAR, inverse_map=False)
        return crops, scaled, mtx, crop_x_range, crop_y_range, crop_size, shape, crop_end

    return run(crops_pipeline(), ["crops", "scaled", "matrices", "x_range", "y_range", "size", "shape", "end"])


def resize(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """Output-size arguments, scaling modes, max_size, shorter/longer side, RoI (and flipping), filters."""
    sizes = [np.float32([30, 20]), np.float32([16, 40])]
    pipe = _pipeline(dali)
    with pipe:
        images = photos(fn, types, crop=(60, 80))
        per_sample = fn.external_source(lambda: sizes)
        pipe.set_outputs(
            fn.resize(images, size=[30, 36]), fn.resize(images, resize_x=36, resize_y=30),
            fn.resize(images, resize_x=36), fn.resize(images, size=[0, 36]), fn.resize(images, resize_y=30),
            fn.resize(images, size=[30, 0]),
            fn.resize(images, size=[30, 30], mode="not_larger"), fn.resize(images, size=[30, 30], mode="not_smaller"),
            fn.resize(images, size=[30, 30], mode="stretch"), fn.resize(images, resize_x=50, max_size=[24, 40]),
            fn.resize(images, resize_shorter=24), fn.resize(images, resize_longer=24),
            fn.resize(images, size=[20, 20], roi_start=[0.2, 0.1], roi_end=[0.8, 0.6], roi_relative=True),
            fn.resize(images, size=[20, 20], roi_start=[50, 70], roi_end=[10, 5]),
            fn.resize(images, size=[20, 24], antialias=False),
            fn.resize(images, size=[20, 24], min_filter=types.INTERP_NN, mag_filter=types.INTERP_LINEAR),
            fn.resize(images, size=per_sample), fn.resize(images, size=[25, 33], subpixel_scale=False),
            fn.resize(images, size=[90, 120], mag_filter=types.INTERP_CUBIC),
        )
    return run(pipe, ["size", "xy", "x_only", "size_0w", "y_only", "size_h0", "not_larger", "not_smaller", "stretch",
                      "max_size", "shorter", "longer", "roi_relative", "roi_flipped", "no_antialias", "filters",
                      "per_sample", "no_subpixel", "upscale_cubic"])


def _warp_matrices() -> list[np.ndarray]:
    out = []
    for k, (a, b, c, d) in enumerate([(0.2, -0.15, 0.1, 0.3), (-0.3, 0.25, -0.2, 0.05)]):
        center = np.array([[1, 0, -20], [0, 1, -24], [0, 0, 1]], np.float64)
        m = np.array([[1 + a, b, 0], [c, 1 + d, 0], [0, 0, 1]], np.float64)
        back = np.array([[1, 0, 20 + k], [0, 1, 24 - k], [0, 0, 1]], np.float64)
        out.append((back @ m @ center)[:2].astype(np.float32))
    return out


def warp(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """warp_affine with per-sample matrices as an input and as an argument; fill value or clamping."""
    pipe = _pipeline(dali, seed=12)
    with pipe:
        transform = fn.external_source(source=_warp_matrices)
        images = photos(fn, types)
        pipe.set_outputs(transform,
                         fn.warp_affine(images, transform, size=(36, 44), interp_type=types.INTERP_LINEAR),
                         fn.warp_affine(images, matrix=transform, fill_value=200, size=(36, 44),
                                        interp_type=types.INTERP_NN),
                         fn.warp_affine(images, transform, interp_type=types.INTERP_LINEAR),
                         fn.warp_affine(images, transform, inverse_map=False, fill_value=0))
    return run(pipe, ["matrices", "linear_clamp", "nn_fill", "keep_size", "forward"])


def _volume() -> np.ndarray:
    volume = np.load(DATA / "volumes" / "anatomical.npy")[:, ::2, ::2].astype(np.float32)  # 25 x 21 x 17 x 1
    return volume / volume.max()


def transforms_3d(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """3-D resize of one axis (stretch, Lanczos), rotation about an axis, a 3-D affine warp (DHWC)."""
    pipe = _pipeline(dali, batch_size=1)
    with pipe:
        data = fn.external_source(source=lambda: [_volume()], layout="DHWC", dtype=types.FLOAT)
        resized = fn.resize(data, resize_z=20, mode="stretch", interp_type=types.INTERP_LANCZOS3)
        angle = fn.external_source(lambda: [np.float32(-15.0)])
        axis = fn.external_source(lambda: [np.float32([0.4, -0.8, 0.3])])
        rotated = fn.rotate(resized, angle=angle, axis=axis, interp_type=types.INTERP_LINEAR, fill_value=0)
        warped = fn.warp_affine(resized, size=(16, 18, 20), matrix=(1, 0.3, 0, -4, 0, 1, 0.2, -2, 0, 0, 1, 3),
                                interp_type=types.INTERP_LINEAR, fill_value=0)
        pipe.set_outputs(resized, rotated, warped)
    return run(pipe, ["resized", "rotated", "warped"])


def _cube(shape: tuple[int, int, int], size: tuple[int, int, int]) -> np.ndarray:
    """A hollow box's edges, coloured from front (green) to back (violet), in an empty DHWC volume."""
    vol = np.zeros((*shape, 3), np.uint8)
    lo = [(s - e) // 2 for s, e in zip(shape, size)]
    hi = [a + e - 1 for a, e in zip(lo, size)]
    for z in range(lo[0], hi[0] + 1):
        w = (z - lo[0]) / max(hi[0] - lo[0], 1)
        colour = (np.array([0x76, 0xB9, 0x00]) * (1 - w) + np.array([0x89, 0x46, 0xFF]) * w).astype(np.uint8)
        for y in (lo[1], hi[1]):
            for x in (lo[2], hi[2]):
                vol[z, y, x] = colour
        if z in (lo[0], hi[0]):
            vol[z, lo[1]:hi[1] + 1, (lo[2], hi[2])] = colour
            vol[z, (lo[1], hi[1]), lo[2]:hi[2] + 1] = colour
    return vol


def warp_3d(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """3-D rotate (axis as a constant tensor argument, and as a tuple) and warp_affine of uint8 volumes."""
    cubes = [_cube((24, 24, 24), (14, 14, 14)), _cube((28, 28, 28), (12, 18, 12))]

    class ExamplePipeline(dali.pipeline.Pipeline):  # type: ignore[misc,name-defined]
        def __init__(self, batch_size: int, num_threads: int, device_id: Any) -> None:
            super().__init__(batch_size, num_threads, device_id, seed=12)

        def define_graph(self):  # type: ignore[no-untyped-def]
            self.data = fn.external_source(name="cubes", layout="DHWC")
            axis = types.Constant([0.5, 1, 1])
            return (fn.rotate(self.data, angle=30, axis=axis, interp_type=types.INTERP_LINEAR),
                    fn.rotate(self.data, axis=(0.5, 1, 1), angle=30, interp_type=types.INTERP_LINEAR),
                    fn.warp_affine(self.data, size=(20, 22, 26), matrix=(1, 1, 0, -10, 0, 1, 0.2, -2, 0, 0, 1, 2),
                                   interp_type=types.INTERP_LINEAR))

        def iter_setup(self) -> None:
            self.feed_input(self.data, cubes)

    pipe = ExamplePipeline(batch_size=2, num_threads=1, device_id=None)
    return run(pipe, ["rotate_tensor_axis", "rotate_tuple_axis", "warp"])


def legacy_ops(dali: Any, fn: Any, types: Any) -> dict[str, Any]:
    """The legacy class API of the normalize / erase / warp / warp_3D tutorials: ``ops.X(**args)`` objects
    made in ``__init__``, called in ``define_graph``, an ``ops.ExternalSource`` fed in ``iter_setup``."""
    ops = importlib.import_module(dali.__name__ + ".ops")

    class LegacyPipeline(dali.pipeline.Pipeline):  # type: ignore[misc,name-defined]
        def __init__(self, batch_size: int, num_threads: int, device_id: Any) -> None:
            super().__init__(batch_size, num_threads, device_id, seed=12)
            self.input = ops.readers.File(files=[CAT, COFFEE])
            self.decode = ops.decoders.Image(device="cpu", output_type=types.RGB)
            self.crop = ops.Crop(crop=(40, 48))
            self.norm = ops.Normalize(device="cpu", axes=[0, 1], scale=40, shift=120, dtype=types.UINT8)
            self.erase = ops.Erase(device="cpu", anchor=[0.2, 0.3], shape=[0.4, 0.3], axis_names="HW",
                                   normalized_anchor=True, normalized_shape=True, fill_value=(0, 200, 50))
            self.transform_source = ops.ExternalSource()
            self.warp = ops.WarpAffine(device="cpu", fill_value=200, size=(30, 36), interp_type=types.INTERP_NN)
            self.rotate = ops.Rotate(device="cpu", angle=20, interp_type=types.INTERP_LINEAR)

        def define_graph(self):  # type: ignore[no-untyped-def]
            self.transform = self.transform_source()
            jpegs, labels = self.input()
            images = self.crop(self.decode(jpegs))
            return (self.norm(images), self.erase(images), self.warp(images, matrix=self.transform),
                    self.rotate(images), labels)

        def iter_setup(self) -> None:
            self.feed_input(self.transform, _warp_matrices())

    return run(LegacyPipeline(2, 1, None), ["normalize", "erase", "warp", "rotate", "labels"])


# --------------------------------------------------------------------- dynamic mode


def dynamic_mode(ndd: Any, types: Any) -> dict[str, Any]:
    """The dynamic-mode tutorials' calls: ``ndd.imread``, operators on a Tensor and on a Batch, ``.cpu()``."""
    image = ndd.crop(ndd.imread(CAT), crop=(40, 48))
    batch = ndd.crop(ndd.imread([CAT, COFFEE]), crop=(40, 48))
    out: dict[str, Any] = {
        "image": np.asarray(image.cpu()),
        "hsv": np.asarray(ndd.hsv(image, hue=120, saturation=1, value=0.4).cpu()),
        "brightness_contrast": np.asarray(ndd.brightness_contrast(image, brightness_shift=0.3, contrast=0.4,
                                                                  contrast_center=100).cpu()),
        "negative": np.asarray(ndd.brightness_contrast(image, contrast=1.5, brightness_shift=1, brightness=-1).cpu()),
        "ycbcr": np.asarray(ndd.color_space_conversion(image, image_type=types.RGB, output_type=types.YCbCr).cpu()),
        "gray": np.asarray(ndd.color_space_conversion(image, image_type=types.RGB, output_type=types.GRAY).cpu()),
        "flip": np.asarray(ndd.flip(image, vertical=1, horizontal=1).cpu()),
        "erase": np.asarray(ndd.erase(image, anchor=[0.3, 0.2], shape=[0.5, 0.6], normalized_anchor=True,
                                      normalized_shape=True, axis_names="HW").cpu()),
        "rotate": np.asarray(ndd.rotate(image, angle=30, interp_type=types.INTERP_LINEAR, fill_value=0).cpu()),
    }
    out["batch_hsv"] = [np.asarray(t) for t in ndd.hsv(batch, hue=45.0, saturation=0.2).cpu()]
    out["batch_water"] = [np.asarray(t) for t in ndd.water(batch).cpu()]
    return out


PIPELINE_CASES = {
    "expr_examples": expr_examples,
    "expr_type_promotions": expr_type_promotions,
    "expr_conditional_and_masking": expr_conditional_and_masking,
    "expr_blend_image": expr_blend_image,
    "reductions": reductions,
    "normalize": normalize,
    "erase": erase,
    "reinterpret": reinterpret,
    "tensor_join": tensor_join,
    "augmentation_gallery": augmentation_gallery,
    "brightness_contrast": brightness_contrast,
    "clahe_example": clahe_example,
    "color_space_conversion": color_space_conversion,
    "hsv": hsv,
    "interp_types": interp_types,
    "multiple_crops": multiple_crops,
    "resize": resize,
    "warp": warp,
    "3d_transforms": transforms_3d,
    "warp_3D": warp_3d,
    "legacy_ops": legacy_ops,
}


