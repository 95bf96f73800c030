"""Train a small CNN on real photos with the streamflow PyTorch iterator (CPU).

The task: tell which of the photos in ``tests/data/photos`` a random crop was
cut from (10 classes). The images are JPEG crops built by
``benchmarks/_dataset.py`` (one set per photo, so the label is the photo);
streamflow reads, decodes, resizes, mirrors at random and normalizes them.

    python examples/train_classifier.py --steps 300 --batch-size 32
    torchrun --nproc_per_node=2 examples/train_classifier.py --steps 300

Under ``torchrun`` every rank reads its own shard (``default_shard()``: RANK /
WORLD_SIZE) and the model is wrapped in DistributedDataParallel (gloo).
``--checkpoint PATH`` saves the iterator position with the model, and a
second run with the same path continues where the first stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path
from unittest import mock

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import _dataset

import streamflow as sf
from streamflow import fn
from streamflow.distributed import default_shard
from streamflow.plugin.pytorch import ClassificationIterator, LastBatchPolicy

SIZE = 64
MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)


def build_photo_set(per_class: int, root: Path) -> tuple[list[str], list[int], list[str]]:
    """``per_class`` JPEG crops of each photo; label = index of the photo."""
    photos = _dataset.source_photos()
    files: list[str] = []
    labels: list[int] = []
    for label, photo in enumerate(photos):
        # build_jpeg_set cuts from every photo; restrict it to this one.
        with mock.patch.object(_dataset, "source_photos", lambda p=photo: [p]):
            paths = _dataset.build_jpeg_set(root / photo.stem, n=per_class, seed=label,
                                            min_width=96, max_width=192, classes=1)
        files += [str(p) for p in paths]
        labels += [label] * len(paths)
    return files, labels, [p.stem for p in photos]


@sf.pipeline_def(num_threads=2)
def train_pipe(files, labels, shard_id, num_shards):
    jpegs, label = fn.readers.file(files=files, labels=labels, random_shuffle=True, initial_fill=4096,
                                   shard_id=shard_id, num_shards=num_shards, pad_last_batch=True,
                                   name="Reader")
    images = fn.decoders.image(jpegs)
    images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
    images = fn.crop_mirror_normalize(images, mean=MEAN, std=STD, mirror=fn.random.coin_flip())
    return images, label


class SmallCNN(nn.Module):
    def __init__(self, classes: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.head = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 32
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # 16
        x = F.max_pool2d(F.relu(self.conv3(x)), 2)  # 8
        return self.head(x.mean(dim=(2, 3)))


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--per-class", type=int, default=40, help="JPEG crops per photo")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=REPO / ".bench-data" / "train-classifier")
    ap.add_argument("--checkpoint", type=Path, default=None, help="save / resume here")
    args = ap.parse_args(argv)

    distributed = "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1
    if distributed:
        dist.init_process_group("gloo")
    rank, world = default_shard()
    torch.manual_seed(args.seed)  # same initial weights on every rank
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // (2 * world)))

    if rank == 0:
        files, labels, names = build_photo_set(args.per_class, args.data)
    if distributed:
        dist.barrier()  # rank 0 built (or found) the files
    files, labels, names = build_photo_set(args.per_class, args.data)

    saved = torch.load(args.checkpoint) if args.checkpoint and args.checkpoint.exists() else None
    pipe = train_pipe(files, labels, rank, world, batch_size=args.batch_size, seed=args.seed)
    loader = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                    last_batch_policy=LastBatchPolicy.FILL,
                                    checkpoint=saved["data"][rank] if saved else None)
    model = SmallCNN(len(names))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    step0 = 0
    if saved:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        step0 = saved["step"]
    net = nn.parallel.DistributedDataParallel(model) if distributed else model

    if rank == 0:
        print(f"{len(files)} images, {len(names)} classes, world={world}, "
              f"{len(loader)} steps/epoch/rank, batch {args.batch_size}")
    losses: list[float] = []
    began = time.perf_counter()
    step = step0
    while step < step0 + args.steps:
        for batch in loader:
            x, y = batch[0]["data"], batch[0]["label"].reshape(-1).long()
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            step += 1
            if rank == 0 and (step % 50 == 0 or step == step0 + 1):
                recent = sum(losses[-50:]) / len(losses[-50:])
                print(f"step {step:4d} epoch {loader.epoch} loss {recent:.3f}")
            if step >= step0 + args.steps:
                break
    elapsed = time.perf_counter() - began

    if args.checkpoint is not None:
        data = [loader.checkpoint()]
        if distributed:
            gathered: list = [None] * world
            dist.all_gather_object(gathered, data[0])
            data = gathered
        if rank == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                        "data": data}, args.checkpoint)
    loader.close()
    k = min(20, len(losses))
    result = {"loss_start": sum(losses[:k]) / k, "loss_end": sum(losses[-k:]) / k,
              "seconds": elapsed, "steps": len(losses)}
    if rank == 0:
        print(f"loss {result['loss_start']:.3f} (first {k} steps) -> {result['loss_end']:.3f} "
              f"(last {k}), {len(losses)} steps in {elapsed:.1f} s "
              f"({len(losses) * args.batch_size * world / elapsed:.0f} images/s in total)")
    if distributed:
        dist.destroy_process_group()
    return result


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
