"""DALI's classification and SSD recipes with their operators on the GPU, against the same pipelines on the CPU.

Decoding stays on the CPU in both (mixed decoding is not bit-identical to the
CPU decoder); the first operator after it (``cast`` to the same type) moves
the batch to the GPU in one pipeline and stays on the CPU in the other, so
both graphs have the same nodes and the same random draws. Every later
operator runs where its input is. Outputs: bit-identical, except
``normalize`` (cupy's float64 reductions: 1 ulp of float32) and SSD's
encoded offsets (not used here).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dali_reference.record_detection import ANCHORS, COCO_ANNOTATIONS, DATA
from helpers import GOOD_JPEGS

import streamflow as sf
from streamflow import fn, types

pytestmark = pytest.mark.gpu


def _run(pipe_fn, device: str) -> list[list[np.ndarray]]:
    pipe = pipe_fn(device, batch_size=4, num_threads=2, device_id=0 if device == "gpu" else None, seed=5)
    with pipe:
        outs = pipe.run()
    return [[np.asarray(t.as_cpu().at(i)) for i in range(len(t))] for t in outs]


@sf.pipeline_def
def classification(device: str, files: list[str]):  # type: ignore[no-untyped-def]
    jpegs, labels = fn.readers.file(files=files, labels=list(range(len(files))))
    images = fn.decoders.image(jpegs, device="cpu")
    images = fn.cast(images, dtype=types.UINT8, device=device)  # the move to the GPU (or not)
    images = fn.random_resized_crop(images, size=(160, 144))
    images = fn.hsv(images, hue=fn.random.uniform(range=[-30, 30]), saturation=fn.random.uniform(range=[0.5, 1.5]))
    images = fn.rotate(images, angle=fn.random.uniform(range=[-10, 10]), fill_value=0)
    images = fn.warp_affine(images, matrix=[1.1, 0.1, -3.0, -0.05, 0.95, 2.0], size=(128, 128))
    images = fn.color_space_conversion(images, image_type=types.RGB, output_type=types.YCbCr)
    flt = fn.normalize(images, axes=(0, 1))
    images = fn.transpose(images, perm=[2, 0, 1])
    return images, flt, labels


def test_classification_recipe_on_the_gpu_equals_the_cpu() -> None:
    files = [str(p) for p in GOOD_JPEGS[:4]]
    gpu = _run(lambda device, **kw: classification(device, files, **kw), "gpu")
    cpu = _run(lambda device, **kw: classification(device, files, **kw), "cpu")
    for g, c in zip(gpu[0], cpu[0]):
        np.testing.assert_array_equal(g, c)
    for g, c in zip(gpu[1], cpu[1]):
        np.testing.assert_array_max_ulp(g, c, maxulp=1)


@sf.pipeline_def
def ssd(device: str):  # type: ignore[no-untyped-def]
    images, bboxes, labels = fn.readers.coco(file_root=str(DATA), annotations_file=str(COCO_ANNOTATIONS),
                                             skip_empty=True, ratio=True, ltrb=True)
    images = fn.decoders.image(images, device="cpu", output_type=types.RGB)
    images = fn.cast(images, dtype=types.UINT8, device=device)
    bboxes = fn.cast(bboxes, dtype=types.FLOAT, device=device)
    labels = fn.cast(labels, dtype=types.INT32, device=device)
    flip = fn.random.coin_flip(probability=0.5)
    images = fn.resize(images, resize_x=300, resize_y=300, min_filter=types.INTERP_TRIANGULAR)
    images = fn.hsv(images, dtype=types.FLOAT, hue=fn.random.uniform(range=[-0.5, 0.5]),
                    saturation=fn.random.uniform(range=[0.5, 1.5]))
    images = fn.brightness_contrast(images, contrast_center=128, dtype=types.UINT8,
                                    brightness=fn.random.uniform(range=[0.875, 1.125]),
                                    contrast=fn.random.uniform(range=[0.5, 1.5]))
    bboxes = fn.bb_flip(bboxes, ltrb=True, horizontal=flip)
    images = fn.crop_mirror_normalize(images, crop=(300, 300), mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                      std=[0.229 * 255, 0.224 * 255, 0.225 * 255], mirror=flip,
                                      dtype=types.FLOAT, output_layout="CHW")
    bboxes, labels = fn.box_encoder(bboxes, labels, criteria=0.5, anchors=ANCHORS)
    return images, bboxes, labels


def test_ssd_recipe_on_the_gpu_equals_the_cpu() -> None:
    assert Path(COCO_ANNOTATIONS).exists()
    gpu, cpu = _run(ssd, "gpu"), _run(ssd, "cpu")
    for out in range(3):
        for g, c in zip(gpu[out], cpu[out]):
            np.testing.assert_array_equal(g, c)
