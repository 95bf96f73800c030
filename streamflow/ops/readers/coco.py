"""``readers.coco``: images of a COCO data set with their boxes, labels and masks.

Outputs, in DALI's order: the encoded image (1-D uint8), the boxes
(``(N, 4)`` float32, ``[x, y, w, h]`` or ``ltrb``, in pixels or, with
``ratio``, relative to the image's size), the labels (``(N,)`` int32), then
``polygons`` (``(P, 3)`` int32 ``[mask_index, first_vertex, end_vertex]``)
and ``vertices`` (``(V, 2)`` float32) with ``polygon_masks``, or the
``(H, W, 1)`` int32 label map with ``pixelwise_masks``, then the image's id
(``(1,)`` int32) with ``image_ids``.

The annotation rules are DALI 2.4's (see ``coco_annotations``); sharding,
shuffling and padding are those of every list reader (``streamflow.sharding``).
``save_preprocessed_annotations`` / ``preprocessed_annotations`` use DALI's
binary files, so a folder saved by either library loads in the other.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import PipelineDefinitionError
from ...graph import DataNode, add_node
from ...operator import SourceBatch
from ...sharding import ShardSpec
from ..arguments import READER, fn_function
from .coco_annotations import (
    CocoIndex,
    CocoOptions,
    load_preprocessed,
    parse_coco_json,
    save_preprocessed,
)
from .coco_masks import pixelwise_mask
from .file import check_folder
from .list_source import ListSource, split_read_errors

__all__ = ["CocoReader", "coco"]


class CocoReader(ListSource):
    """Reads the images of a ``CocoIndex`` and slices their annotations."""

    name = "readers.coco"

    def __init__(self, index: CocoIndex, *, file_root: str, ratio: bool, polygon_masks: bool, legacy_polygons: bool,
                 pixelwise_masks: bool, image_ids: bool, shard: ShardSpec, seed: int | None,
                 name: str | None = None) -> None:
        super().__init__(shard=shard, seed=seed, name=name)
        if len(index) == 0:
            raise PipelineDefinitionError("readers.coco: no images to read (the annotations list none, "
                                          "or skip_empty dropped them all)")
        self.index = index
        self.file_root = file_root
        self.ratio = ratio
        self.polygon_masks = polygon_masks
        self.legacy_polygons = legacy_polygons
        self.pixelwise_masks = pixelwise_masks
        self.image_ids = image_ids
        self.paths = [os.path.join(file_root, f) for f in index.filenames]
        self.num_outputs = 3 + (2 if polygon_masks else 0) + (1 if pixelwise_masks else 0) + (1 if image_ids else 0)

    @property
    def num_items(self) -> int:
        return len(self.index)

    def _mask(self, item: int) -> np.ndarray:
        polygons, vertices = self.index.sample_polygons(item)
        _, labels = self.index.sample_boxes(item)
        return pixelwise_mask(polygons, vertices, self.index.sample_rles(item), labels,
                              int(self.index.heights[item]), int(self.index.widths[item]), self.ratio)

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        assert self._io is not None
        paths = [self.paths[i] for i in items]
        contents = await self._io.read_files(paths)
        images, failures = split_read_errors(contents, lambda content: np.frombuffer(content, dtype=np.uint8))
        outputs: list[list[Any]] = [[] for _ in range(self.num_outputs)]
        masks: list[Any] = []
        if self.pixelwise_masks:
            masks = list(await asyncio.gather(*(self._io.call(self._mask, int(i)) for i in items)))
        for row, (item, data) in enumerate(zip(items, images)):
            item = int(item)
            boxes, labels = self.index.sample_boxes(item)
            values: list[Any] = [data, boxes, labels]
            if self.polygon_masks:
                polygons, vertices = self.index.sample_polygons(item)
                if self.legacy_polygons:  # DALI's deprecated `masks`: coordinate indices, not vertex indices
                    polygons[:, 1:] *= 2
                values += [polygons, vertices]
            if self.pixelwise_masks:
                values.append(masks[row])
            if self.image_ids:
                values.append(self.index.original_ids[item : item + 1].copy())
            for k, value in enumerate(values):
                outputs[k].append(value)
        return SourceBatch(outputs=outputs, sample_ids=ids, sources=paths, failures=failures)

    def layout(self, index: int) -> str:
        if self.pixelwise_masks and index == 3 + (2 if self.polygon_masks else 0):
            return "HWC"
        return ""


def _pick(name: str, value: Any, alias: str, alias_value: Any, default: Any) -> Any:
    """DALI's deprecated argument aliases: either name, not both."""
    if alias_value is not None:
        if value is not None:
            raise PipelineDefinitionError(f"readers.coco: give {name} or its deprecated alias {alias}, not both")
        return alias_value
    return default if value is None else value


