"""A Mask R-CNN-style COCO pipeline written with DALI's operators, run by streamflow.

Images with boxes, labels and polygon masks: a random IoU-constrained crop of
the image, the kept objects' polygons selected by the crop's box indices and
mapped into the crop window with an affine transform, a random horizontal
mirror of image, boxes and polygon vertices, then resize and normalization.
The pipeline is written against DALI's API: with ``from nvidia.dali import
fn, pipeline_def, types`` it runs in DALI 2.4 as it is.

    python examples/mask_rcnn_coco.py
    python examples/mask_rcnn_coco.py --root IMAGES --annotations instances_train2017.json --batches 20
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

# --- the imports a DALI user changes: `from nvidia.dali import fn, pipeline_def, types` ----------
from streamflow import fn, pipeline_def, types

REPO = Path(__file__).resolve().parent.parent


@pipeline_def
def coco_mask_pipeline(file_root, annotations_file, shard_id=0, num_shards=1):  # type: ignore[no-untyped-def]
    jpegs, bboxes, labels, polygons, vertices = fn.readers.coco(
        file_root=file_root, annotations_file=annotations_file, shard_id=shard_id, num_shards=num_shards,
        ratio=True, ltrb=True, polygon_masks=True, skip_empty=True, random_shuffle=True, name="Reader")

    # A random window keeping the objects (SSD-style), and the objects' polygons that survive it
    anchor, shape, bboxes, labels, bbox_indices = fn.random_bbox_crop(
        bboxes, labels, aspect_ratio=[0.5, 2.0], thresholds=[0.1, 0.3, 0.5], scaling=[0.3, 1.0],
        bbox_layout="xyXY", allow_no_crop=True, num_attempts=50, output_bbox_indices=True)
    polygons, vertices = fn.segmentation.select_masks(bbox_indices, polygons, vertices, reindex_masks=True)

    images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
    images = fn.slice(images, anchor, shape)

    # Vertices (relative to the image) into the window's coordinates
    crop_mt = fn.transforms.crop(from_start=anchor, from_end=anchor + shape, to_start=[0.0, 0.0],
                                 to_end=[1.0, 1.0])
    vertices = fn.coord_transform(vertices, MT=crop_mt)

    flip = fn.random.coin_flip(probability=0.5)
    images = fn.flip(images, horizontal=flip)
    bboxes = fn.bb_flip(bboxes, ltrb=True, horizontal=flip)
    vertices = fn.coord_flip(vertices, flip_x=flip)

    images = fn.resize(images, resize_shorter=256, max_size=384)
    images = fn.crop_mirror_normalize(images, mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                      std=[0.229 * 255, 0.224 * 255, 0.225 * 255], dtype=types.FLOAT,
                                      output_layout="CHW")
    return images, bboxes, labels, polygons, vertices


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default=str(REPO / "tests" / "data"))
    p.add_argument("--annotations", default=str(REPO / "tests" / "data" / "coco" / "instances.json"))
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)
    pipe = coco_mask_pipeline(args.root, args.annotations, batch_size=args.batch_size, num_threads=args.workers,
                              device_id=None, seed=1)
    pipe.build()
    start = time.perf_counter()
    for b in range(args.batches):
        images, bboxes, labels, polygons, vertices = pipe.run()
        for i in range(len(images)):
            v = np.asarray(vertices.at(i))
            print(f"batch {b} image {i}: {np.asarray(images.at(i)).shape}, {len(np.asarray(bboxes.at(i)))} boxes "
                  f"{np.asarray(labels.at(i)).tolist()}, {len(np.asarray(polygons.at(i)))} polygons, "
                  f"{len(v)} vertices in [{v.min() if len(v) else 0:.2f}, {v.max() if len(v) else 0:.2f}]")
    print(f"{args.batches * args.batch_size / (time.perf_counter() - start):.1f} images/s")
    pipe.close()


if __name__ == "__main__":
    sys.exit(main())
