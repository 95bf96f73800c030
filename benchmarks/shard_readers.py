"""Sharded data sets: streamflow's WebDataset and TFRecord readers, local and from S3, vs webdataset + DataLoader.

The data: ``--images`` (default 2000) ImageNet-like JPEGs cut from the real
photos in tests/data/photos (``_dataset.build_jpeg_set``), packed once (cached
under ``.bench-data/shards-n<N>/``) as ``--shards`` WebDataset tar shards
(``webdataset.TarWriter``, indexed with ``streamflow.tools.wds2idx``) and as
as many TFRecord files of ``tf.train.Example`` (indexed with
``tfrecord2idx``). "S3" is moto's S3 server, started by this script on
127.0.0.1 (loopback: it measures the client side, request handling and
read-ahead, not a network).

Every system does the same work per image: decode JPEG -> RGB, resize to
256x256, centre crop 224, random horizontal flip, normalize to float CHW;
shuffling on, ``--batch-size`` batches, ``--threads`` threads / workers:

* ``sf-file``: streamflow ``readers.file`` on the loose JPEGs (reference);
* ``sf-wds``, ``sf-tfrecord``: streamflow on the local shards;
* ``sf-wds-s3``, ``sf-tfrecord-s3``: streamflow on the shards in S3;
* ``wds-torch``: the ``webdataset`` library (``WebDataset(...).shuffle(1000)``)
  in a PyTorch ``DataLoader`` with ``--threads`` worker processes, Pillow +
  torch transforms (the baseline that does not use streamflow);
* ``wds-torch-s3``: the same over HTTP GETs of the S3 objects (webdataset's
  ``curl`` pipe on presigned URLs).

Each system: one warm-up epoch, then ``--repeats`` timed epochs; images/s
(median and best) printed and written to JSON with the machine description.

Usage::

    python benchmarks/shard_readers.py                # 2000 images, 3 repeats
    python benchmarks/shard_readers.py --quick        # 64 images, a smoke run
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common
import _dataset

sys.path.insert(0, str(_common.REPO_ROOT))
sys.path.insert(0, str(_common.REPO_ROOT / "tests"))

RESIZE, CROP, SEED = 256, 224, 42
MEAN_255 = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD_255 = (0.229 * 255, 0.224 * 255, 0.225 * 255)
SYSTEMS = ("sf-file", "sf-wds", "sf-tfrecord", "sf-wds-s3", "sf-tfrecord-s3", "wds-torch", "wds-torch-s3")


# --------------------------------------------------------------------------- data
def pack(images: list[Path], out: Path, shards: int) -> dict[str, list[str]]:
    """WebDataset and TFRecord shards of ``images`` (label: the class folder's index), cached."""
    import numpy as np
    import shard_writers as W

    from streamflow.tools import tfrecord2idx, wds2idx

    done = out / "done"
    per = -(-len(images) // shards)
    names = {"wds": [str(out / f"train-{i:04d}.tar") for i in range(shards)],
             "wds_idx": [str(out / f"train-{i:04d}.idx") for i in range(shards)],
             "tfrecord": [str(out / f"train-{i:04d}.tfrecord") for i in range(shards)],
             "tfrecord_idx": [str(out / f"train-{i:04d}.tfidx") for i in range(shards)]}
    if done.exists() and done.read_text() == f"{len(images)} {shards}":
        return names
    out.mkdir(parents=True, exist_ok=True)
    for i in range(shards):
        part = images[i * per : (i + 1) * per]
        labels = [int(p.parent.name.rsplit("_", 1)[-1]) for p in part]
        W.write_wds(Path(names["wds"][i]), [(f"{p.parent.name}/{p.stem}", {"jpg": p.read_bytes(), "cls": str(k).encode()})
                                            for p, k in zip(part, labels)])
        W.write_tfrecord(Path(names["tfrecord"][i]), [
            W.example({"image/encoded": p.read_bytes(), "image/class/label": np.array([k])}) for p, k in zip(part, labels)
        ])
        wds2idx.main([names["wds"][i], names["wds_idx"][i]])
        tfrecord2idx.main([names["tfrecord"][i], names["tfrecord_idx"][i]])
    done.write_text(f"{len(images)} {shards}")
    return names


# --------------------------------------------------------------------------- streamflow
def sf_pipeline(reader: Callable[[], tuple[Any, Any]], batch_size: int, threads: int) -> Any:
    import streamflow as sf
    from streamflow import fn, types

    @sf.pipeline_def(batch_size=batch_size, num_threads=threads, device_id=None, seed=SEED)
    def pipe() -> Any:
        jpegs, labels = reader()
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.resize(images, resize_x=RESIZE, resize_y=RESIZE)
        images = fn.crop_mirror_normalize(images, crop=(CROP, CROP), dtype=types.FLOAT, output_layout="CHW",
                                          mean=list(MEAN_255), std=list(STD_255), mirror=fn.random.coin_flip())
        return images, labels

    return pipe()


def sf_readers(paths: dict[str, list[str]], files: list[Path]) -> dict[str, Callable[[], tuple[Any, Any]]]:
    import streamflow.tfrecord as tfrec
    from streamflow import fn

    feats = {"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
             "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)}

    def tfr(path: list[str], idx: list[str]) -> tuple[Any, Any]:
        out = fn.readers.tfrecord(path=path, index_path=idx, features=feats, random_shuffle=True)
        return out["image/encoded"], out["image/class/label"]

    labels = [int(p.parent.name.rsplit("_", 1)[-1]) for p in files]
    return {
        "file": lambda: fn.readers.file(files=[str(p) for p in files], labels=labels, random_shuffle=True),
        "wds": lambda: fn.readers.webdataset(paths=paths["wds"], index_paths=paths["wds_idx"], ext=["jpg", "cls"],
                                             random_shuffle=True),
        "tfrecord": lambda: tfr(paths["tfrecord"], paths["tfrecord_idx"]),
    }


def sf_epoch(pipe: Any) -> int:
    n = 0
    for images, labels in pipe.iter():
        n += len(labels)
    return n


# --------------------------------------------------------------------------- webdataset + torch
def wds_loader(urls: list[str], batch_size: int, workers: int) -> Any:
    import io

    import numpy as np
    import torch
    import webdataset as wds
    from PIL import Image

    mean = torch.tensor(MEAN_255, dtype=torch.float32).view(3, 1, 1)
    std = torch.tensor(STD_255, dtype=torch.float32).view(3, 1, 1)
    off = (RESIZE - CROP) // 2
    box = (off, off, off + CROP, off + CROP)

    def transform(sample: dict[str, Any]) -> tuple[Any, int]:
        with Image.open(io.BytesIO(sample["jpg"])) as f:
            rgb = f.convert("RGB")
        img = rgb.resize((RESIZE, RESIZE), Image.Resampling.BILINEAR).crop(box)
        if torch.rand(1).item() < 0.5:
            img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        chw = torch.from_numpy(np.array(img)).permute(2, 0, 1).contiguous()
        return chw.to(torch.float32).sub_(mean).div_(std), int(sample["cls"])

    dataset = (wds.WebDataset(urls, shardshuffle=False, nodesplitter=wds.split_by_node,
                              workersplitter=wds.split_by_worker, empty_check=False)
               .shuffle(1000).map(transform).batched(batch_size, partial=True))
    return torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers, persistent_workers=workers > 0)


def torch_epoch(loader: Any) -> int:
    return sum(len(labels) for _, labels in loader)


# --------------------------------------------------------------------------- run
def run(args: argparse.Namespace) -> dict[str, Any]:
    info = _common.machine_info((*_common.DEFAULT_PACKAGES, "webdataset", "fsspec", "s3fs", "moto"))
    _common.print_machine(info)
    data = Path(args.data_dir) if args.data_dir else _common.REPO_ROOT / ".bench-data"
    images = _dataset.build_jpeg_set(data / f"jpegs-n{args.images}-seed0", n=args.images, classes=4)
    paths = pack(images, data / f"shards-n{args.images}-s{args.shards}", args.shards)
    total_mb = sum(os.path.getsize(p) for p in paths["wds"]) / 1e6
    print(f"data: {args.images} JPEGs, {args.shards} shards, {total_mb:.1f} MB of tar")
    results: dict[str, Any] = {}
    from object_servers import moto_s3

    with moto_s3():
        import fsspec

        fs = fsspec.filesystem("s3")
        fs.mkdir("bench")
        for key in ("wds", "wds_idx", "tfrecord", "tfrecord_idx"):
            for p in paths[key]:
                fs.put_file(p, f"bench/{Path(p).name}")
        s3 = {k: [f"s3://bench/{Path(p).name}" for p in v] for k, v in paths.items()}
        readers = sf_readers(paths, images)
        remote = sf_readers(s3, images)
        builders: dict[str, Callable[[], tuple[Any, Callable[[Any], int], Callable[[Any], None]]]] = {
            "sf-file": lambda: (sf_pipeline(readers["file"], args.batch_size, args.threads), sf_epoch, _close),
            "sf-wds": lambda: (sf_pipeline(readers["wds"], args.batch_size, args.threads), sf_epoch, _close),
            "sf-tfrecord": lambda: (sf_pipeline(readers["tfrecord"], args.batch_size, args.threads), sf_epoch, _close),
            "sf-wds-s3": lambda: (sf_pipeline(remote["wds"], args.batch_size, args.threads), sf_epoch, _close),
            "sf-tfrecord-s3": lambda: (sf_pipeline(remote["tfrecord"], args.batch_size, args.threads), sf_epoch,
                                       _close),
            "wds-torch": lambda: (wds_loader(paths["wds"], args.batch_size, args.threads), torch_epoch, _noop),
            "wds-torch-s3": lambda: (wds_loader([f"pipe:curl -sf '{fs.url(f'bench/{Path(p).name}', expires=3600)}'"
                                                 for p in paths["wds"]], args.batch_size, args.threads),
                                     torch_epoch, _noop),
        }
        for name in args.systems:
            try:
                system, epoch, close = builders[name]()
                try:
                    timing = _common.time_repeats(lambda: epoch(system), repeats=args.repeats, warmup=1)
                finally:
                    close(system)
                results[name] = {"status": "ok", **timing.summary()}
                print(f"{name:16s} {timing.median_rate():8.1f} img/s median  {timing.best_rate():8.1f} best  "
                      f"({timing.items[0]} images per epoch)")
            except Exception as e:  # a system that cannot run is reported, not fatal
                results[name] = {"status": "failed", "error": f"{type(e).__name__}: {e}",
                                 "traceback": traceback.format_exc()}
                print(f"{name:16s} FAILED: {type(e).__name__}: {e}")
    return {"benchmark": "shard_readers", "time": _common.now_iso(), "machine": info,
            "config": {k: v for k, v in vars(args).items() if k != "output"}, "results": results}


def _close(pipe: Any) -> None:
    pipe.close()


def _noop(_: Any) -> None:
    pass


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--quick", action="store_true", help="64 images, 2 shards, 1 repeat")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--data-dir", default="", help="where the JPEGs and shards are cached (.bench-data)")
    args = ap.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown:
        ap.error(f"unknown systems {unknown}; choose from {', '.join(SYSTEMS)}")
    if args.quick:
        args.images, args.shards, args.repeats, args.batch_size = 64, 2, 1, 16
    start = time.perf_counter()
    payload = run(args)
    payload["wall_seconds"] = time.perf_counter() - start
    out = args.output or (_common.REPO_ROOT / ".bench-data" / f"quick-shard_readers-{_common.machine_tag()}.json"
                          if args.quick else _common.RESULTS_DIR / f"shard_readers-{_common.machine_tag()}.json")
    print(f"wrote {_common.write_json(out, payload)}")


if __name__ == "__main__":
    main()
