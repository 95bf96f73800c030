"""COCO annotations for ``readers.coco``: the JSON parsed into flat per-sample arrays, and DALI's binary files.

``CocoIndex`` holds, like DALI's ``CocoLoader``, every sample's boxes, labels,
polygons, vertices and RLE masks in flat arrays with per-sample offsets and
counts, so a sample is a few slices. ``parse_coco_json`` builds it with DALI
2.4's rules:

* samples: the images listed in the file ordered by ``id`` (or the ``images``
  argument's paths in its order, duplicates kept, unknown paths skipped);
  with ``skip_empty`` images without (kept) annotations are dropped;
* an annotation is kept when both its box width and height are at least
  ``size_threshold`` (and, without ``include_iscrowd``, when not a crowd);
* labels: category ids renumbered ``1..N`` in the order of ``categories``
  (``avoid_class_remapping`` keeps the ids);
* boxes: ``[x, y, w, h]`` as float32, ``ltrb`` adds ``x + w`` / ``y + h``,
  ``ratio`` divides by the image's ``width`` / ``height`` from the JSON;
* polygons ``[mask_index, first_vertex, end_vertex]`` (vertex indices within the
  sample), vertices ``[x, y]`` (divided like boxes with ``ratio``); RLE
  segmentations (crowds) are kept only for pixelwise masks.

``save_preprocessed`` / ``load_preprocessed`` write and read DALI's
``save_preprocessed_annotations`` files (little-endian: a ``uint32`` count,
then the values; ``filenames.dat`` is text), so files saved by DALI load here
and the other way round.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import PipelineDefinitionError

__all__ = ["CocoIndex", "CocoOptions", "Rle", "load_preprocessed", "parse_coco_json", "save_preprocessed"]

F32 = np.float32


@dataclass(frozen=True)
class Rle:
    """An uncompressed run-length mask (COCO's column-major runs, starting with zeros)."""

    height: int
    width: int
    counts: np.ndarray  # uint32


@dataclass(frozen=True)
class CocoOptions:
    """The parsing arguments of ``readers.coco``."""

    ltrb: bool = False
    ratio: bool = False
    skip_empty: bool = False
    size_threshold: float = 0.1
    include_iscrowd: bool = True
    avoid_class_remapping: bool = False
    polygons: bool = False  # parse polygon segmentations
    rles: bool = False  # parse RLE segmentations (pixelwise masks)
    images: tuple[str, ...] | None = None


@dataclass
class CocoIndex:
    """Per-sample annotations in flat arrays (DALI's layout)."""

    filenames: list[str] = field(default_factory=list)
    original_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    heights: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    widths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    boxes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), F32))
    labels: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    polygons: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int32))
    polygon_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    polygon_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), F32))
    vertex_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vertex_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rles: list[Rle] = field(default_factory=list)
    rle_mask_indices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    rle_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rle_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.filenames)

    def sample_boxes(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """``(boxes (N, 4) float32, labels (N,) int32)`` of sample ``i``."""
        lo, n = int(self.offsets[i]), int(self.counts[i])
        return self.boxes[lo : lo + n].copy(), self.labels[lo : lo + n].copy()

    def sample_polygons(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """``(polygons (P, 3) int32, vertices (V, 2) float32)`` of sample ``i``."""
        if len(self.polygon_offsets) == 0:
            return np.zeros((0, 3), np.int32), np.zeros((0, 2), F32)
        p0, pn = int(self.polygon_offsets[i]), int(self.polygon_counts[i])
        v0, vn = int(self.vertex_offsets[i]), int(self.vertex_counts[i])
        return self.polygons[p0 : p0 + pn].copy(), self.vertices[v0 : v0 + vn].copy()

    def sample_rles(self, i: int) -> list[tuple[int, Rle]]:
        """``(mask index, rle)`` of sample ``i``'s RLE segmentations."""
        if len(self.rle_offsets) == 0:
            return []
        r0, rn = int(self.rle_offsets[i]), int(self.rle_counts[i])
        return [(int(self.rle_mask_indices[k]), self.rles[k]) for k in range(r0, r0 + rn)]


def _fail(path: str, message: str) -> PipelineDefinitionError:
    return PipelineDefinitionError(f"readers.coco: {path}: {message}")


def _number(value: Any, path: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(path, f"{what} must be a number, got {value!r}")
    return float(value)


def _rle_from_json(segm: dict[str, Any], path: str, ann_id: Any) -> Rle:
    size = segm.get("size")
    counts = segm.get("counts")
    if not (isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size)):
        raise _fail(path, f"annotation {ann_id}: an RLE segmentation needs 'size': [height, width], got {size!r}")
    h, w = size
    if isinstance(counts, str):
        runs = _decode_rle_string(counts, path, ann_id)
    elif isinstance(counts, list) and counts and all(isinstance(c, int) and c >= 0 for c in counts):
        runs = np.asarray(counts, dtype=np.uint32)
    else:
        raise _fail(path, f"annotation {ann_id}: missing or invalid RLE 'counts'")
    if int(runs.astype(np.int64).sum()) != h * w:
        raise _fail(path, f"annotation {ann_id}: RLE counts cover {int(runs.sum())} pixels, not {h}x{w}")
    return Rle(h, w, runs)


def _decode_rle_string(text: str, path: str, ann_id: Any) -> np.ndarray:
    """COCO's compressed RLE string (6 bits per character, runs after the second relative to two before)."""
    runs: list[int] = []
    p = 0
    data = text.encode("ascii", "replace")
    while p < len(data):
        x, k, more = 0, 0, True
        while more:
            if p >= len(data):
                raise _fail(path, f"annotation {ann_id}: truncated compressed RLE counts")
            c = data[p] - 48
            if not 0 <= c < 64:
                raise _fail(path, f"annotation {ann_id}: invalid character in compressed RLE counts")
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)
        if len(runs) > 2:
            x += runs[-2]
        if x < 0:
            raise _fail(path, f"annotation {ann_id}: invalid compressed RLE counts")
        runs.append(x)
    return np.asarray(runs, dtype=np.uint32)


def parse_coco_json(path: str, options: CocoOptions) -> CocoIndex:
    """Read an instances JSON file into a ``CocoIndex`` (see the module doc for the rules)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as err:
        raise _fail(path, f"cannot read the annotations file: {err.strerror or err}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise _fail(path, f"not a valid JSON file: {err}") from None
    if not isinstance(doc, dict):
        raise _fail(path, "expected a JSON object with 'images', 'annotations' and 'categories'")

    images: dict[str, dict[str, Any]] = {}
    ordered: list[tuple[int, str]] = []
    for entry in doc.get("images", []) or []:
        if not isinstance(entry, dict):
            continue
        try:
            info: dict[str, Any] = {"id": int(entry["id"]), "file_name": str(entry["file_name"]),
                    "width": int(entry["width"]), "height": int(entry["height"])}
        except (KeyError, TypeError, ValueError):
            raise _fail(path, f"an image entry needs id, file_name, width and height, got {entry!r}") from None
        images[info["file_name"]] = info
        ordered.append((info["id"], info["file_name"]))

    category_ids: dict[int, int] = {}
    for n, category in enumerate(c for c in doc.get("categories", []) or [] if isinstance(c, dict)):
        if "id" not in category:
            raise _fail(path, "missing category id in 'categories'")
        try:
            category_ids.setdefault(int(category["id"]), n + 1)
        except (TypeError, ValueError):
            raise _fail(path, f"category ids must be integers, got {category['id']!r}") from None

    per_image: dict[int, list[dict[str, Any]]] = {}
    for ann in doc.get("annotations", []) or []:
        if not isinstance(ann, dict):
            continue
        ann_id = ann.get("id", "?")
        box = ann.get("bbox", [0.0, 0.0, 0.0, 0.0])
        if not isinstance(box, list) or len(box) != 4:
            raise _fail(path, f"annotation {ann_id}: bbox must be [x, y, width, height], got {box!r}")
        box_f = np.array([_number(v, path, f"annotation {ann_id} bbox") for v in box], dtype=F32)
        if not (box_f[2] >= F32(options.size_threshold) and box_f[3] >= F32(options.size_threshold)):
            continue
        if not options.include_iscrowd and ann.get("iscrowd", 0):
            continue
        if "image_id" not in ann or "category_id" not in ann:
            raise _fail(path, f"annotation {ann_id}: needs image_id and category_id")
        try:
            cat, image_id = int(ann["category_id"]), int(ann["image_id"])
        except (TypeError, ValueError):
            raise _fail(path, f"annotation {ann_id}: image_id and category_id must be integers") from None
        if not options.avoid_class_remapping and cat not in category_ids:
            raise _fail(path, f"annotation {ann_id}: category_id {cat} is not in 'categories'")
        kept = {"label": cat if options.avoid_class_remapping else category_ids[cat], "box": box_f,
                "polygons": [], "rle": None, "id": ann_id}
        segm = ann.get("segmentation")
        if options.rles and isinstance(segm, dict):
            kept["rle"] = _rle_from_json(segm, path, ann_id)
        elif (options.polygons or options.rles) and isinstance(segm, list):
            for poly in segm:
                if not isinstance(poly, list) or len(poly) % 2:
                    raise _fail(path, f"annotation {ann_id}: a polygon must be a flat list of x, y pairs")
                kept["polygons"].append(
                    np.array([_number(v, path, f"annotation {ann_id} segmentation") for v in poly], F32).reshape(-1, 2))
        per_image.setdefault(image_id, []).append(kept)

    if options.images is None:
        names = [name for _, name in sorted(ordered, key=lambda t: t[0])]
    else:
        names = list(options.images)
    return _build_index(names, images, per_image, options)


def _build_index(names: list[str], images: dict[str, dict[str, Any]], per_image: dict[int, list[dict[str, Any]]],
                 options: CocoOptions) -> CocoIndex:
    idx = CocoIndex()
    boxes: list[np.ndarray] = []
    labels: list[int] = []
    offsets, counts, ids, heights, widths = [], [], [], [], []
    polygons: list[list[int]] = []
    vertices: list[np.ndarray] = []
    poly_off, poly_cnt, vert_off, vert_cnt = [], [], [], []
    rle_idx: list[int] = []
    rle_off, rle_cnt = [], []
    total = n_poly = n_vert = 0
    for name in names:
        info = images.get(name)
        if info is None:
            continue
        anns = per_image.get(info["id"], [])
        if options.skip_empty and not anns:
            continue
        w, h = F32(info["width"]), F32(info["height"])
        sample_poly: list[list[int]] = []
        sample_vert: list[np.ndarray] = []
        sample_rles = 0
        first_rle = len(idx.rles)
        nv = 0
        for k, ann in enumerate(anns):
            box = ann["box"].copy()
            if options.ltrb:
                box[2] = F32(box[0] + box[2])
                box[3] = F32(box[1] + box[3])
            if options.ratio:
                box = (box / np.array([w, h, w, h], F32)).astype(F32)
            boxes.append(box)
            labels.append(ann["label"])
            for poly in ann["polygons"]:
                sample_poly.append([k, nv, nv + len(poly)])
                nv += len(poly)
                sample_vert.append((poly / np.array([w, h], F32)).astype(F32) if options.ratio else poly)
            if ann["rle"] is not None:
                idx.rles.append(ann["rle"])
                rle_idx.append(k)
                sample_rles += 1
        offsets.append(total)
        counts.append(len(anns))
        total += len(anns)
        ids.append(info["id"])
        heights.append(info["height"])
        widths.append(info["width"])
        idx.filenames.append(name)
        polygons.extend(sample_poly)
        vertices.extend(sample_vert)
        poly_off.append(n_poly)
        poly_cnt.append(len(sample_poly))
        vert_off.append(n_vert)
        vert_cnt.append(nv)
        n_poly += len(sample_poly)
        n_vert += nv
        rle_off.append(first_rle)
        rle_cnt.append(sample_rles)
    idx.original_ids = np.asarray(ids, np.int32)
    idx.heights = np.asarray(heights, np.int32)
    idx.widths = np.asarray(widths, np.int32)
    idx.boxes = np.asarray(boxes, F32).reshape(-1, 4)
    idx.labels = np.asarray(labels, np.int32)
    idx.offsets = np.asarray(offsets, np.int32)
    idx.counts = np.asarray(counts, np.int32)
    if options.polygons or options.rles:
        idx.polygons = np.asarray(polygons, np.int32).reshape(-1, 3)
        idx.vertices = np.concatenate(vertices).astype(F32) if vertices else np.zeros((0, 2), F32)
        idx.polygon_offsets = np.asarray(poly_off, np.int64)
        idx.polygon_counts = np.asarray(poly_cnt, np.int64)
        idx.vertex_offsets = np.asarray(vert_off, np.int64)
        idx.vertex_counts = np.asarray(vert_cnt, np.int64)
    if options.rles:
        idx.rle_mask_indices = np.asarray(rle_idx, np.int32)
        idx.rle_offsets = np.asarray(rle_off, np.int64)
        idx.rle_counts = np.asarray(rle_cnt, np.int64)
    return idx


# --- DALI's preprocessed annotation files --------------------------------------------------------

_ARRAYS: dict[str, tuple[str, Any, int]] = {
    # attribute: (file, dtype, columns)
    "offsets": ("offsets.dat", np.int32, 1),
    "boxes": ("boxes.dat", F32, 4),
    "labels": ("labels.dat", np.int32, 1),
    "counts": ("counts.dat", np.int32, 1),
    "original_ids": ("original_ids.dat", np.int32, 1),
    "polygons": ("polygon_data.dat", np.int32, 3),
    "polygon_offsets": ("polygon_offset.dat", np.int64, 1),
    "polygon_counts": ("polygons_count.dat", np.int64, 1),
    "vertices": ("vertices.dat", F32, 2),
    "vertex_offsets": ("vertices_offset.dat", np.int64, 1),
    "vertex_counts": ("vertices_count.dat", np.int64, 1),
    "rle_mask_indices": ("masks_rles_idx.dat", np.int32, 1),
    "rle_offsets": ("masks_offset.dat", np.int64, 1),
    "rle_counts": ("mask_count.dat", np.int64, 1),
    "heights": ("heights.dat", np.int32, 1),
    "widths": ("widths.dat", np.int32, 1),
}
_POLYGON_ARRAYS = ("polygons", "polygon_offsets", "polygon_counts", "vertices", "vertex_offsets", "vertex_counts")
_RLE_ARRAYS = ("rle_mask_indices", "rle_offsets", "rle_counts", "heights", "widths")


def _array_names(*, polygons: bool, rles: bool, image_ids: bool) -> list[str]:
    """The ``CocoIndex`` arrays that the preprocessed files hold for these outputs."""
    names = ["offsets", "boxes", "labels", "counts"]
    if polygons or rles:
        names += list(_POLYGON_ARRAYS)
    if rles:
        names += list(_RLE_ARRAYS)
    if image_ids:
        names.append("original_ids")
    return names


def _write_array(path: str, values: np.ndarray, dtype: Any, columns: int) -> None:
    # boxes.dat counts floats (DALI keeps them in a flat vector), the others count entries
    rows = len(values) if columns > 1 and path.endswith(("polygon_data.dat", "vertices.dat")) else values.size
    if rows == 0:  # DALI writes no file for an empty table
        return
    with open(path, "wb") as f:
        f.write(np.uint32(rows).tobytes())
        f.write(np.ascontiguousarray(values, dtype=np.dtype(dtype).newbyteorder("<")).tobytes())


def _read_array(path: str, dtype: Any, columns: int) -> np.ndarray:
    if not os.path.exists(path):
        return np.zeros((0, columns) if columns > 1 else 0, dtype)
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4:
        raise PipelineDefinitionError(f"readers.coco: {path}: truncated preprocessed annotations file")
    rows = int(np.frombuffer(raw[:4], "<u4")[0])
    item = np.dtype(dtype).newbyteorder("<")
    flat = path.endswith("boxes.dat")  # a count of floats, not of boxes
    need = rows * (1 if flat else columns) * item.itemsize
    if len(raw) - 4 != need:
        raise PipelineDefinitionError(
            f"readers.coco: {path}: expected {need} bytes of data for {rows} entries, got {len(raw) - 4}")
    arr = np.frombuffer(raw[4:], item).astype(dtype)
    return arr.reshape(-1, columns) if columns > 1 else arr


def save_preprocessed(index: CocoIndex, folder: str, *, polygons: bool, rles: bool, image_ids: bool) -> None:
    """Write ``index`` as DALI's preprocessed annotation files into ``folder``."""
    try:
        os.makedirs(folder, exist_ok=True)
        for attr in _array_names(polygons=polygons, rles=rles, image_ids=image_ids):
            file, dtype, columns = _ARRAYS[attr]
            _write_array(os.path.join(folder, file), getattr(index, attr), dtype, columns)
        if index.filenames:
            with open(os.path.join(folder, "filenames.dat"), "w", encoding="utf-8") as f:
                f.writelines(name + "\n" for name in index.filenames)
        if rles and index.rles:
            with open(os.path.join(folder, "masks_rles.dat"), "wb") as f:
                f.write(np.uint32(len(index.rles)).tobytes())
                for rle in index.rles:
                    f.write(np.array([rle.height, rle.width, len(rle.counts)], "<u8").tobytes())
                    f.write(rle.counts.astype("<u4").tobytes())
    except OSError as err:
        raise PipelineDefinitionError(
            f"readers.coco: cannot save the preprocessed annotations to {folder!r}: {err.strerror or err}") from None


def load_preprocessed(folder: str, *, polygons: bool, rles: bool, image_ids: bool) -> CocoIndex:
    """Read DALI's preprocessed annotation files from ``folder``."""
    if not os.path.isdir(folder):
        raise PipelineDefinitionError(f"readers.coco: preprocessed_annotations {folder!r} is not a directory")
    idx = CocoIndex()
    names_file = os.path.join(folder, "filenames.dat")
    if not os.path.exists(names_file):
        raise PipelineDefinitionError(f"readers.coco: {names_file} is missing: not a preprocessed annotations folder")
    with open(names_file, encoding="utf-8") as f:
        idx.filenames = f.read().split()
    wanted = _array_names(polygons=polygons, rles=rles, image_ids=image_ids)
    for attr in wanted:
        file, dtype, columns = _ARRAYS[attr]
        setattr(idx, attr, _read_array(os.path.join(folder, file), dtype, columns))
    if rles:
        idx.rles = _read_rles(os.path.join(folder, "masks_rles.dat"))
    n = len(idx.filenames)
    for attr in wanted:
        file, _, columns = _ARRAYS[attr]
        if attr in ("boxes", "labels", "polygons", "vertices", "rle_mask_indices"):
            continue
        if len(getattr(idx, attr)) != n:
            raise PipelineDefinitionError(
                f"readers.coco: {os.path.join(folder, file)} has {len(getattr(idx, attr))} entries for {n} images")
    if int(idx.counts.sum()) != len(idx.boxes) or len(idx.labels) != len(idx.boxes):
        raise PipelineDefinitionError(f"readers.coco: {folder}: boxes.dat, labels.dat and counts.dat disagree")
    return idx


def _read_rles(path: str) -> list[Rle]:
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        raw = f.read()
    out: list[Rle] = []
    try:
        n = int(np.frombuffer(raw[:4], "<u4")[0])
        p = 4
        for _ in range(n):
            h, w, m = (int(v) for v in np.frombuffer(raw[p : p + 24], "<u8"))
            p += 24
            counts = np.frombuffer(raw[p : p + 4 * m], "<u4").astype(np.uint32)
            if len(counts) != m:
                raise ValueError
            p += 4 * m
            out.append(Rle(h, w, counts))
    except (ValueError, IndexError):
        raise PipelineDefinitionError(f"readers.coco: {path}: truncated RLE masks file") from None
    return out
