"""DALI's SSD (COCO) training pipeline, run by streamflow with only the imports changed.

``create_coco_pipeline`` is the pipeline of DALI's PyTorch SSD example
(``docs/examples/use_cases/pytorch/single_stage_detector/src/coco_pipeline.py``):
COCO reader, random IoU-constrained crop, decode + slice of the crop window,
resize to 300x300, random colour jitter (HSV, brightness/contrast), random
horizontal mirror of image and boxes, normalization to CHW float and SSD's
box encoding against the 8732 default boxes. The one departure: DALI's
example decodes the window with ``fn.decoders.image_slice(device="mixed")``;
here, as in DALI's earlier version of the example, the image is decoded and
then cut with ``fn.slice`` (both work in streamflow). ``device_id="auto"``
runs it on the CPU when there is no GPU.

    python examples/ssd_coco.py                      # the test COCO set in tests/data
    python examples/ssd_coco.py --root IMAGES --annotations instances_train2017.json --batches 20
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np

# --- the imports a DALI user changes: `from nvidia.dali import fn, pipeline_def, types` ----------
from streamflow import fn, pipeline_def, types

REPO = Path(__file__).resolve().parent.parent


def dboxes300_coco() -> np.ndarray:
    """SSD300's default boxes on COCO, ``ltrb`` in [0, 1]: 8732 rows (feature maps 38, 19, 10, 5, 3, 1)."""
    fig_size, feat_size = 300, [38, 19, 10, 5, 3, 1]
    steps, scales = [8, 16, 32, 64, 100, 300], [21, 45, 99, 153, 207, 261, 315]
    aspect_ratios = [[2], [2, 3], [2, 3], [2, 3], [2], [2]]
    boxes = []
    for idx, sfeat in enumerate(feat_size):
        fk = fig_size / steps[idx]
        sk1, sk2 = scales[idx] / fig_size, scales[idx + 1] / fig_size
        sizes = [(sk1, sk1), (math.sqrt(sk1 * sk2),) * 2]
        for alpha in aspect_ratios[idx]:
            w, h = sk1 * math.sqrt(alpha), sk1 / math.sqrt(alpha)
            sizes += [(w, h), (h, w)]
        for i, j in itertools.product(range(sfeat), repeat=2):
            for w, h in sizes:
                boxes.append(((j + 0.5) / fk, (i + 0.5) / fk, w, h))
    xywh = np.clip(np.array(boxes), 0, 1)
    return np.concatenate([xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2], axis=1)


class DefaultBoxes:
    """The part of DALI's example's ``DefaultBoxes`` the pipeline uses."""

    def __init__(self) -> None:
        self.ltrb = dboxes300_coco()

    def as_ltrb_list(self) -> list[float]:
        return self.ltrb.reshape(-1).tolist()


# --- DALI's pipeline (fn API), unchanged but for decode + slice ----------------------------------
@pipeline_def
def create_coco_pipeline(default_boxes, args):  # type: ignore[no-untyped-def]
    shard_id = args.shard_id
    num_shards = args.num_shards

    images, bboxes, labels = fn.readers.coco(file_root=args.train_coco_root,
                                             annotations_file=args.train_annotate,
                                             skip_empty=True,
                                             shard_id=shard_id,
                                             num_shards=num_shards,
                                             ratio=True,
                                             ltrb=True,
                                             random_shuffle=False,
                                             shuffle_after_epoch=True,
                                             name="Reader")

    crop_begin, crop_size, bboxes, labels = fn.random_bbox_crop(bboxes, labels,
                                                                device="cpu",
                                                                aspect_ratio=[0.5, 2.0],
                                                                thresholds=[0, 0.1, 0.3, 0.5, 0.7, 0.9],
                                                                scaling=[0.3, 1.0],
                                                                bbox_layout="xyXY",
                                                                allow_no_crop=True,
                                                                num_attempts=50)
    images = fn.decoders.image(images, device="cpu", output_type=types.RGB)
    images = fn.slice(images, crop_begin, crop_size)
    flip_coin = fn.random.coin_flip(probability=0.5)
    images = fn.resize(images,
                       resize_x=300,
                       resize_y=300,
                       min_filter=types.DALIInterpType.INTERP_TRIANGULAR)

    saturation = fn.random.uniform(range=[0.5, 1.5])
    contrast = fn.random.uniform(range=[0.5, 1.5])
    brightness = fn.random.uniform(range=[0.875, 1.125])
    hue = fn.random.uniform(range=[-0.5, 0.5])

    images = fn.hsv(images, dtype=types.FLOAT, hue=hue, saturation=saturation)  # use float to avoid clipping and
                                                         # quantizing the intermediate result
    images = fn.brightness_contrast(images,
                                    contrast_center=128,  # input is in float, but in 0..255 range
                                    dtype=types.UINT8,
                                    brightness=brightness,
                                    contrast=contrast)

    dtype = types.FLOAT16 if args.fp16_mode else types.FLOAT

    bboxes = fn.bb_flip(bboxes, ltrb=True, horizontal=flip_coin)
    images = fn.crop_mirror_normalize(images,
                                      crop=(300, 300),
                                      mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                      std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
                                      mirror=flip_coin,
                                      dtype=dtype,
                                      output_layout="CHW",
                                      pad_output=False)

    bboxes, labels = fn.box_encoder(bboxes, labels,
                                    criteria=0.5,
                                    anchors=default_boxes.as_ltrb_list())

    labels = labels.gpu()
    bboxes = bboxes.gpu()

    return images, bboxes, labels


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", dest="train_coco_root", default=str(REPO / "tests" / "data"))
    p.add_argument("--annotations", dest="train_annotate", default=str(REPO / "tests" / "data" / "coco" / "instances.json"))
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--fp16-mode", action="store_true")
    p.add_argument("--shard-id", type=int, default=0)
    p.add_argument("--num-shards", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    pipe = create_coco_pipeline(DefaultBoxes(), args, batch_size=args.batch_size, num_threads=args.workers,
                                device_id="auto", seed=args.seed)
    pipe.build()
    print(f"epoch size: {pipe.epoch_size('Reader')} images")
    start = time.perf_counter()
    for b in range(args.batches):
        images, bboxes, labels = (t.as_cpu() for t in pipe.run())
        imgs, boxes, labs = images.as_array(), bboxes.as_array(), labels.as_array()
        matched = (labs > 0).sum(axis=1)
        print(f"batch {b}: images {imgs.shape} {imgs.dtype}, bboxes {boxes.shape} {boxes.dtype}, "
              f"labels {labs.shape} {labs.dtype}, matched anchors per image {matched.tolist()}")
    elapsed = time.perf_counter() - start
    print(f"{args.batches * args.batch_size / elapsed:.1f} images/s (CPU, {args.workers} threads)")
    pipe.close()


if __name__ == "__main__":
    sys.exit(main())
