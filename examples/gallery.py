"""Before/after pictures of each augmentation on a real photo: writes docs/gallery/.

    python examples/gallery.py [--photo PATH] [--out docs/gallery] [--width 256]

Every picture is made by a streamflow pipeline (``fn.external_source`` feeding
the operator), from the same photo reduced to ``--width`` pixels. Geometry
operators (``fn.rotate``, ``fn.random_resized_crop``, ...), filters, noise
and the automatic augmentations (``streamflow.auto_aug``) are included. Needs
Pillow (to read and write PNGs).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import streamflow as sf
from streamflow import fn

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PHOTO = ROOT / "streamflow" / "demo" / "images" / "cats" / "chelsea.png"


def to_display(out: np.ndarray) -> np.ndarray:
    """uint8 HWC for a PNG (float outputs are rescaled to 0..255, gray kept 1-channel)."""
    if out.dtype != np.uint8:
        lo, hi = float(out.min()), float(out.max())
        out = ((out - lo) / (hi - lo or 1.0) * 255.0).round().astype(np.uint8)
    return out[..., 0] if out.ndim == 3 and out.shape[-1] == 1 else out


def augmentations() -> list[tuple[str, str, Callable[[Any], Any]]]:
    """(file stem, caption, build) for every picture."""
    items: list[tuple[str, str, Callable[[Any], Any]]] = [
        ("hue_+60", "`fn.hue(hue=60)`", lambda x: fn.hue(x, hue=60.0)),
        ("hue_-60", "`fn.hue(hue=-60)`", lambda x: fn.hue(x, hue=-60.0)),
        ("saturation_0", "`fn.saturation(saturation=0)`", lambda x: fn.saturation(x, saturation=0.0)),
        ("saturation_2", "`fn.saturation(saturation=2)`", lambda x: fn.saturation(x, saturation=2.0)),
        ("brightness_0.6", "`fn.brightness_contrast(brightness=0.6)`", lambda x: fn.brightness_contrast(x, brightness=0.6)),
        ("brightness_shift", "`fn.brightness_contrast(brightness_shift=0.2)`",
         lambda x: fn.brightness_contrast(x, brightness_shift=0.2)),
        ("contrast_0.5", "`fn.brightness_contrast(contrast=0.5)`", lambda x: fn.brightness_contrast(x, contrast=0.5)),
        ("contrast_1.8", "`fn.brightness_contrast(contrast=1.8)`", lambda x: fn.brightness_contrast(x, contrast=1.8)),
        ("color_twist", "`fn.color_twist(hue=30, saturation=1.4, contrast=1.2, brightness=0.9)`",
         lambda x: fn.color_twist(x, hue=30.0, saturation=1.4, contrast=1.2, brightness=0.9)),
        ("hsv", "`fn.hsv(hue=-30, saturation=0.6, value=1.2)`", lambda x: fn.hsv(x, hue=-30.0, saturation=0.6, value=1.2)),
        ("color_twist_random", "`fn.color_twist(hue=fn.random.uniform(range=[-45, 45]))` (seeded)",
         lambda x: fn.color_twist(x, hue=fn.random.uniform(range=[-45.0, 45.0]))),
        ("gray", "`fn.color_space_conversion(image_type=RGB, output_type=GRAY)`",
         lambda x: fn.color_space_conversion(x, image_type="rgb", output_type="gray")),
        ("bgr", "`fn.color_space_conversion(image_type=RGB, output_type=BGR)` (shown as if RGB)",
         lambda x: fn.color_space_conversion(x, image_type="rgb", output_type="bgr")),
        ("ycbcr", "`fn.color_space_conversion(image_type=RGB, output_type=YCbCr)` (Y, Cb, Cr shown as R, G, B)",
         lambda x: fn.color_space_conversion(x, image_type="rgb", output_type="ycbcr")),
        ("normalize", "`fn.normalize(axis_names=\"HW\")` (float, rescaled for display)",
         lambda x: fn.normalize(x, axis_names="HW")),
        ("flip", "`fn.flip(horizontal=1)`", lambda x: fn.flip(x, horizontal=1)),
    ]
    items += [
        ("rotate_30", "`fn.rotate(angle=30, fill_value=0)`", lambda x: fn.rotate(x, angle=30.0, fill_value=0)),
        ("rotate_30_keep", "`fn.rotate(angle=30, keep_size=True)`",
         lambda x: fn.rotate(x, angle=30.0, keep_size=True, fill_value=0)),
        ("random_resized_crop", "`fn.random_resized_crop(size=(160, 160))` (seeded)",
         lambda x: fn.random_resized_crop(x, size=(160, 160))),
    ]
    items += _augment_gallery()
    return items


def _augment_gallery() -> list[tuple[str, str, Callable[[Any], Any]]]:
    """Blur, noise, masks, JPEG artifacts, equalization and the automatic augmentations."""
    from streamflow.auto_aug import augmentations as aa
    from streamflow.auto_aug import auto_augment, rand_augment, trivial_augment

    sharpen = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], dtype=np.float32)

    def fixed(aug: Any, magnitude_bin: int) -> Callable[[Any], Any]:
        steady = aug.augmentation(randomly_negate=False)  # the positive magnitude, for a steady picture
        return lambda x: steady(x, magnitude_bin=magnitude_bin, num_magnitude_bins=11)

    return [
        ("brightness_1.4", "`fn.brightness(brightness=1.4)`", lambda x: fn.brightness(x, brightness=1.4)),
        ("contrast_0.4", "`fn.contrast(contrast=0.4)`", lambda x: fn.contrast(x, contrast=0.4)),
        ("gaussian_blur_3", "`fn.gaussian_blur(sigma=3)`", lambda x: fn.gaussian_blur(x, sigma=3.0)),
        ("laplacian", "`fn.laplacian(window_size=5, dtype=FLOAT)` (rescaled for display)",
         lambda x: fn.laplacian(fn.color_space_conversion(x, image_type="rgb", output_type="gray"), window_size=5,
                                dtype=sf.types.FLOAT)),
        ("filter_sharpen", "`fn.filter(x, [[0, -1, 0], [-1, 5, -1], [0, -1, 0]])`", lambda x: fn.filter(x, sharpen)),
        ("median_blur_7", "`fn.experimental.median_blur(window_size=7)`",
         lambda x: fn.experimental.median_blur(x, window_size=7)),
        ("noise_gaussian", "`fn.noise.gaussian(stddev=25)` (seeded)", lambda x: fn.noise.gaussian(x, stddev=25.0)),
        ("noise_salt_and_pepper", "`fn.noise.salt_and_pepper(prob=0.1)` (seeded)",
         lambda x: fn.noise.salt_and_pepper(x, prob=0.1)),
        ("noise_shot", "`fn.noise.shot(factor=12)` (seeded)", lambda x: fn.noise.shot(x, factor=12.0)),
        ("grid_mask", "`fn.grid_mask(tile=48, ratio=0.4, angle=0.5)`",
         lambda x: fn.grid_mask(x, tile=48, ratio=0.4, angle=0.5)),
        ("jpeg_q5", "`fn.jpeg_compression_distortion(quality=5)`",
         lambda x: fn.jpeg_compression_distortion(x, quality=5)),
        ("equalize", "`fn.equalize()`", fn.equalize),
        ("aa_shear_x", "`auto_aug.augmentations.shear_x` (bin 8 of 11)", fixed(aa.shear_x, 8)),
        ("aa_translate_y", "`auto_aug.augmentations.translate_y_no_shape` (bin 4 of 11)",
         fixed(aa.translate_y_no_shape, 4)),
        ("aa_posterize", "`auto_aug.augmentations.posterize` (bin 10 of 11: 4 bits)", fixed(aa.posterize, 10)),
        ("aa_solarize", "`auto_aug.augmentations.solarize` (bin 5 of 11: threshold 128)", fixed(aa.solarize, 5)),
        ("aa_sharpness", "`auto_aug.augmentations.sharpness` (bin 10 of 11)", fixed(aa.sharpness, 10)),
        ("aa_auto_contrast", "`auto_aug.augmentations.auto_contrast`", aa.auto_contrast),
        ("aa_invert", "`auto_aug.augmentations.invert`", aa.invert),
        ("auto_augment", "`auto_augment.auto_augment_image_net()` (seeded: one draw)",
         lambda x: auto_augment.auto_augment_image_net(x, seed=3)),
        ("rand_augment", "`rand_augment.rand_augment(n=2, m=15)` (seeded: one draw)",
         lambda x: rand_augment.rand_augment(x, n=2, m=15, seed=1)),
        ("trivial_augment_wide", "`trivial_augment.trivial_augment_wide()` (seeded: one draw)",
         lambda x: trivial_augment.trivial_augment_wide(x, seed=4)),
    ]


def run_all(image: np.ndarray, items: list[tuple[str, str, Callable[[Any], Any]]]) -> list[np.ndarray]:
    @sf.pipeline_def(batch_size=1, num_threads=1, seed=7)
    def pipe():
        x = fn.external_source([[image]])
        return tuple(build(x) for _, _, build in items)

    with pipe() as p:
        return [np.asarray(t.at(0)) for t in p.run()]


def main() -> None:
    from PIL import Image

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--photo", type=Path, default=DEFAULT_PHOTO)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "gallery")
    parser.add_argument("--width", type=int, default=256)
    args = parser.parse_args()

    with Image.open(args.photo) as im:
        im = im.convert("RGB")
        height = round(im.height * args.width / im.width)
        im = im.resize((args.width, height), Image.Resampling.LANCZOS)
    image = np.asarray(im)
    args.out.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(args.out / "original.png", optimize=True)

    items = augmentations()
    outputs = run_all(image, items)
    rows = []
    for (stem, caption, _), out in zip(items, outputs):
        Image.fromarray(to_display(out)).save(args.out / f"{stem}.png", optimize=True)
        rows.append(f"| {caption} | ![{stem}]({stem}.png) |")

    try:
        photo_name = args.photo.resolve().relative_to(ROOT)
    except ValueError:
        photo_name = args.photo.name
    page = [
        "# Augmentation gallery",
        "",
        f"What each operator does to a real photo (`{photo_name}`, reduced to {args.width} px wide; "
        "credits in `streamflow/demo/ATTRIBUTION.md`). Made by `python examples/gallery.py`; "
        "every picture is the output of a streamflow pipeline (CPU), seed 7.",
        "",
        "| original |",
        "|---|",
        "| ![original](original.png) |",
        "",
        "| operator | after |",
        "|---|---|",
        *rows,
        "",
    ]
    (args.out / "README.md").write_text("\n".join(page))
    total = sum(f.stat().st_size for f in args.out.glob("*.png"))
    print(f"wrote {len(rows) + 1} pictures ({total / 1e6:.2f} MB) and README.md to {args.out}")


if __name__ == "__main__":
    main()
