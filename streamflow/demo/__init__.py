"""The ``streamflow demo`` pipeline, on real photos shipped with the package."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

from .. import fn, types
from ..pipeline import Pipeline, pipeline_def

__all__ = ["demo_pipeline", "image_root", "run_demo"]

IMAGENET_MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
IMAGENET_STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def image_root() -> Path:
    """A folder of real photos, one sub-folder per class (cats, kitchen, space)."""
    return Path(__file__).parent / "images"


def demo_pipeline(batch_size: int = 32, num_threads: int = 2, repeat: int = 64, device_id: int | str | None = None) -> Pipeline:
    """The standard training pipeline over the demo photos, each listed ``repeat`` times."""
    root = image_root()
    files = sorted(str(p) for p in root.rglob("*") if p.suffix.lower() in (".jpg", ".png"))
    labels = [sorted(d.name for d in root.iterdir() if d.is_dir()).index(Path(f).parent.name) for f in files]

    @pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=device_id, seed=0)
    def train():
        jpegs, label = fn.readers.file(files=files * repeat, labels=labels * repeat, random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu" if device_id is None else "mixed", output_type=types.RGB)
        images = fn.resize(images, resize_shorter=256)
        images = fn.crop_mirror_normalize(
            images, crop=(224, 224), dtype=types.FLOAT, output_layout="CHW",
            mean=IMAGENET_MEAN, std=IMAGENET_STD, mirror=fn.random.coin_flip(),
        )
        return images, label

    return train()


def _bar(done: int, total: int, rate: float, out: TextIO) -> None:
    """Redraw the progress bar in place on a terminal; in a log, only its final state."""
    interactive = getattr(out, "isatty", lambda: False)()
    if not interactive and done < total:
        return
    width = 30
    filled = int(width * done / total) if total else width
    start = "\r" if interactive else ""
    out.write(f"{start}[{'#' * filled}{'.' * (width - filled)}] {done}/{total} images  {rate:7.1f} img/s")
    out.flush()


def run_demo(epochs: int = 2, batch_size: int = 32, num_threads: int = 2, out: TextIO = sys.stdout) -> float:
    """Run the demo pipeline with a progress bar; returns the steady-state img/s."""
    pipe = demo_pipeline(batch_size=batch_size, num_threads=num_threads)
    total = int(pipe.epoch_size("Reader"))  # type: ignore[arg-type]
    print(f"streamflow demo: {total} images per epoch from {image_root()}", file=out)
    print("pipeline: read -> decode (CPU) -> resize 256 -> crop 224 + random mirror + normalize (CHW float32)", file=out)
    rate = 0.0
    with pipe:
        for epoch in range(epochs):
            done, began = 0, time.perf_counter()
            for images, _labels in pipe.iter():
                done += len(images)
                rate = done / (time.perf_counter() - began)
                _bar(done, total, rate, out)
            shape = images.as_tensor().shape
            out.write(f"   epoch {epoch}: last batch {shape} {images.as_tensor().dtype}\n")
    print(f"throughput: {rate:.0f} img/s with {num_threads} threads (last epoch)", file=out)
    return rate
