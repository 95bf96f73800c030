"""Record DALI 2.4's CPU outputs for the augmentation operators' tests.

Runs with any Python that has DALI (``pip install nvidia-dali-cuda130``,
CPU pipelines with ``device_id=None``; no GPU needed), numpy and Pillow:

    python tests/dali_reference/record_augment.py [section ...]

Sections: color, filters, grid_mask, equalize, jpeg, reductions, auto_aug
(default: all). Writes ``tests/data/dali/augment/<section>.npz`` (and
``auto_aug.json.gz``: the op lists, magnitudes and policies of DALI's
``nvidia.dali.auto_aug``). The inputs are small crops of the real photos in
``tests/data/photos`` (``crops()``); the tests load the same crops from the
saved file, so they never need DALI.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from augment_cases import GAUSSIAN_BLURS, GRID_MASKS, LAPLACIANS, as_f32, as_i16
from PIL import Image

HERE = Path(__file__).resolve().parent
PHOTOS = HERE.parent / "data" / "photos"
OUT = HERE.parent / "data" / "dali" / "augment"

#: (file, y0, x0, h, w): odd and even sizes, three different photos.
CROPS = [("chelsea.png", 40, 100, 40, 48), ("astronaut.png", 30, 200, 29, 35), ("coffee.png", 100, 200, 20, 24)]


def crops() -> list[np.ndarray]:
    out = []
    for name, y0, x0, h, w in CROPS:
        with Image.open(PHOTOS / name) as im:
            rgb = np.asarray(im.convert("RGB"))
        out.append(np.ascontiguousarray(rgb[y0:y0 + h, x0:x0 + w]))
    return out


def run(build: Callable[..., Any], samples: list[np.ndarray], layout: str = "HWC", **extra: list[Any]) -> list[np.ndarray]:
    """Outputs of ``build(x, **extra_nodes)`` over ``samples`` in one DALI CPU batch."""
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=len(samples), num_threads=1, device_id=None, seed=1234)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source(lambda: samples, batch=True, layout=layout)
        nodes = {k: fn.external_source(_constant_source([np.asarray(a) for a in v]), batch=True) for k, v in extra.items()}
        return build(x, **nodes)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.array(out.at(i)) for i in range(len(samples))]


def _constant_source(batch: list[np.ndarray]) -> Callable[[], list[np.ndarray]]:
    return lambda: batch  # no parameter: DALI would pass the iteration number to one


def save(section: str, arrays: dict[str, np.ndarray]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / f"{section}.npz", **arrays)
    size = (OUT / f"{section}.npz").stat().st_size
    print(f"{section}: {len(arrays)} arrays, {size / 1024:.0f} KiB")


def put(result: dict[str, np.ndarray], key: str, outs: list[np.ndarray]) -> None:
    for i, o in enumerate(outs):
        result[f"{key}/{i}"] = o


# --- sections ----------------------------------------------------------------------------------------
def record_color(images: list[np.ndarray]) -> dict[str, np.ndarray]:
    from nvidia.dali import fn, types

    r: dict[str, np.ndarray] = {}
    i16, f32 = as_i16(images), as_f32(images)
    cases = {
        "brightness_1.3_0.1": lambda x: fn.brightness(x, brightness=1.3, brightness_shift=0.1),
        "brightness_0.5": lambda x: fn.brightness(x, brightness=0.5),
        "brightness_shift_-0.2_float": lambda x: fn.brightness(x, brightness_shift=-0.2, dtype=types.FLOAT),
        "contrast_1.5": lambda x: fn.contrast(x, contrast=1.5),
        "contrast_0.3_center_60": lambda x: fn.contrast(x, contrast=0.3, contrast_center=60.0),
        "contrast_2_float": lambda x: fn.contrast(x, contrast=2.0, dtype=types.FLOAT),
    }
    for name, build in cases.items():
        put(r, f"u8/{name}", run(build, images))
        put(r, f"i16/{name}", run(build, i16))
        put(r, f"f32/{name}", run(build, f32))
    # per-sample arguments
    b = [np.float32(v) for v in (0.4, 1.0, 1.7)]
    c = [np.float32(v) for v in (30.0, 128.0, 200.0)]
    put(r, "u8/per_sample", run(lambda x, b, c: fn.contrast(fn.brightness(x, brightness=b), contrast=1.4, contrast_center=c),
                                images, b=b, c=c))
    return r


def record_filters(images: list[np.ndarray]) -> dict[str, np.ndarray]:
    from nvidia.dali import fn, types

    r: dict[str, np.ndarray] = {}
    i16, f32 = as_i16(images), as_f32(images)
    gray = [np.ascontiguousarray(im[..., 1]) for im in images]
    for name, kw in GAUSSIAN_BLURS.items():
        put(r, f"gaussian_blur/u8/{name}", run(lambda x, kw=kw: fn.gaussian_blur(x, **kw), images))
        if name in ("sigma_0.7", "sigma_1_3", "window_7_sigma_4"):
            put(r, f"gaussian_blur/float/{name}", run(lambda x, kw=kw: fn.gaussian_blur(x, dtype=types.FLOAT, **kw), images))
    put(r, "gaussian_blur/f32/sigma_1.5", run(lambda x: fn.gaussian_blur(x, sigma=1.5), f32))
    put(r, "gaussian_blur/i16/sigma_1.5", run(lambda x: fn.gaussian_blur(x, sigma=1.5), i16))
    put(r, "gaussian_blur/gray/sigma_1.5", run(lambda x: fn.gaussian_blur(x, sigma=1.5), gray, layout="HW"))
    sig = [np.array(v, np.float32) for v in ((0.5,), (1.0, 2.5), (3.0,))]
    put(r, "gaussian_blur/u8/per_sample_sigma", run(lambda x, s: fn.gaussian_blur(x, sigma=s), images, s=sig))

    for name, kw in LAPLACIANS.items():
        put(r, f"laplacian/float/{name}", run(lambda x, kw=kw: fn.laplacian(x, dtype=types.FLOAT, **kw), images))
    put(r, "laplacian/u8/default", run(lambda x: fn.laplacian(x), images))
    put(r, "laplacian/u8/normalized_5", run(lambda x: fn.laplacian(x, window_size=5, normalized_kernel=True), images))
    put(r, "laplacian/i16/window_5", run(lambda x: fn.laplacian(x, window_size=5), i16))
    put(r, "laplacian/f32/window_3", run(lambda x: fn.laplacian(x), f32))

    rng = np.random.default_rng(5)
    k35 = rng.normal(size=(3, 5)).astype(np.float32)
    k44 = rng.normal(size=(4, 4)).astype(np.float32) / 4
    k_big = rng.random((9, 13)).astype(np.float32)
    k_big /= k_big.sum()
    sharpen = np.array([[-1, -1, -1], [-1, 9, -1], [-1, -1, -1]], np.float32)
    k35_avg = (np.abs(k35) / np.abs(k35).sum()).astype(np.float32)  # keeps uint8 results in range
    r["kernel/k35"], r["kernel/k44"], r["kernel/big"], r["kernel/sharpen"] = k35, k44, k_big, sharpen
    r["kernel/k35_avg"] = k35_avg

    def filt(kernel: np.ndarray, *fill: Any, **kw: Any) -> Callable[..., Any]:
        def build(x: Any) -> Any:
            consts = [types.Constant(kernel)] + [types.Constant(f) for f in fill]
            return fn.filter(x, *consts, **kw)
        return build

    put(r, "filter/float/k35_reflect_101", run(filt(k35, dtype=types.FLOAT), images))
    for border in ("reflect_101", "reflect_1001", "wrap", "clamp", "constant"):
        put(r, f"filter/u8/k35_avg_{border}", run(filt(k35_avg, border=border), images))
    put(r, "filter/u8/sharpen", run(filt(sharpen), images))
    put(r, "filter/float/k35_anchor_0_4", run(filt(k35, anchor=(0, 4), dtype=types.FLOAT), images))
    put(r, "filter/float/k35_valid", run(filt(k35, mode="valid", dtype=types.FLOAT), images))
    put(r, "filter/u8/k35_avg_fill_77", run(filt(k35_avg, np.uint8(77), border="constant"), images))
    put(r, "filter/float/k44", run(filt(k44, dtype=types.FLOAT), images))
    put(r, "filter/u8/big_reflect", run(filt(k_big), images))
    put(r, "filter/f32/k35", run(filt(k35), f32))
    put(r, "filter/i16/sharpen", run(filt(sharpen), i16))
    put(r, "filter/gray/k35", run(filt(k35, dtype=types.FLOAT), gray, layout="HW"))
    # per-sample filters
    ks = [k35, sharpen / 3, k_big]
    put(r, "filter/u8/per_sample", run(lambda x, k: fn.filter(x, k), images, k=ks))
    return r


def record_grid_mask(images: list[np.ndarray]) -> dict[str, np.ndarray]:
    from nvidia.dali import fn

    r: dict[str, np.ndarray] = {}
    for name, kw in GRID_MASKS.items():
        put(r, f"u8/{name}", run(lambda x, kw=kw: fn.grid_mask(x, **kw), images))
    f32 = as_f32(images)
    put(r, "f32/rotated_shifted", run(lambda x: fn.grid_mask(x, tile=20, ratio=0.5, angle=0.5, shift_x=3.5, shift_y=-7.2), f32))
    return r


def record_equalize(images: list[np.ndarray]) -> dict[str, np.ndarray]:
    from nvidia.dali import fn

    r: dict[str, np.ndarray] = {}
    put(r, "hwc", run(lambda x: fn.equalize(x), images))
    put(r, "hw", run(lambda x: fn.equalize(x), [np.ascontiguousarray(im[..., 0]) for im in images], layout="HW"))
    chw = [np.ascontiguousarray(im.transpose(2, 0, 1)) for im in images]
    put(r, "chw", run(lambda x: fn.equalize(x), chw, layout="CHW"))
    flat = [np.full((6, 7, 3), v, np.uint8) for v in (0, 37, 255)]
    put(r, "flat", run(lambda x: fn.equalize(x), flat))
    dark = [(im // 8).astype(np.uint8) for im in images]  # a narrow histogram
    put(r, "dark", run(lambda x: fn.equalize(x), dark))
    return r


def record_jpeg(images: list[np.ndarray]) -> dict[str, np.ndarray]:
    from nvidia.dali import fn

    r: dict[str, np.ndarray] = {}
    for q in (1, 10, 50, 95, 100):
        put(r, f"q{q}", run(lambda x, q=q: fn.jpeg_compression_distortion(x, quality=q), images))
    put(r, "default", run(lambda x: fn.jpeg_compression_distortion(x), images))
    qs = [np.int32(v) for v in (5, 30, 80)]
    put(r, "per_sample", run(lambda x, q: fn.jpeg_compression_distortion(x, quality=q), images, q=qs))
    return r


def record_reductions(images: list[np.ndarray]) -> dict[str, np.ndarray]:
    from nvidia.dali import fn, types

    r: dict[str, np.ndarray] = {}
    i16, f32 = as_i16(images), as_f32(images)
    axes_cases: dict[str, dict[str, Any]] = {
        "all": {}, "HW": dict(axis_names="HW"), "C": dict(axis_names="C"), "ax0": dict(axes=0),
        "ax_-1_keep": dict(axes=-1, keep_dims=True), "HW_keep": dict(axis_names="HW", keep_dims=True),
        "ax_0_2": dict(axes=(0, 2)),
    }
    for red in ("min", "max", "sum", "mean", "mean_square", "rms"):
        for data_name, data in (("u8", images), ("i16", i16), ("f32", f32)):
            for case, kw in axes_cases.items():
                put(r, f"{red}/{data_name}/{case}", run(lambda x, red=red, kw=kw: getattr(fn.reductions, red)(x, **kw), data))
    for red in ("sum", "mean", "rms"):
        put(r, f"{red}/u8/HW_dtype_float", run(lambda x, red=red: getattr(fn.reductions, red)(x, axis_names="HW", dtype=types.FLOAT), images))
        put(r, f"{red}/u8/HW_dtype_u8", run(lambda x, red=red: getattr(fn.reductions, red)(x, axis_names="HW", dtype=types.UINT8), images))
    for red in ("min", "sum", "mean"):
        put(r, f"{red}/u8/none", run(lambda x, red=red: getattr(fn.reductions, red)(x, axes=()), images))
    put(r, "mean_square/u8/HW_dtype_u64", run(lambda x: fn.reductions.mean_square(x, axis_names="HW", dtype=types.UINT64), images))
    small = [np.array([[1, 2, 2]], np.uint8), np.array([[3, 4]], np.uint8), np.array([[250, 10, 0, 1]], np.uint8)]
    for red in ("mean", "rms"):
        put(r, f"{red}/small/dtype_u8", run(lambda x, red=red: getattr(fn.reductions, red)(x, dtype=types.UINT8), small, layout="HW"))
    r.update({f"in_small/{i}": s for i, s in enumerate(small)})
    for red in ("std_dev", "variance"):
        for data_name, data in (("u8", images), ("i16", i16), ("f32", f32)):
            put(r, f"{red}/{data_name}/all", run(lambda x, red=red: getattr(fn.reductions, red)(x, fn.reductions.mean(x)), data))
            put(r, f"{red}/{data_name}/HW", run(lambda x, red=red: getattr(fn.reductions, red)(
                x, fn.reductions.mean(x, axis_names="HW"), axis_names="HW"), data))
            put(r, f"{red}/{data_name}/HW_ddof1_keep", run(lambda x, red=red: getattr(fn.reductions, red)(
                x, fn.reductions.mean(x, axis_names="HW", keep_dims=True), axis_names="HW", ddof=1, keep_dims=True), data))
        # a mean that is not the data's own: the reduction uses the given one
        put(r, f"{red}/u8/HW_mean_100", run(lambda x, m, red=red: getattr(fn.reductions, red)(x, m, axis_names="HW"),
                                            images, m=[np.full(3, 100.0, np.float32)] * len(images)))
    return r


SECTIONS: dict[str, Callable[[list[np.ndarray]], dict[str, np.ndarray]]] = {
    "color": record_color,
    "filters": record_filters,
    "grid_mask": record_grid_mask,
    "equalize": record_equalize,
    "jpeg": record_jpeg,
    "reductions": record_reductions,
}


def main(argv: list[str]) -> None:
    import nvidia.dali as dali

    names = argv or [*SECTIONS, "auto_aug"]
    images = crops()
    for name in names:
        if name == "auto_aug":
            record_auto_aug(images)
            continue
        result = SECTIONS[name](images)
        put(result, "in", images)
        result["dali_version"] = np.array(dali.__version__)
        save(name, result)


def _jsonable(value: Any) -> Any:
    arr = np.asarray(value)
    return {"dtype": arr.dtype.name, "value": arr.tolist()}


def _describe_augmentation(aug: Any, bins: int) -> dict[str, Any]:
    """An augmentation as the tests compare it: name, op, magnitudes, parameters per bin."""
    entry: dict[str, Any] = {
        "name": aug.name, "op": aug.op.__name__, "randomly_negate": aug.randomly_negate,
        "mag_range": None if aug.mag_range is None else [float(v) for v in aug.mag_range],
    }
    mags = aug._get_magnitudes(bins)
    if mags is not None:
        entry["magnitudes"] = [float(m) for m in mags]
        entry["params"] = [_jsonable(aug._map_mag_to_param(m)) for m in mags]
        if aug.randomly_negate:
            entry["negated_params"] = [_jsonable(aug._map_mag_to_param(-m)) for m in mags]
    return entry


def record_auto_aug(images: list[np.ndarray]) -> None:
    """Op lists, magnitudes and policies of DALI's auto_aug (JSON), and each augmentation's outputs."""
    import nvidia.dali as dali
    from nvidia.dali.auto_aug import augmentations as a
    from nvidia.dali.auto_aug import auto_augment, rand_augment, trivial_augment

    tables: dict[str, Any] = {"dali_version": dali.__version__, "suites": {}, "policies": {}}
    suites = {
        "rand_augment": lambda s: rand_augment.get_rand_augment_suite(use_shape=s),
        "rand_augment_non_monotonic": lambda s: rand_augment.get_rand_augment_non_monotonic_suite(use_shape=s),
        "trivial_augment_wide": lambda s: trivial_augment.get_trivial_augment_wide_suite(use_shape=s),
    }
    for name, make in suites.items():
        for use_shape in (False, True):
            tables["suites"][f"{name}/use_shape={use_shape}"] = [_describe_augmentation(x, 31) for x in make(use_shape)]
    tables["suites"]["rand_augment/max_translate_abs=(20,40)"] = [
        _describe_augmentation(x, 31) for x in rand_augment.get_rand_augment_suite(max_translate_abs=(20, 40))]
    policies = {
        "image_net": auto_augment.get_image_net_policy, "reduced_image_net": auto_augment.get_reduced_image_net_policy,
        "svhn": auto_augment.get_svhn_policy, "reduced_cifar10": auto_augment.get_reduced_cifar10_policy,
    }
    for name, make in policies.items():
        policy = make()
        tables["policies"][name] = {
            "name": policy.name, "num_magnitude_bins": policy.num_magnitude_bins,
            "sub_policies": [[[aug.name, p, mag] for aug, p, mag in sub] for sub in policy.sub_policies],
            "augmentations": {k: _describe_augmentation(v, policy.num_magnitude_bins)
                              for k, v in policy.augmentations.items()},
        }
    OUT.mkdir(parents=True, exist_ok=True)
    with gzip.open(OUT / "auto_aug.json.gz", "wt") as f:  # 340 KB of JSON, 34 KB compressed
        f.write(json.dumps(tables, separators=(",", ":")) + "\n")

    # Each augmentation of the module on the photo crops, for a few magnitude bins of 11, sign fixed.
    r: dict[str, np.ndarray] = {}
    cases = {
        "shear_x": a.shear_x, "shear_y": a.shear_y, "rotate": a.rotate,
        "translate_x_no_shape": a.translate_x_no_shape, "translate_y_no_shape": a.translate_y_no_shape,
        "brightness": a.brightness, "contrast": a.contrast, "color": a.color, "sharpness": a.sharpness,
        "posterize": a.posterize, "solarize": a.solarize, "solarize_add": a.solarize_add,
    }
    for name, aug in cases.items():
        for sign, bins in (("+", (0, 4, 10)), ("-", (7,))):
            if sign == "-" and not aug.randomly_negate:
                continue
            lo, hi = aug.mag_range
            fixed = aug.augmentation(mag_range=(lo, hi) if sign == "+" else (-lo, -hi), randomly_negate=False)
            for b in bins:
                put(r, f"{name}/{sign}{b}", run(lambda x, fixed=fixed, b=b: fixed(
                    x, magnitude_bin=b, num_magnitude_bins=11, fill_value=128), images))
    for name in ("translate_x", "translate_y"):
        fixed = getattr(a, name).augmentation(mag_range=(0, 0.5), randomly_negate=False)
        put(r, f"{name}/+6", run(lambda x, fixed=fixed: fixed(x, magnitude_bin=6, num_magnitude_bins=11,
                                                              shape=x.shape(), fill_value=77), images))
    for name, aug in (("invert", a.invert), ("equalize", a.equalize), ("auto_contrast", a.auto_contrast),
                      ("identity", a.identity)):
        put(r, name, run(lambda x, aug=aug: aug(x), images))
    rot = a.rotate.augmentation(randomly_negate=False)
    put(r, "rotate/nn_fill_none", run(lambda x: rot(x, magnitude_bin=9, num_magnitude_bins=11, fill_value=None,
                                                    interp_type=dali.types.INTERP_NN), images))
    dark = [(im // 3 + 40).astype(np.uint8) for im in images]
    put(r, "auto_contrast/dark", run(lambda x: a.auto_contrast(x), dark))
    put(r, "in", images)
    r["dali_version"] = np.array(dali.__version__)
    save("auto_aug", r)


if __name__ == "__main__":
    main(sys.argv[1:])
