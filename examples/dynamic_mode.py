"""Dynamic mode on the bundled photos: operators called at once, `await`ed, and a debug pipeline.

    python examples/dynamic_mode.py

See docs/dynamic.md.
"""

from __future__ import annotations

import asyncio

import numpy as np

import streamflow as sf
import streamflow.dynamic as ndd
from streamflow import fn
from streamflow.demo import image_root

ROOT = str(image_root())
MEAN, STD = [0.485 * 255, 0.456 * 255, 0.406 * 255], [0.229 * 255, 0.224 * 255, 0.225 * 255]


def augment(jpegs: ndd.Batch, rng: ndd.random.RNG) -> ndd.Batch:
    """Decode, crop at random, flip at random, normalize: each call runs at once."""
    images = ndd.decoders.image(jpegs)
    crops = ndd.random_resized_crop(images, size=(224, 224), rng=rng)
    flips = ndd.random.coin_flip(batch_size=crops.batch_size, rng=rng)
    return ndd.crop_mirror_normalize(crops, mirror=flips, mean=MEAN, std=STD, rng=rng)


def main() -> None:
    rng = ndd.random.RNG(seed=42)
    reader = ndd.readers.File(file_root=ROOT, random_shuffle=True, rng=rng)
    print("== dynamic mode: batches")
    for jpegs, labels in reader.next_epoch(batch_size=4):
        out = augment(jpegs, rng)
        x = np.asarray(out)  # or torch.as_tensor(out)
        print(f"{x.shape} {x.dtype}  labels {np.asarray(labels).ravel().tolist()}")

    print("== dynamic mode: one image, awaited")

    async def serve_one(data: bytes) -> ndd.Tensor:
        image = await ndd.aio.decoders.image(data)
        return await ndd.aio.resize(image, size=(64, 64))

    jpeg = next(iter(ndd.readers.file(file_root=ROOT).next_epoch()))[0]
    small = asyncio.run(serve_one(np.asarray(jpeg).tobytes()))
    print(f"{small.shape} {small.dtype.value} layout {small.layout}")

    print("== debug pipeline: real values inside the definition")

    @sf.pipeline_def(batch_size=4, num_threads=2, seed=42, debug=True)
    def pipe():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=ROOT, random_shuffle=True)
        images = fn.decoders.image(jpegs)
        print("   decoded:", [tuple(s.shape) for s in images.get()])
        return fn.resize(images, size=(32, 32)), labels

    with pipe() as p:
        batch = p.run()
    print(f"{batch[0].as_array().shape} labels {batch[1].as_array().ravel().tolist()}")


if __name__ == "__main__":
    main()