@fn_function(READER)
def coco(
    *,
    file_root: str | os.PathLike[str] | None = None,
    annotations_file: str | os.PathLike[str] = "",
    images: Sequence[str] | str | None = None,
    ltrb: bool = False,
    ratio: bool = False,
    skip_empty: bool = False,
    size_threshold: float = 0.1,
    include_iscrowd: bool = True,
    avoid_class_remapping: bool = False,
    polygon_masks: bool | None = None,
    pixelwise_masks: bool = False,
    masks: bool = False,
    image_ids: bool | None = None,
    save_preprocessed_annotations: bool | None = None,
    save_preprocessed_annotations_dir: str | os.PathLike[str] | None = None,
    preprocessed_annotations: str | os.PathLike[str] | None = None,
    save_img_ids: bool | None = None,
    dump_meta_files: bool | None = None,
    dump_meta_files_path: str | os.PathLike[str] | None = None,
    meta_files_path: str | os.PathLike[str] | None = None,
    random_shuffle: bool = False,
    initial_fill: int = 1024,
    shuffle_after_epoch: bool = False,
    shuffle_after_epoch_seed: int | None = None,
    shard_id: int | None = None,
    num_shards: int | None = None,
    stick_to_shard: bool = False,
    pad_last_batch: bool = False,
    seed: int | None = None,
    name: str | None = None,
) -> tuple[DataNode, ...]:
    """Read a COCO data set: images with boxes, labels and (optionally) masks and ids.

    Args:
        file_root: folder the images' ``file_name`` paths are relative to.
        annotations_file: the instances JSON file.
        images: read only these image paths (as in the JSON), in this order, duplicates kept.
        ltrb: boxes as ``[left, top, right, bottom]`` instead of ``[x, y, w, h]``.
        ratio: boxes and polygon vertices relative to the image's width and height.
        skip_empty: skip images without annotations.
        size_threshold: drop objects whose box width or height is below this [pixels].
        include_iscrowd: keep ``iscrowd=1`` annotations.
        avoid_class_remapping: labels are the category ids (default: 1..N in ``categories`` order).
        polygon_masks: add the ``polygons`` and ``vertices`` outputs.
        pixelwise_masks: add an ``(H, W, 1)`` int32 label map (needs ``pycocotools``).
        masks: deprecated ``polygon_masks`` with polygons given in coordinate indices.
        image_ids: add the image id output.
        save_preprocessed_annotations: save the parsed annotations (DALI's binary files)
            to ``save_preprocessed_annotations_dir``.
        preprocessed_annotations: read the annotations from such a folder instead of the JSON.
        random_shuffle, initial_fill, shuffle_after_epoch, shard_id, num_shards,
        stick_to_shard, pad_last_batch, seed: as every reader (see ``readers.file``).
        name: the reader's name (``pipe.epoch_size(name)``, iterators' ``reader_name``).

    Returns:
        ``images, boxes, labels`` then ``polygons, vertices`` or ``pixelwise_masks``, then ``image_ids``.
    """
    image_ids = bool(_pick("image_ids", image_ids, "save_img_ids", save_img_ids, False))
    save = bool(_pick("save_preprocessed_annotations", save_preprocessed_annotations, "dump_meta_files",
                      dump_meta_files, False))
    save_dir = _pick("save_preprocessed_annotations_dir", save_preprocessed_annotations_dir, "dump_meta_files_path",
                     dump_meta_files_path, None)
    preprocessed = _pick("preprocessed_annotations", preprocessed_annotations, "meta_files_path", meta_files_path, None)
    polygons = bool(polygon_masks) or bool(masks)
    if polygon_masks is not None and masks:
        raise PipelineDefinitionError("readers.coco: give polygon_masks or its deprecated form masks, not both")
    if polygons and pixelwise_masks:
        raise PipelineDefinitionError("readers.coco: polygon_masks and pixelwise_masks are mutually exclusive")
    if file_root is None:
        raise PipelineDefinitionError("readers.coco: file_root (the folder of the images) is required")
    root = os.fsdecode(file_root)
    check_folder(root, "readers.coco")
    if isinstance(images, str):
        images = [images]
    if preprocessed:
        if os.fsdecode(annotations_file):
            raise PipelineDefinitionError(
                "readers.coco: annotations_file is not used with preprocessed_annotations; give one of them")
        if images is not None:
            raise PipelineDefinitionError("readers.coco: images cannot be combined with preprocessed_annotations")
        index = load_preprocessed(os.fsdecode(preprocessed), polygons=polygons, rles=pixelwise_masks,
                                  image_ids=image_ids)
    else:
        if not os.fsdecode(annotations_file):
            raise PipelineDefinitionError("readers.coco: annotations_file (the instances JSON) is required")
        options = CocoOptions(ltrb=ltrb, ratio=ratio, skip_empty=skip_empty, size_threshold=float(size_threshold),
                              include_iscrowd=include_iscrowd, avoid_class_remapping=avoid_class_remapping,
                              polygons=polygons, rles=pixelwise_masks,
                              images=None if images is None else tuple(str(i) for i in images))
        index = parse_coco_json(os.fsdecode(annotations_file), options)
        if save:
            if not save_dir:
                raise PipelineDefinitionError(
                    "readers.coco: save_preprocessed_annotations needs save_preprocessed_annotations_dir")
            save_preprocessed(index, os.fsdecode(save_dir), polygons=polygons, rles=pixelwise_masks,
                              image_ids=image_ids)
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill,
                                shuffle_after_epoch=shuffle_after_epoch,
                                shuffle_after_epoch_seed=shuffle_after_epoch_seed)
    reader = CocoReader(index, file_root=root, ratio=ratio, polygon_masks=polygons, legacy_polygons=bool(masks),
                        pixelwise_masks=pixelwise_masks, image_ids=image_ids, shard=spec, seed=seed, name=name)
    return add_node(reader, [])
