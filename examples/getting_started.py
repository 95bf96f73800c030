"""Getting started with streamflow: the classic walk, on real photos.

1. a simple pipeline: read files, decode them;
2. the same, shuffled;
3. augmented: random resized view, random mirror, normalization;
4. rotated: by a fixed angle, then by a random angle per image;
5. mixed decoding (``device="mixed"``) with ``device_id="auto"``: on the GPU
   when there is one, on the CPU (with one warning) when there is not;
6. the augmented pipeline consumed asynchronously.

Run: python examples/getting_started.py
"""

from __future__ import annotations

import asyncio
import warnings

import numpy as np

import streamflow as sf
from streamflow import fn, types
from streamflow.demo import image_root

IMAGE_DIR = str(image_root())  # cats/, kitchen/, space/: real photos shipped with streamflow


# 1. A simple pipeline ------------------------------------------------------
@sf.pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=1)
def simple_pipeline():
    jpegs, labels = fn.readers.file(file_root=IMAGE_DIR, name="Reader")
    images = fn.decoders.image(jpegs, device="cpu")
    return images, labels


# 2. Shuffled ----------------------------------------------------------------
@sf.pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=1)
def shuffled_pipeline():
    jpegs, labels = fn.readers.file(file_root=IMAGE_DIR, random_shuffle=True, initial_fill=16, name="Reader")
    images = fn.decoders.image(jpegs, device="cpu")
    return images, labels


# 3. Augmented ---------------------------------------------------------------
@sf.pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=1)
def augmented_pipeline():
    jpegs, labels = fn.readers.file(file_root=IMAGE_DIR, random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
    images = fn.resize(images, resize_shorter=fn.random.uniform(range=[256, 320]))
    images = fn.crop_mirror_normalize(
        images,
        crop=(224, 224),
        crop_pos_x=fn.random.uniform(range=[0, 1]),
        crop_pos_y=fn.random.uniform(range=[0, 1]),
        mirror=fn.random.coin_flip(),
        mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
        std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
        dtype=types.FLOAT,
        output_layout="CHW",
    )
    return images, labels


# 4. Rotated -----------------------------------------------------------------
@sf.pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=1)
def rotated_pipeline(random_angle: bool):
    jpegs, labels = fn.readers.file(file_root=IMAGE_DIR, name="Reader")
    images = fn.decoders.image(jpegs, device="cpu")
    angle = fn.random.uniform(range=(-10.0, 10.0)) if random_angle else 10.0
    images = fn.rotate(images, angle=angle, fill_value=0)
    return images, labels


# 5. Mixed decoding ------------------------------------------------------------
@sf.pipeline_def(batch_size=4, num_threads=2, device_id="auto", seed=1)
def mixed_pipeline():
    jpegs, labels = fn.readers.file(file_root=IMAGE_DIR, name="Reader")
    images = fn.decoders.image(jpegs, device="mixed")
    images = fn.resize(images, resize_x=224, resize_y=224, device="gpu")
    return images, labels


def describe(title: str, pipe: sf.Pipeline, epochs: int = 1) -> None:
    print(f"\n== {title}: {pipe.epoch_size('Reader')} images per epoch")
    with pipe:
        for epoch in range(epochs):
            for batch in pipe.iter():
                images, labels = batch
                files = [s.rsplit("/", 1)[-1] for s in batch.sources]
                shapes = [tuple(s) for s in images.shape()]
                print(f"  epoch {epoch}: labels {labels.as_array().reshape(-1).tolist()} files {files}")
                print(f"           shapes {shapes} dense={images.is_dense_tensor()}")


async def consume_async() -> None:
    print("\n== async: the augmented pipeline in an asyncio program")
    pipe = augmented_pipeline()
    async with pipe:
        async for images, labels in pipe:
            batch = images.as_tensor()
            print(f"  batch {batch.shape} {batch.dtype}, mean {float(np.mean(batch)):+.3f}")


def main() -> None:
    describe("simple", simple_pipeline())
    describe("shuffled (a new order every epoch)", shuffled_pipeline(), epochs=3)
    describe("augmented", augmented_pipeline())
    describe("rotated by 10 degrees (the canvas grows to hold the image)", rotated_pipeline(False))
    describe("rotated by a random angle in [-10, 10)", rotated_pipeline(True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sf.CpuFallbackWarning)  # said once by the pipeline otherwise
        describe("mixed decoding (GPU if present, else CPU)", mixed_pipeline())
    asyncio.run(consume_async())


if __name__ == "__main__":
    main()
