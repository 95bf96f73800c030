"""``readers.coco`` on a hand-made COCO set over tests/data's images (tests/data/coco/).

Every output is compared with DALI 2.4's CPU reader on the same files (exact:
boxes and vertices are float32 computed as DALI does); the preprocessed
annotation files are byte-identical to the ones DALI saves, and DALI's load here.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from dali_reference.record_detection import (
    CASES,
    COCO_ANNOTATIONS,
    COCO_CROWD,
    DATA,
    OUT,
    PREPROCESSED,
    assert_equal_outputs,
    replay,
)

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import MissingDependencyError, PipelineDefinitionError

READER_CASES = [n for n in CASES if n.startswith("coco_")]
IMAGE_SIZES = {5: (100, 100), 7: (225, 300), 13: (128, 128), 42: (427, 640), 99: (300, 451)}


@pytest.mark.parametrize("case", READER_CASES)
def test_matches_dali(case: str) -> None:
    if "pixelwise" in case:
        pytest.importorskip("pycocotools")
    assert_equal_outputs(*replay(case, fn, types, sf.pipeline_def))


def _run(batch_size: int = 5, epochs: int = 1, **kw):  # type: ignore[no-untyped-def]
    kw.setdefault("annotations_file", str(COCO_ANNOTATIONS))

    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=5)
    def pipe():  # type: ignore[no-untyped-def]
        return tuple(fn.readers.coco(file_root=str(DATA), name="Reader", **kw))

    out = []
    with pipe() as p:
        for _ in range(epochs):
            for batch in p.iter():
                out.append([[np.asarray(t.at(i)) for i in range(len(t))] for t in batch])
    return out


def test_images_are_the_files_and_decode_to_the_json_sizes() -> None:
    (images, boxes, labels, ids), = _run(image_ids=True)
    doc = json.loads(COCO_ANNOTATIONS.read_text())
    names = {im["id"]: im["file_name"] for im in doc["images"]}
    for data, image_id in zip(images, ids):
        assert data.dtype == np.uint8 and data.ndim == 1
        assert data.tobytes() == (DATA / names[int(image_id[0])]).read_bytes()

    @sf.pipeline_def(batch_size=5, num_threads=2, seed=5)
    def decoded():  # type: ignore[no-untyped-def]
        jpegs, _, _, image_ids = fn.readers.coco(file_root=str(DATA), annotations_file=str(COCO_ANNOTATIONS),
                                                 image_ids=True)
        return fn.decoders.image(jpegs), image_ids

    with decoded() as p:
        imgs, image_ids = p.run()
        for i in range(5):
            assert np.asarray(imgs.at(i)).shape[:2] == IMAGE_SIZES[int(np.asarray(image_ids.at(i))[0])]


def test_epoch_size_sharding_and_shuffling() -> None:
    @sf.pipeline_def(batch_size=2, num_threads=1, seed=5)
    def pipe(**kw):  # type: ignore[no-untyped-def]
        return tuple(fn.readers.coco(file_root=str(DATA), annotations_file=str(COCO_ANNOTATIONS),
                                     image_ids=True, name="Reader", **kw))[3]

    def ids(p, epochs=1):  # type: ignore[no-untyped-def]
        seen = []
        for _ in range(epochs):
            seen.append([int(np.asarray(b[0].at(i))[0]) for b in p.iter() for i in range(len(b[0]))])
        return seen

    with pipe(skip_empty=True) as p:
        assert p.epoch_size("Reader") == 4
    with pipe(num_shards=2, shard_id=1) as p:
        assert ids(p) == [[13, 42, 99]]  # ids sorted: shard 0 = 5 7, shard 1 = 13 42 99
    with pipe(random_shuffle=True) as a, pipe(random_shuffle=True) as b:
        ea, eb = ids(a, 2), ids(b, 2)
        assert ea == eb and sorted(ea[0]) == [5, 7, 13, 42, 99] and ea[0] != ea[1]
    with pipe(shuffle_after_epoch=True) as p, pipe(shuffle_after_epoch=True, num_shards=2, shard_id=1) as q:
        e0, e1, e2 = ids(p, 3)  # the whole set permuted every epoch, epoch 0 included (as DALI)
        assert sorted(e0) == sorted(e1) == sorted(e2) == [5, 7, 13, 42, 99] and len({tuple(e0), tuple(e1), tuple(e2)}) > 1
        assert ids(q)[0] == e0[2:]  # every rank permutes alike; shard 1 takes its part of the permutation
    with pytest.raises(PipelineDefinitionError, match="shuffle_after_epoch cannot be combined"):
        pipe(shuffle_after_epoch=True, random_shuffle=True)


def test_save_preprocessed_annotations_byte_identical_to_dali(tmp_path: Path) -> None:
    for folder, kw in PREPROCESSED.items():
        kw = dict(kw)
        annotations = kw.pop("annotations")
        if kw.get("pixelwise_masks"):
            pytest.importorskip("pycocotools")
        target = tmp_path / folder

        @sf.pipeline_def(batch_size=1, num_threads=1)
        def pipe():  # type: ignore[no-untyped-def]
            return tuple(fn.readers.coco(file_root=str(DATA), annotations_file=str(annotations),
                                         save_preprocessed_annotations=True,
                                         save_preprocessed_annotations_dir=str(target), **kw))[1]

        pipe()
        dali = OUT / folder
        assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in dali.iterdir())
        for f in dali.iterdir():
            assert (target / f.name).read_bytes() == f.read_bytes(), f"{folder}/{f.name}"


def test_loads_dali_preprocessed_annotations() -> None:
    from_json = _run(polygon_masks=True, image_ids=True, ratio=True, ltrb=True)
    loaded = _run(annotations_file="", preprocessed_annotations=str(OUT / "preprocessed_polygons"),
                  polygon_masks=True, image_ids=True)
    for a, b in zip(from_json[0], loaded[0]):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_pixelwise_from_dali_preprocessed_matches_json() -> None:
    pytest.importorskip("pycocotools")
    kw = dict(PREPROCESSED["preprocessed_pixelwise"])
    annotations = kw.pop("annotations")
    from_json = _run(batch_size=3, annotations_file=str(annotations), **kw)
    loaded = _run(batch_size=3, annotations_file="", pixelwise_masks=True,
                  preprocessed_annotations=str(OUT / "preprocessed_pixelwise"))
    for x, y in zip(from_json[0][3], loaded[0][3]):
        np.testing.assert_array_equal(x, y)
    masks = from_json[0][3]
    assert masks[1].shape == (128, 128, 1) and set(np.unique(masks[1])) == {0, 2, 5, 6}


def test_pixelwise_without_pycocotools_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pycocotools", None)
    with pytest.raises(Exception, match="pip install 'streamflow\\[coco\\]'") as info:
        _run(annotations_file=str(COCO_CROWD), pixelwise_masks=True, images=["jpeg-quirks/hopper.jpg"], batch_size=1)
    assert isinstance(info.value, MissingDependencyError) or isinstance(info.value.__cause__, MissingDependencyError)


def test_missing_image_is_a_per_sample_error(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(DATA / "photos", root / "photos")
    shutil.copytree(DATA / "jpeg-quirks", root / "jpeg-quirks")
    (root / "photos" / "rocket.jpg").unlink()

    @sf.pipeline_def(batch_size=5, num_threads=1, seed=1, on_error="skip")
    def pipe():  # type: ignore[no-untyped-def]
        return tuple(fn.readers.coco(file_root=str(root), annotations_file=str(COCO_ANNOTATIONS), image_ids=True))[3]

    with pipe() as p:
        batch = p.run()[0]
        ids = [int(np.asarray(batch.at(i))[0]) for i in range(5)]
        stats = p.stats()  # (the read stage may already be reading ahead: rocket fails in every epoch)
        assert 42 not in ids and len(ids) == 5 and stats.skipped_count >= 1
        assert all(s.source.endswith("rocket.jpg") and "not found" in s.reason for s in stats.skipped)


def test_bad_annotations(tmp_path: Path) -> None:
    def reader(**kw):  # type: ignore[no-untyped-def]
        kw.setdefault("file_root", str(DATA))
        return fn.readers.coco(**kw)

    with pytest.raises(PipelineDefinitionError, match="annotations_file .* is required"):
        reader()
    with pytest.raises(PipelineDefinitionError, match="cannot read the annotations file"):
        reader(annotations_file=str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(PipelineDefinitionError, match="bad.json: not a valid JSON file"):
        reader(annotations_file=str(bad))
    doc = json.loads(COCO_ANNOTATIONS.read_text())
    doc["annotations"][0]["category_id"] = 12345
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps(doc))
    with pytest.raises(PipelineDefinitionError, match="annotation 1: category_id 12345 is not in 'categories'"):
        reader(annotations_file=str(unknown))
    doc["annotations"][0]["category_id"] = 5
    doc["annotations"][0]["segmentation"] = [[1.0, 2.0, 3.0]]
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(doc))
    with pytest.raises(PipelineDefinitionError, match="a polygon must be a flat list of x, y pairs"):
        reader(annotations_file=str(odd), polygon_masks=True)
    with pytest.raises(PipelineDefinitionError, match="mutually exclusive"):
        reader(annotations_file=str(COCO_ANNOTATIONS), polygon_masks=True, pixelwise_masks=True)
    with pytest.raises(PipelineDefinitionError, match="no images to read"):
        reader(annotations_file=str(COCO_ANNOTATIONS), images=["nothing.jpg"])
    with pytest.raises(PipelineDefinitionError, match="file_root .*missing.* is not a directory"):
        reader(file_root=str(tmp_path / "missing"), annotations_file=str(COCO_ANNOTATIONS))
    with pytest.raises(PipelineDefinitionError, match="not a preprocessed annotations folder"):
        reader(preprocessed_annotations=str(tmp_path))
