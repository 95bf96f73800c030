"""Fused decode + crop: image_random_crop, image_crop, image_slice.

Reference: the full decode (``decoders.image``) sliced at the expected window,
exactly; the windows come from the crop / slice / random-draw formulas.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn, rng
from streamflow.codecs import ImageDecoder
from streamflow.fn import decoders
from streamflow.ops.crop import crop_window
from streamflow.ops.decoder_crop import slice_window
from streamflow.ops.random_crop import RandomCropParams, draw_crop_window

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = [
    DATA / "photos" / "rocket.jpg",
    DATA / "jpeg-quirks" / "hopper_orientation_6.jpg",  # EXIF-rotated: windows in oriented coordinates
    DATA / "jpeg-quirks" / "hopper_orientation_3.jpg",
    DATA / "photos" / "chelsea.png",
]


@pytest.fixture(scope="module")
def encoded() -> list[np.ndarray]:
    return [np.frombuffer(f.read_bytes(), dtype=np.uint8) for f in FILES]


@pytest.fixture(scope="module")
def full(encoded) -> list[np.ndarray]:
    dec = ImageDecoder()
    return [dec.decode(e) for e in encoded]


def run(encoded, build, **kw):
    @sf.pipeline_def(batch_size=len(encoded), num_threads=2, seed=11, **kw)
    def pipe():
        return build(fn.external_source([list(encoded)]))

    with pipe() as p:
        return p.run()


@pytest.mark.parametrize("crop,pos", [((64, 80), (0.5, 0.5)), ((100, 33), (0.0, 1.0)), ((17, 120), (0.3, 0.77))])
def test_image_crop_equals_decode_then_crop(encoded, full, crop, pos) -> None:
    out = run(encoded, lambda x: (
        decoders.image_crop(x, crop=crop, crop_pos_y=pos[0], crop_pos_x=pos[1]),
        fn.crop(fn.decoders.image(x), crop=crop, crop_pos_y=pos[0], crop_pos_x=pos[1]),
    ))
    for i, img in enumerate(full):
        y0, x0, h, w = crop_window(*img.shape[:2], *crop, pos[0], pos[1])
        assert np.array_equal(out[0].at(i), img[y0 : y0 + h, x0 : x0 + w])
        assert np.array_equal(out[0].at(i), out[1].at(i))


def test_image_crop_per_sample_position_and_gray(encoded, full) -> None:
    pos = [np.float32(v) for v in (0.0, 0.25, 1.0, 0.6)]

    @sf.pipeline_def(batch_size=4, num_threads=1, seed=0)
    def pipe():
        x = fn.external_source([list(encoded)])
        px = fn.external_source([pos])
        return decoders.image_crop(x, crop_h=40, crop_w=50, crop_pos_x=px), \
            decoders.image_crop(x, crop=(30, 30), output_type="gray")

    with pipe() as p:
        rgb, gray = p.run()
    dec_gray = ImageDecoder(output_type="gray")
    for i, img in enumerate(full):
        y0, x0, h, w = crop_window(*img.shape[:2], 40, 50, 0.5, float(pos[i]))
        assert np.array_equal(rgb.at(i), img[y0 : y0 + h, x0 : x0 + w])
        g = dec_gray.decode(encoded[i])
        y0, x0, h, w = crop_window(*g.shape[:2], 30, 30)
        assert np.array_equal(gray.at(i), g[y0 : y0 + h, x0 : x0 + w])


def test_slice_window_rounding_and_axes() -> None:
    # (x, y) order by default: anchor (0.25, 0.5), shape (0.5, 0.25) of 100x200 (HxW).
    assert slice_window(100, 200, [0.25, 0.5], [0.5, 0.25]) == (50, 50, 25, 100)
    assert slice_window(100, 200, [0.25, 0.5], [0.5, 0.25], axes=(0, 1)) == (25, 100, 50, 50)
    # Halves away from zero; end rounded on its own: 0.5 * 5 = 2.5 -> 3, 1.0 * 5 -> 5.
    assert slice_window(5, 5, [0.5, 0.5], [0.5, 0.5]) == (3, 3, 2, 2)
    # Integer values are pixels whatever the flags; float with normalized_*=False too.
    assert slice_window(100, 200, np.array([10, 20]), np.array([30, 40])) == (20, 10, 40, 30)
    assert slice_window(100, 200, [10.0, 20.0], [0.5, 0.5], normalized_anchor=False) == (20, 10, 50, 100)
    with pytest.raises(ValueError, match="2 values"):
        slice_window(10, 10, [0.1], [0.5, 0.5])


def test_image_slice_equals_decode_then_slice(encoded, full) -> None:
    anchors = [np.array(v, dtype=np.float32) for v in ([0.1, 0.2], [0.0, 0.0], [0.5, 0.25], [0.33, 0.41])]
    shapes = [np.array(v, dtype=np.float32) for v in ([0.5, 0.5], [1.0, 1.0], [0.5, 0.75], [0.2, 0.3])]

    @sf.pipeline_def(batch_size=4, num_threads=2, seed=0)
    def pipe():
        x = fn.external_source([list(encoded)])
        a = fn.external_source([anchors])
        s = fn.external_source([shapes])
        return (decoders.image_slice(x, a, s), decoders.image_slice(x, [0.1, 0.2], [0.3, 0.4], axis_names="HW"),
                decoders.image_slice(x, [5, 7], [20, 11]))

    with pipe() as p:
        xy, hw, px = p.run()
    for i, img in enumerate(full):
        H, W = img.shape[:2]
        y0, x0, h, w = slice_window(H, W, anchors[i], shapes[i])
        assert (h, w) == xy.at(i).shape[:2]
        assert np.array_equal(xy.at(i), img[y0 : y0 + h, x0 : x0 + w])
        y0, x0, h, w = slice_window(H, W, [0.1, 0.2], [0.3, 0.4], axes=(0, 1))
        assert np.array_equal(hw.at(i), img[y0 : y0 + h, x0 : x0 + w])
        assert np.array_equal(px.at(i), img[7:18, 5:25])  # x=5, y=7, w=20, h=11


def test_image_random_crop_equals_the_drawn_window(encoded, full) -> None:
    out = run(encoded * 2, lambda x: decoders.image_random_crop(x, seed=99, random_area=[0.1, 0.5]))
    params = RandomCropParams.from_args("t", [0.1, 0.5])
    key = rng.RandomKey(99, 0x5C0F)
    windows = set()
    for i, img in enumerate(full * 2):
        d = draw_crop_window(*img.shape[:2], params, rng.sample_generator(key, out.epoch, int(out.sample_ids[i])))
        assert np.array_equal(out[0].at(i), img[d.y0 : d.y0 + d.h, d.x0 : d.x0 + d.w])
        windows.add(d.window)
    assert len(windows) == 8  # every sample draws its own window


def test_image_random_crop_defaults_are_deterministic(encoded) -> None:
    a = run(encoded, lambda x: decoders.image_random_crop(x))
    b = run(encoded, lambda x: decoders.image_random_crop(x))
    assert all(np.array_equal(a[0].at(i), b[0].at(i)) for i in range(len(encoded)))


def _folder_with_bad_file(tmp_path: Path) -> Path:
    root = tmp_path / "imgs"
    (root / "a").mkdir(parents=True)
    shutil.copy(FILES[0], root / "a" / "good.jpg")
    shutil.copy(DATA / "jpeg-quirks" / "truncated_jpeg.jpg", root / "a" / "bad.jpg")
    (root / "a" / "junk.jpg").write_bytes(b"\xff\xd8\xff" + b"\x00" * 50)
    return root


@pytest.mark.parametrize("build", [
    lambda x: decoders.image_random_crop(x),
    lambda x: decoders.image_crop(x, crop=(10, 10)),
    lambda x: decoders.image_slice(x, [0.1, 0.1], [0.5, 0.5]),
])
def test_errors_name_the_file(tmp_path, build) -> None:
    root = _folder_with_bad_file(tmp_path)

    @sf.pipeline_def(batch_size=3, num_threads=1, seed=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=str(root))
        return build(jpegs)

    with pipe() as p, pytest.raises(sf.PipelineError) as ei:
        p.run()
    assert "bad.jpg" in str(ei.value) or "junk.jpg" in str(ei.value)

    @sf.pipeline_def(batch_size=3, num_threads=1, seed=0, on_error="skip")
    def skipping():
        jpegs, _ = fn.readers.file(file_root=str(root))
        return build(jpegs)

    with skipping() as p:
        p.run()
        reasons = " ".join(str(s) for s in p.stats().skipped)
    assert "bad.jpg" in reasons and "junk.jpg" in reasons


def test_window_outside_the_image_names_the_file(tmp_path) -> None:
    root = tmp_path / "one" / "a"
    root.mkdir(parents=True)
    shutil.copy(FILES[0], root / "rocket.jpg")

    @sf.pipeline_def(batch_size=1, num_threads=1, seed=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=str(root.parent))
        return decoders.image_crop(jpegs, crop=(5000, 10))

    with pipe() as p, pytest.raises(sf.PipelineError, match=r"rocket\.jpg.*does not fit|does not fit.*rocket\.jpg"):
        p.run()


def test_argument_errors() -> None:
    src = fn.external_source([[]])
    with pytest.raises(sf.PipelineDefinitionError, match="window size"):
        decoders.image_crop(src)
    with pytest.raises(sf.PipelineDefinitionError, match="random_area"):
        decoders.image_random_crop(src, random_area=[0.9, 0.1])
    with pytest.raises(sf.PipelineDefinitionError, match="2 values"):
        decoders.image_slice(src, [0.1, 0.2, 0.3], [0.5, 0.5])
    with pytest.raises(sf.PipelineDefinitionError, match="axis_names"):
        decoders.image_slice(src, [0.1, 0.2], [0.5, 0.5], axis_names="XY")
