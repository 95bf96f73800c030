"""Every ``fn`` function (and ``streamflow.math``) in dynamic mode, against the same operator in a pipeline.

The test walks ``fn``'s namespaces, so an operator added later is covered as
soon as it is exported; it needs an entry in ``CASES`` (inputs and
arguments), and ``test_every_fn_function_has_a_case`` fails until it has one.
Dynamic mode must give the pipeline's values bit for bit: same operator,
same implementation, and for random operators the same key
(``RNG(seed, position)`` at the operator's position in the pipeline's graph).
The same cases also run through a debug pipeline (``pipeline_def(debug=True)``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import DECODER_FILES, PHOTOS, QUIRKS, rand_image

import streamflow as sf
import streamflow.dynamic as ndd
from streamflow import fn
from streamflow import math as sfmath
from streamflow.dynamic.namespace import walk
from streamflow.graph import topological_order

SEED = 1234
IMGS = [rand_image(9, 13, seed=1), rand_image(11, 7, seed=2), rand_image(10, 10, seed=3)]
FLOATS = [np.linspace(0.1, 2.0, 12, dtype=np.float32).reshape(3, 4) * (i + 1) for i in range(3)]
ENCODED = [np.frombuffer(f.read_bytes(), dtype=np.uint8) for f in DECODER_FILES[:3]]


@dataclass
class Case:
    """How to call one function: its data inputs (batches), constant and per-sample arguments.

    ``inputs`` may be a function returning them (data made only when the case runs).
    """

    inputs: list[list[Any]] | Callable[[], list[list[Any]]] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    per_sample: dict[str, list[Any]] = field(default_factory=dict)
    positional: tuple[Any, ...] = ()
    batch_size: int = 3
    #: readers and external sources: keyword arguments from a temporary folder
    reader: Callable[[Path], dict[str, Any]] | None = None
    #: the layout of the data inputs (as external_source(layout=...) and as_batch(layout=...) give it)
    layout: str = ""
    #: the outputs to compare, from the function's result (for results that are not a node or a
    #: tuple of them, e.g. readers.tfrecord's dict); the same function takes nodes and dynamic results
    outputs: Callable[[Any], Any] | None = None
    #: optional modules the operator needs (the case is skipped without them)
    needs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if callable(self.inputs):
            make = self.inputs
            self.inputs = []
            self._make: Callable[[], list[list[Any]]] | None = make
        else:
            self._make = None

    def ready(self) -> Case:
        """The case with its inputs made."""
        if self._make is not None:
            self.inputs, self._make = self._make(), None
        return self


def _file_root(tmp: Path) -> dict[str, Any]:
    for label, files in (("a", [PHOTOS / "rocket.jpg", QUIRKS / "hopper.jpg"]),
                         ("b", [PHOTOS / "chelsea.png", QUIRKS / "flower2.jpg", PHOTOS / "retina.jpg"])):
        (tmp / label).mkdir(parents=True, exist_ok=True)
        for f in files:
            (tmp / label / f.name).write_bytes(f.read_bytes())
    return {"file_root": str(tmp), "random_shuffle": True}


def _npy_root(tmp: Path) -> dict[str, Any]:
    for i in range(5):
        np.save(tmp / f"x{i}.npy", np.arange(24, dtype=np.int16).reshape(2, 3, 4) + i)
    return {"file_root": str(tmp), "random_shuffle": True, "roi_start": (0, 1, 1), "roi_shape": (2, 2, 3)}


def _external(tmp: Path) -> dict[str, Any]:
    return {"source": [IMGS[:2], IMGS[1:], IMGS[:1]], "layout": "HWC"}


def _twice(x: Any) -> Any:
    return x * 2


def _torch_flip(x: Any) -> Any:
    import torch

    return torch.flip(x, dims=[0])


def _from_dlpack(x: Any) -> Any:
    import torch

    return torch.from_dlpack(x) + 1


_MAT = [0.9, 0.1, 1.0, -0.2, 1.1, 0.5]

CASES: dict[str, Case] = {
    "brightness_contrast": Case([IMGS], {"contrast": 1.3}, {"brightness": [0.5, 1.0, 1.5]}),
    "cast": Case([IMGS], {"dtype": "float32"}),
    "cat": Case([FLOATS, FLOATS[::-1]], {"axis": 1}),
    "color_space_conversion": Case([IMGS], {"image_type": "rgb", "output_type": "ycbcr"}),
    "color_twist": Case([IMGS], {"saturation": 1.4, "contrast": 0.7}, {"hue": [0.0, 30.0, -45.0]}),
    "crop": Case([IMGS], {"crop": (5, 6)}, {"crop_pos_x": [0.0, 0.5, 1.0]}),
    "crop_mirror_normalize": Case([IMGS], {"crop": (6, 6), "mean": [10.0, 20.0, 30.0], "std": [2.0, 3.0, 4.0]},
                                  {"mirror": [0, 1, 1]}),
    "decoders.image": Case([ENCODED]),
    "decoders.image_crop": Case([ENCODED], {"crop": (40, 30), "crop_pos_x": 0.2}),
    "decoders.image_random_crop": Case([ENCODED]),
    "decoders.image_slice": Case([ENCODED], positional=([0.1, 0.2], [0.5, 0.4])),
    "dl_tensor_python_function": Case([FLOATS], {"function": _from_dlpack}),
    "expand_dims": Case([FLOATS], {"axes": [0], "new_axis_names": "X"}),
    "external_source": Case(reader=_external, batch_size=2),
    "flip": Case([IMGS], {"vertical": 1}, {"horizontal": [0, 1, 1]}),
    "hsv": Case([IMGS], {"saturation": 0.5, "value": 1.1}, {"hue": [10.0, 0.0, 90.0]}),
    "hue": Case([IMGS], {}, {"hue": [10.0, -20.0, 90.0]}),
    "normalize": Case([FLOATS], {"axes": [1]}),
    "python_function": Case([FLOATS], {"function": _twice}),
    "random.choice": Case(positional=([3, 5, 7],), kwargs={"p": [0.2, 0.3, 0.5], "shape": [4]}),
    "random.coin_flip": Case(kwargs={"probability": 0.3}),
    "random.normal": Case(kwargs={"mean": 1.0, "stddev": 2.0, "shape": [2, 3]}),
    "random.uniform": Case(kwargs={"range": (2.0, 5.0)}),
    "random_resized_crop": Case([IMGS], {"size": (6, 5)}),
    "readers.file": Case(reader=_file_root, batch_size=2),
    "readers.numpy": Case(reader=_npy_root, batch_size=2),
    "reshape": Case([FLOATS], {"shape": [4, 3]}),
    "resize": Case([IMGS], {"resize_x": 7}, {"resize_y": [5.0, 8.0, 12.0]}),
    "rotate": Case([IMGS], {"fill_value": 0}, {"angle": [10.0, -30.0, 90.0]}),
    "saturation": Case([IMGS], {}, {"saturation": [0.0, 0.5, 2.0]}),
    "shapes": Case([IMGS]),
    "squeeze": Case([[f[None] for f in FLOATS]], {"axes": [0]}),
    "stack": Case([FLOATS, FLOATS], {"axis": 0}),
    "torch_python_function": Case([FLOATS], {"function": _torch_flip}),
    "transpose": Case([IMGS], {"perm": [2, 0, 1]}),
    "warp_affine": Case([IMGS], {"size": (8, 9), "fill_value": 7}, {"matrix": [_MAT, _MAT[::-1], _MAT]}),
}

# --- operators merged into main after this table was started (audio, sequences, geometry, video) ---
# Their data comes from main's test helpers and files, made only when a case runs.
_RNG = np.random.default_rng(5)
WAVES = [(np.sin(np.arange(n) * 0.05) * 0.5 + _RNG.normal(0, 0.05, n)).astype(np.float32) for n in (4000, 5200, 4600)]
SPECS = [np.abs(_RNG.normal(1.0, 0.5, (65, t))).astype(np.float32) + 1e-3 for t in (20, 24, 18)]
SEQS = [_RNG.integers(0, 256, (4, 6, 8, 3), dtype=np.uint8) for _ in range(3)]
_H = [1.0, 0.05, -2.0, -0.03, 1.0, 3.0, 0.001, 0.002, 1.0]


def _audio_files() -> list[list[Any]]:
    root = Path(__file__).parents[2] / "data" / "audio"
    return [[np.frombuffer((root / n).read_bytes(), np.uint8)
             for n in ("arctic_a0007.wav", "arctic_a0009.wav", "arctic_stereo_22k.flac")]]


def _video_files() -> list[list[Any]]:
    from video_clips import clip

    data = np.frombuffer(clip("h264").read_bytes(), np.uint8)
    return [[data, data]]


def _video_reader(tmp: Path) -> dict[str, Any]:
    from video_clips import clip

    return {"filenames": [str(clip("h264")), str(clip("vp9"))], "labels": [3, 5], "sequence_length": 4,
            "step": 9, "random_shuffle": True}


def _nemo_manifest(tmp: Path) -> dict[str, Any]:
    import json

    root = Path(__file__).parents[2] / "data" / "audio"
    entries = [{"audio_filepath": str(root / n), "duration": 1.0, "text": f"entry {i}"}
               for i, n in enumerate(["arctic_a0007.wav", "arctic_a0009.wav"] * 2)]
    (tmp / "m.json").write_text("".join(json.dumps(e) + "\n" for e in entries))
    return {"manifest_filepaths": [str(tmp / "m.json")], "random_shuffle": True}


def _maps() -> list[list[Any]]:
    out = []
    for img in IMGS:
        h, w = img.shape[:2]
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        out.append((xx * 0.9 + 0.7, yy * 1.1 - 0.4))
    return [IMGS, [m[0] for m in out], [m[1] for m in out]]


CASES.update({
    "audio_resample": Case([WAVES], {"scale": 0.7}),
    "decoders.audio": Case(_audio_files, {"downmix": True}),
    "decoders.video": Case(_video_files, {"frames": [0, 3, 7]}, batch_size=2),
    "element_extract": Case([SEQS], {"element_map": [2]}, layout="FHWC"),
    "erase": Case([IMGS], {"anchor": [2.0, 3.0], "shape": [4.0, 4.0], "axes": [0, 1], "fill_value": 7.0}),
    "experimental.decoders.image": Case([ENCODED]),
    "experimental.decoders.image_crop": Case([ENCODED], {"crop": (40, 30), "crop_pos_x": 0.2}),
    "experimental.decoders.image_random_crop": Case([ENCODED]),
    "experimental.decoders.image_slice": Case([ENCODED], positional=([0.1, 0.2], [0.5, 0.4])),
    "experimental.decoders.video": Case(_video_files, {"frames": [0, 3, 7]}, batch_size=2),
    "experimental.peek_image_shape": Case([ENCODED]),
    "experimental.readers.video": Case(reader=_video_reader, batch_size=2),
    "experimental.remap": Case(_maps),
    "experimental.warp_perspective": Case([IMGS], {"matrix": _H, "size": (9, 11)}),
    "mel_filter_bank": Case([SPECS], {"sample_rate": 16000.0, "nfilter": 20}, layout="ft"),
    "mfcc": Case([SPECS], {"n_mfcc": 12}, layout="ft"),
    "multi_paste": Case([IMGS], {"in_ids": [2, 0], "out_anchors": [[0, 0], [2, 2]], "shapes": [[4, 4], [2, 2]],
                                 "output_size": (10, 12)},
                        layout="HWC"),
    "nonsilent_region": Case([WAVES], {"cutoff_db": -20.0, "window_length": 256, "reset_interval": 1024}),
    "pad": Case([WAVES], {"fill_value": -1.0}),
    "paste": Case([IMGS], {"ratio": 2.0, "fill_value": 5}, {"paste_x": [0.0, 0.5, 1.0]}),
    "peek_image_shape": Case([ENCODED]),
    "per_frame": Case([[np.array([0, 1, 1, 0], np.int32)] * 3]),
    "permute_batch": Case([IMGS], {"indices": [2, 2, 0]}),
    "preemphasis_filter": Case([WAVES], {}, {"preemph_coeff": [0.9, 0.0, 0.97]}),
    "readers.nemo_asr": Case(reader=_nemo_manifest, batch_size=2),
    "readers.video": Case(reader=_video_reader, batch_size=2),
    "resize_crop_mirror": Case([IMGS], {"resize_x": 12, "resize_y": 10, "crop": (6, 7)}, {"mirror": [0, 1, 1]}),
    "roi_random_crop": Case([IMGS], {"crop_shape": [5, 6, 3], "roi_start": [1, 1, 0], "roi_end": [8, 7, 3]}),
    "sequence_rearrange": Case([SEQS], {"new_order": [3, 0, 0, 2]}, layout="FHWC"),
    "slice": Case([IMGS], {"start": [2, 1], "shape": [3, 4]}),
    "spectrogram": Case([WAVES], {"nfft": 64, "window_length": 64, "window_step": 32}),
    "to_decibels": Case([SPECS], {"cutoff_db": -80.0}),
})

# --- operators merged into main later (detection, augmentation, shard readers, io) ---------------
# Boxes, labels, masks and polygons made by hand as the operators' own tests make them; images are
# crops of the real photos of tests/data; shard files are written as tests/shard_writers.py writes them.
BOXES = [np.array([[0.1, 0.2, 0.4, 0.7], [0.5, 0.5, 0.9, 0.8]], np.float32),
         np.array([[0.0, 0.0, 0.3, 0.3]], np.float32),
         np.array([[0.2, 0.1, 0.6, 0.9], [0.05, 0.6, 0.35, 0.95], [0.4, 0.4, 0.5, 0.5]], np.float32)]
LABELS = [np.array([1, 7], np.int32), np.array([3], np.int32), np.array([2, 2, 5], np.int32)]
POINTS = [np.array([[0.1, 0.2], [0.7, 0.4]], np.float32), np.array([[0.5, 0.5]], np.float32),
          np.array([[0.0, 1.0], [0.3, 0.9], [1.0, 0.0]], np.float32)]
_ANCHORS = [0.0, 0.0, 0.5, 0.5, 0.5, 0.0, 1.0, 0.5, 0.0, 0.5, 0.5, 1.0, 0.5, 0.5, 1.0, 1.0,
            0.25, 0.25, 0.75, 0.75]
MEANS = [f.mean(axis=1, keepdims=True) for f in FLOATS]  # reductions.std_dev/variance take the mean as input
CLASSES = [np.array([[0, 3], [2, 1]], np.int32), np.array([4], np.int32), np.int32(1)]


def _masks() -> list[np.ndarray]:
    """Label images: blobs of several classes (the segmentation operators' test masks)."""
    a = np.zeros((8, 10), np.int32)
    a[1, 1] = a[2, 2] = 1
    a[1:3, 5:7] = 1
    a[5:8, 0:4] = 2
    b = np.zeros((6, 7), np.uint8)
    b[1, 2] = b[4, 5] = b[5, 0] = 9
    b[0:2, 4:7] = 3
    c = np.zeros((9, 9), np.int32)
    c[2:7, 2:7] = 4
    c[4, 4] = 0
    return [a, b.astype(np.int32), c]


def _photos() -> list[np.ndarray]:
    """Crops of real photos (HWC uint8), sizes differing per sample."""
    from PIL import Image

    out = []
    for path, (y, x, h, w) in ((QUIRKS / "hopper.jpg", (40, 30, 24, 32)), (PHOTOS / "chelsea.png", (90, 160, 30, 20)),
                               (PHOTOS / "rocket.jpg", (150, 280, 27, 27))):
        with Image.open(path) as im:
            out.append(np.ascontiguousarray(np.asarray(im.convert("RGB"))[y:y + h, x:x + w]))
    return out


def _photo_case(kwargs: dict[str, Any] | None = None, per_sample: dict[str, list[Any]] | None = None,
                dtype: Any = None, needs: tuple[str, ...] = ()) -> Case:
    def make() -> list[list[Any]]:
        photos = _photos()
        return [[p.astype(dtype) for p in photos] if dtype is not None else photos]

    return Case(make, kwargs or {}, per_sample or {}, layout="HWC", needs=needs)


def _select_masks_inputs() -> list[list[Any]]:
    polys = [np.array([[0, 0, 3], [1, 3, 7], [2, 7, 10], [1, 10, 13]], np.int32),
             np.array([[4, 0, 4], [6, 4, 9]], np.int32),
             np.array([[1, 0, 3]], np.int32)]
    verts = [np.arange(26, dtype=np.float32).reshape(13, 2), np.linspace(0, 1, 18, dtype=np.float32).reshape(9, 2),
             np.array([[0.1, 0.1], [0.5, 0.2], [0.3, 0.8]], np.float32)]
    ids = [np.array([2, 1], np.int32), np.array([6], np.int32), np.array([1], np.int32)]
    return [ids, polys, verts]


def _file_paths() -> list[list[Any]]:
    return [[np.frombuffer(str(f).encode(), np.uint8) for f in (QUIRKS / "hopper.jpg", PHOTOS / "retina.jpg",
                                                                 Path(__file__))]]


def _shard_samples() -> list[tuple[str, bytes, int]]:
    files = [QUIRKS / "hopper.jpg", QUIRKS / "flower2.jpg", PHOTOS / "rocket.jpg", QUIRKS / "pil_sample_rgb.jpg",
             PHOTOS / "retina.jpg"]
    return [(f"sample{i:03d}", f.read_bytes(), i % 3) for i, f in enumerate(files)]


def _webdataset(tmp: Path) -> dict[str, Any]:
    import shard_writers as W

    samples = _shard_samples()
    paths = []
    for i, part in enumerate((samples[:3], samples[3:])):
        W.write_wds(tmp / f"shard-{i}.tar", [(k, {"jpg": d, "cls": str(label).encode()}) for k, d, label in part])
        paths.append(str(tmp / f"shard-{i}.tar"))
    return {"paths": paths, "ext": ["jpg", "cls"], "random_shuffle": True, "initial_fill": 3}


_TFREC_KEYS = ("image/encoded", "image/class/label", "image/key")


def _tfrecord(tmp: Path) -> dict[str, Any]:
    import shard_writers as W

    import streamflow.tfrecord as tfrec

    index = W.write_tfrecord(tmp / "a.tfrecord", [
        W.example({"image/encoded": d, "image/class/label": np.array([label]), "image/key": k})
        for k, d, label in _shard_samples()])
    W.write_tfrecord_index(tmp / "a.idx", index)
    features = {"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
                "image/key": tfrec.FixedLenFeature([], tfrec.string, "")}
    return {"path": [str(tmp / "a.tfrecord")], "index_path": [str(tmp / "a.idx")], "features": features,
            "random_shuffle": True, "initial_fill": 3}


def _mxnet(tmp: Path) -> dict[str, Any]:
    import shard_writers as W

    W.write_recordio(tmp / "d.rec", tmp / "d.idx",
                     [W.irheader(float(label), i) + d for i, (_, d, label) in enumerate(_shard_samples())])
    return {"path": [str(tmp / "d.rec")], "index_path": [str(tmp / "d.idx")], "random_shuffle": True,
            "initial_fill": 3}


def _caffe(tmp: Path) -> dict[str, Any]:
    import shard_writers as W

    W.write_lmdb(tmp / "lmdb", [W.caffe_datum(d, label) for _, d, label in _shard_samples()])
    return {"path": str(tmp / "lmdb"), "random_shuffle": True, "initial_fill": 3}


def _caffe2(tmp: Path) -> dict[str, Any]:
    import shard_writers as W

    W.write_lmdb(tmp / "lmdb2", [W.caffe2_protos(W.caffe2_tensor(W.C2_STRING, strings=[d]),
                                                 W.caffe2_tensor(W.C2_INT32, ints=[label]))
                                 for _, d, label in _shard_samples()])
    return {"path": str(tmp / "lmdb2"), "random_shuffle": True, "initial_fill": 3}


def _coco(tmp: Path) -> dict[str, Any]:
    data = Path(__file__).parents[2] / "data"
    return {"file_root": str(data), "annotations_file": str(data / "coco" / "instances.json"), "ratio": True,
            "ltrb": True, "polygon_masks": True, "image_ids": True, "random_shuffle": True}


CASES.update({
    # detection
    "bb_flip": Case([BOXES], {"ltrb": True}, {"horizontal": [0, 1, 1], "vertical": [1, 0, 1]}),
    "bbox_paste": Case([BOXES], {"ltrb": True}, {"ratio": [2.0, 1.5, 3.0], "paste_x": [0.0, 0.5, 1.0]}),
    "bbox_rotate": Case([BOXES, LABELS], {"input_shape": [60, 80]}, {"angle": [10.0, -30.0, 90.0]}),
    "box_encoder": Case([BOXES, LABELS], {"anchors": _ANCHORS, "criteria": 0.4}),
    "coord_flip": Case([POINTS], {}, {"flip_x": [1, 0, 1], "flip_y": [0, 1, 1]}),
    "coord_transform": Case([POINTS], {"M": [0.5, -1.0, 2.0, 0.25], "T": [1.0, -3.0]}),
    "lookup_table": Case([CLASSES], {"keys": [0, 1, 2, 3], "values": [0.5, 1.5, -2.0, 9.0], "default_value": -1.0}),
    "one_hot": Case([CLASSES], {"num_classes": 6}),
    "random_bbox_crop": Case([BOXES, LABELS], {"thresholds": [0.1, 0.3, 0.5], "scaling": [0.3, 1.0],
                                               "aspect_ratio": [0.5, 2.0], "bbox_layout": "xyXY",
                                               "num_attempts": 10, "output_bbox_indices": True}),
    "readers.coco": Case(reader=_coco, batch_size=2),
    "segmentation.random_mask_pixel": Case(lambda: [_masks()], {"foreground": 1}),
    "segmentation.random_object_bbox": Case(lambda: [_masks()], {"format": "box", "output_class": True}),
    "segmentation.select_masks": Case(_select_masks_inputs, {"reindex_masks": True}),
    "transforms.combine": Case([[np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]], np.float32)] * 3,
                                [np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)] * 3],
                               {"reverse_order": True}),
    "transforms.crop": Case(kwargs={"from_start": [10.0, 20.0], "from_end": [30.0, 60.0], "to_end": [2.0, 3.0]}),
    "transforms.rotation": Case(kwargs={"center": [1.0, 0.0]}, per_sample={"angle": [90.0, -15.0, 33.0]}),
    "transforms.scale": Case([[np.array([[1.0, 0.5, 2.0], [0.0, 1.0, 0.0]], np.float32)] * 3],
                             {"center": [2.0, 1.0]}, {"scale": [np.float32([2.0, 3.0]), np.float32([0.5, 1.0]),
                                                                np.float32([1.0, -1.0])]}),
    "transforms.shear": Case(kwargs={"angles": [45.0, 0.0], "center": [1.0, 2.0]}),
    "transforms.translation": Case(kwargs={"offset": [1.0, -2.0]}),
    # augmentation
    "brightness": _photo_case({"brightness_shift": 0.1}, {"brightness": [0.5, 1.3, 2.0]}),
    "contrast": _photo_case({"contrast_center": 60.0}, {"contrast": [0.3, 1.5, 2.0]}),
    "constant": Case(kwargs={"fdata": [1.5, 2.5, 3.5, 4.5, 5.5, 6.5], "shape": [2, 3], "layout": "HW"}),
    "equalize": _photo_case(),
    "experimental.equalize": _photo_case(),
    "filter": _photo_case({"filter": np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32),
                           "border": "constant", "fill_value": np.uint8(77)}),
    "experimental.filter": _photo_case({"filter": np.full((3, 5), 1 / 15, np.float32), "dtype": "float32"}),
    "experimental.median_blur": _photo_case({}, {"window_size": [3, 5, 3]}),
    "gaussian_blur": _photo_case({"window_size": 5}, {"sigma": [0.8, 1.5, 3.0]}),
    "grid_mask": _photo_case({"ratio": 0.4, "angle": 0.3, "shift_x": 2.0}, {"tile": [8, 10, 12]}),
    "jpeg_compression_distortion": _photo_case({}, {"quality": [10, 50, 95]}),
    "laplacian": _photo_case({"window_size": 5, "normalized_kernel": True, "dtype": "float32"}),
    "noise.gaussian": _photo_case({"mean": 3.0, "stddev": 12.0}),
    "noise.salt_and_pepper": _photo_case({"salt_vs_pepper": 0.25, "per_channel": True}, {"prob": [0.05, 0.2, 0.5]}),
    "noise.shot": _photo_case({"factor": 4.0}),
    "random.beta": Case(kwargs={"alpha": 2.0, "beta": 0.5, "shape": [3], "dtype": "float64"}),
    "reductions.max": Case([FLOATS], {"axes": [1]}),
    "reductions.mean": Case([FLOATS], {"axes": [0], "keep_dims": True}),
    "reductions.mean_square": Case([FLOATS], {}),
    "reductions.min": Case([SEQS], {"axis_names": "HW"}, layout="FHWC"),
    "reductions.rms": Case([FLOATS], {"axes": [1]}),
    "reductions.std_dev": Case([FLOATS, MEANS], {"axes": [1], "keep_dims": True, "ddof": 1}),
    "reductions.sum": Case([SEQS], {"axis_names": "FC", "dtype": "uint64"}, layout="FHWC"),
    "reductions.variance": Case([FLOATS, MEANS], {"axes": [1]}),
    # readers of shard files, and files named by data
    "io.file.read": Case(_file_paths),
    "readers.caffe": Case(reader=_caffe, batch_size=2),
    "readers.caffe2": Case(reader=_caffe2, batch_size=2),
    "readers.mxnet": Case(reader=_mxnet, batch_size=2),
    "readers.tfrecord": Case(reader=_tfrecord, batch_size=2, outputs=lambda out: tuple(out[k] for k in _TFREC_KEYS)),
    "readers.webdataset": Case(reader=_webdataset, batch_size=2),
})

# --- operators of the breadth branch (utilities, morphology, displacement, Bayer, FITS, ...) ------
def _bayer(image: np.ndarray, blue: tuple[int, int]) -> np.ndarray:
    """The Bayer mosaic (H, W) of an RGB image, blue at ``blue`` of every 2x2 tile, red opposite."""
    out = image[..., 1].copy()
    by, bx = blue
    out[by::2, bx::2] = image[by::2, bx::2, 2]
    out[1 - by::2, 1 - bx::2] = image[1 - by::2, 1 - bx::2, 0]
    return out


def _bayer_inputs() -> list[list[Any]]:
    blues = ((0, 0), (1, 1), (0, 1))
    return [[_bayer(p[: p.shape[0] // 2 * 2, : p.shape[1] // 2 * 2], b) for p, b in zip(_photos(), blues)]]


def _deflated() -> list[list[Any]]:
    import zlib

    def deflate(a: np.ndarray) -> np.ndarray:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)  # raw deflate (no zlib header)
        return np.frombuffer(c.compress(a.tobytes()) + c.flush(), np.uint8)

    return [[deflate(p) for p in _photos()]]


def _npy_bytes() -> list[list[Any]]:
    import io

    out = []
    for a in (_photos()[0], FLOATS[1], np.asfortranarray(FLOATS[2].astype(np.float64))):
        buf = io.BytesIO()
        np.save(buf, a)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return [out]


def _fits_file(path: Path, image: np.ndarray) -> None:
    """A FITS file as the standard lays it out: an empty primary HDU, then an int16 image extension."""

    def value(v: Any) -> str:  # fixed format: strings from column 11, other values end at column 30
        return f"{v}" if isinstance(v, str) else f"{'T' if v is True else v:>20}"

    def header(cards: list[tuple[str, Any]]) -> bytes:
        text = "".join(f"{k:<8}= {value(v)}".ljust(80) for k, v in cards) + "END".ljust(80)
        return (text + " " * (-len(text) % 2880)).encode("ascii")

    h, w = image.shape
    data = image.astype(">i2").tobytes()
    path.write_bytes(header([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0), ("EXTEND", True)])
                     + header([("XTENSION", "'IMAGE   '"), ("BITPIX", 16), ("NAXIS", 2), ("NAXIS1", w),
                               ("NAXIS2", h), ("PCOUNT", 0), ("GCOUNT", 1)])
                     + data + b"\0" * (-len(data) % 2880))


def _fits(tmp: Path) -> dict[str, Any]:
    for i, photo in enumerate(_photos()):
        _fits_file(tmp / f"img{i}.fits", photo[..., 1].astype(np.int16) * (i + 1) - 200)
    return {"file_root": str(tmp), "random_shuffle": True}


def _frames(tmp: Path) -> dict[str, Any]:
    from PIL import Image

    for k, photo in enumerate(_photos()):
        (tmp / f"stream{k}").mkdir()
        for i in range(4 + k):
            Image.fromarray(np.ascontiguousarray(photo[i:i + 16, i:i + 14])).save(tmp / f"stream{k}" / f"{i:04d}.png")
    return {"file_root": str(tmp), "sequence_length": 3, "step": 2, "random_shuffle": True}


def _video_resize(tmp: Path) -> dict[str, Any]:
    return {**_video_reader(tmp), "resize_x": 40, "resize_y": 30}


FRAMES = [np.stack([w[i:i + 64] for i in range(0, 64 * 5, 64)]) for w in WAVES]  # (5, 64) windows


def _numba_double(out0: Any, in0: Any) -> None:
    for i in range(in0.shape[0]):
        for j in range(in0.shape[1]):
            out0[i, j] = in0[i, j] * 2


CASES.update({
    "experimental.numba_function": Case([FLOATS], {"run_fn": _numba_double, "out_types": ["float32"],
                                                   "in_types": ["float32"], "outs_ndim": [2], "ins_ndim": [2]},
                                        needs=("numba",)),
})


CASES.update({
    "batch_permutation": Case(kwargs={"no_fixed_points": True}, batch_size=5),
    "cast_like": Case([[f * 40 for f in FLOATS], LABELS]),
    "clahe": _photo_case({"tiles_x": 2, "tiles_y": 3, "clip_limit": 2.0}, needs=("cv2",)),
    "copy": _photo_case(),
    "debayer": Case(_bayer_inputs, {"algorithm": "bilinear_ocv"},
                    {"blue_position": [np.int32([0, 0]), np.int32([1, 1]), np.int32([0, 1])]}, needs=("cv2",)),
    "decoders.inflate": Case(_deflated, {"algorithm": "DEFLATE", "layout": "HWC"},
                             {"shape": [np.int32(p) for p in ((24, 32, 3), (30, 20, 3), (27, 27, 3))]}),
    "decoders.numpy": Case(_npy_bytes),
    "dump_image": _photo_case({"suffix": "dyn"}),  # writes .ppm files (the test runs in a temporary folder)
    "experimental.dilate": _photo_case({"iterations": 2, "border_mode": "wrap"}, needs=("cv2",)),
    "experimental.erode": _photo_case({}, {"mask_size": [np.int32([3, 3]), np.int32([5, 3]), np.int32([1, 4])]},
                                      needs=("cv2",)),
    "experimental.readers.fits": Case(reader=_fits, batch_size=2, needs=("astropy",)),
    "full": Case([[np.float32([1.5, -2.0, 3.0]), np.float32([0.0, 1.0, 2.0]), np.float32([7.0, 7.0, 7.0])]],
                 {"shape": [2, 3]}),
    "full_like": Case([FLOATS, [np.float32(1.5), np.float32(-2.0), np.float32([3.0, 4.0, 5.0, 6.0])]]),
    "get_property": _photo_case({"key": "layout"}),
    "jitter": _photo_case({"nDegree": 3, "fill_value": 9.0}),
    "ones": Case(kwargs={"shape": [2, 3], "dtype": "float32"}),
    "ones_like": Case([FLOATS], {"dtype": "int16"}),
    "power_spectrum": Case([FRAMES], {"nfft": 128, "power": 1}),
    "random_crop_generator": Case(lambda: [[np.int64(p.shape[:2]) for p in _photos()]],
                                  {"random_area": [0.2, 0.9], "num_attempts": 5}),
    "readers.sequence": Case(reader=_frames, batch_size=2),
    "readers.video_resize": Case(reader=_video_resize, batch_size=2),
    "reinterpret": Case([FLOATS], {"dtype": "int32", "shape": [4, 3]}),
    "sphere": _photo_case({"fill_value": 5.0}, {"mask": [1, 0, 1]}),
    "tensor_resize": _photo_case({"axes": [0, 1]}, {"sizes": [np.float32([12, 40]), np.float32([30, 10]),
                                                            np.float32([27, 27])]}),
    "water": _photo_case({"ampl_x": 3.0, "ampl_y": 2.0, "interp_type": "INTERP_LINEAR"}),
    "zeros": Case(kwargs={"shape": [4], "dtype": "uint8", "layout": "X"}),
    "zeros_like": _photo_case(),
})


#: Functions that cannot run in dynamic mode, each with why and the dynamic call that shows it (the
#: test makes the call and checks the error). Empty: every fn function runs in dynamic mode; add one
#: only when making it work is not possible (readers and whole-batch operators do work).
@dataclass
class Exclusion:
    reason: str
    call: Callable[[], Any]  # a dynamic call that raises ``error`` with a message matching ``match``
    error: type[BaseException]
    match: str


EXCLUDED: dict[str, Exclusion] = {}

FN_FUNCTIONS = {name: f for name, f in walk(fn) if not inspect.ismodule(f)}
MATH_FUNCTIONS = {name: f for name, f in walk(sfmath) if not inspect.ismodule(f)}


def case_name(name: str) -> str | None:
    """The CASES entry that covers fn function ``name``: its own, or the entry of a function it is an
    alias of (DALI's older names, ``experimental.*`` names of moved operators: the same object)."""
    if name in CASES:
        return name
    function = FN_FUNCTIONS[name]
    return next((other for other, f in FN_FUNCTIONS.items() if f is function and other in CASES), None)


def missing_cases() -> list[str]:
    """fn functions with no case (their own or an alias's) and no exclusion."""
    return sorted(n for n in FN_FUNCTIONS if case_name(n) is None and n not in EXCLUDED)


#: Other names of operators that have a case (tested in dynamic mode under their name, not again in debug).
ALIASES = {n: c for n in FN_FUNCTIONS if (c := case_name(n)) is not None and c != n}


def _math_case(name: str) -> Case:
    arity = len(inspect.signature(MATH_FUNCTIONS[name]).parameters)
    positive = [np.abs(f) * 0.4 + 0.1 for f in FLOATS]  # inside every domain (acosh: +1 below)
    inputs = [[p + 1.0 for p in positive]] if name == "acosh" else [positive]
    return Case(inputs * arity if name != "clamp" else [positive], {},
                positional=(0.3, 0.9) if name == "clamp" else ())


def _resolve(root: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


def _selected(case: Case, result: Any) -> Any:
    """The outputs of ``result`` the case compares (all of them unless ``case.outputs`` says)."""
    return case.outputs(result) if case.outputs is not None else result


def _as_tuple(result: Any) -> tuple[Any, ...]:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _pipeline(function: Callable[..., Any], case: Case) -> tuple[list[list[np.ndarray]], int]:
    """The outputs of one batch of ``function`` in a pipeline, and the operator's graph position."""
    n = len(case.inputs[0]) if case.inputs else case.batch_size
    captured: dict[str, Any] = {}

    @sf.pipeline_def(batch_size=n, num_threads=2, seed=SEED)
    def pipe():  # type: ignore[no-untyped-def]
        ins = [fn.external_source([list(col)], layout=case.layout or None) for col in case.inputs]
        args = {k: fn.external_source([list(v)]) for k, v in case.per_sample.items()}
        out = _selected(case, function(*ins, *case.positional, **case.kwargs, **args))
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        captured["count"] = len(outs)
        captured["outs"] = outs
        if not ins and not args:  # random operators: a source to drive the pipeline
            outs = (*outs, fn.external_source([[np.zeros(1)] * n]))
        return outs

    with pipe() as p:
        batch = p.run()
    position = topological_order(captured["outs"]).index(captured["outs"][0].producer)
    columns = [[np.asarray(t.at(i)) for i in range(len(t))] for t in batch[: captured["count"]]]
    return columns, position


def _dynamic(function: Callable[..., Any], case: Case, position: int) -> list[list[np.ndarray]]:
    args = {k: ndd.as_batch(v) for k, v in case.per_sample.items()}
    extra = {} if case.inputs else {"batch_size": case.batch_size}
    inputs = [ndd.as_batch(list(col), layout=case.layout) if case.layout else list(col) for col in case.inputs]
    out = _selected(case, function(*inputs, *case.positional, **case.kwargs, **args,
                                   rng=ndd.random.RNG(SEED, position=position), **extra))
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        assert isinstance(o, ndd.Batch), type(o)
    return [[np.asarray(s) for s in o.tensors] for o in outs]


def _same(got: list[list[np.ndarray]], want: list[list[np.ndarray]], what: str) -> None:
    assert len(got) == len(want), what
    for k, (g_col, w_col) in enumerate(zip(got, want)):
        assert len(g_col) == len(w_col), f"{what}: output {k}"
        for i, (g, w) in enumerate(zip(g_col, w_col)):
            assert g.shape == w.shape and g.dtype == w.dtype, f"{what}: output {k} sample {i}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
            assert np.array_equal(g, w, equal_nan=g.dtype.kind == "f"), f"{what}: output {k} sample {i} differs"


def _reader_epochs(tmp: Path, name: str, case: Case) -> None:
    """A dynamic reader reads the pipeline's batches (same seed: same shuffle), epoch after epoch."""
    assert case.reader is not None
    kwargs = case.reader(tmp)
    function = _resolve(fn, name)

    @sf.pipeline_def(batch_size=case.batch_size, num_threads=2, seed=SEED)
    def pipe():  # type: ignore[no-untyped-def]
        out = _selected(case, function(**kwargs))
        return tuple(out) if isinstance(out, (tuple, list)) else out

    reader = _resolve(ndd, name)(**kwargs, rng=SEED)
    assert isinstance(reader, ndd.Reader)
    with pipe() as p:
        for epoch in range(2):
            want = [[[np.asarray(t.at(i)) for i in range(len(t))] for t in b] for b in p.iter()]
            got = [[[np.asarray(s) for s in o.tensors] for o in _as_tuple(_selected(case, outs))]
                   for outs in reader.next_epoch(batch_size=case.batch_size)]
            assert len(got) == len(want) > 0
            for b, (g, w) in enumerate(zip(got, want)):
                _same(g, w, f"{name} epoch {epoch} batch {b}")
    reader.close()


def test_every_fn_function_has_a_case() -> None:
    missing = missing_cases()
    assert not missing, (f"fn functions without a dynamic-mode case in CASES: {missing} (drafts: "
                         "python tests/unit/dynamic/draft_cases.py; see docs/dynamic.md, 'Adding an operator')")
    assert len(FN_FUNCTIONS) >= 40  # the walk found the namespaces
    assert {"file_reader", "image_decoder", "experimental.filter"} <= set(ALIASES) | set(CASES)


def test_exclusions_hold() -> None:
    for name, why in EXCLUDED.items():
        assert name in FN_FUNCTIONS and name not in CASES, name
        assert len(why.reason) > 20, f"{name}: say why it cannot run in dynamic mode"
        with pytest.raises(why.error, match=why.match):
            why.call()


@pytest.mark.parametrize("name", sorted(FN_FUNCTIONS))
def test_dynamic_equals_pipeline(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if name in EXCLUDED:
        pytest.skip(f"fn.{name} is excluded from dynamic mode: {EXCLUDED[name].reason}")
    covered = case_name(name)
    if covered is None:
        pytest.fail(f"fn.{name} has no case in CASES: add its inputs and arguments")
    case = CASES[covered]
    for module in case.needs:
        pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)  # operators that write files (dump_image) write them there
    if case.reader is not None:
        _reader_epochs(tmp_path, name, case)
        return
    case.ready()
    want, position = _pipeline(FN_FUNCTIONS[name], case)
    got = _dynamic(_resolve(ndd, name), case, position)
    _same(got, want, name)


@pytest.mark.parametrize("name", sorted(MATH_FUNCTIONS))
def test_dynamic_math_equals_pipeline(name: str) -> None:
    case = _math_case(name)
    want, position = _pipeline(MATH_FUNCTIONS[name], case)
    _same(_dynamic(_resolve(ndd.math, name), case, position), want, f"math.{name}")


@pytest.mark.parametrize("name", sorted(n for n in FN_FUNCTIONS if n not in ALIASES))
def test_debug_pipeline_equals_pipeline(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same definition, with debug=True: the same batches."""
    if name in EXCLUDED:
        pytest.skip(f"fn.{name} is excluded from dynamic mode: {EXCLUDED[name].reason}")
    case = CASES.get(name)
    if case is None:
        pytest.fail(f"fn.{name} has no case in CASES: add its inputs and arguments")
    for module in case.needs:
        pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)
    function = FN_FUNCTIONS[name]
    case.ready()
    n = case.batch_size if not case.inputs else len(case.inputs[0])
    kwargs = case.reader(tmp_path) if case.reader is not None else case.kwargs

    def define():  # type: ignore[no-untyped-def]
        ins = [fn.external_source([list(col)], cycle=True, layout=case.layout or None) for col in case.inputs]
        args = {k: fn.external_source([list(v)], cycle=True) for k, v in case.per_sample.items()}
        out = _selected(case, function(*ins, *case.positional, **kwargs, **args))
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if case.reader is None and not ins and not args:
            outs = (*outs, fn.external_source([[np.zeros(1)] * n], cycle=True))
        return outs

    plain = sf.pipeline_def(define, batch_size=n, num_threads=2, seed=SEED)()
    debug = sf.pipeline_def(define, batch_size=n, num_threads=2, seed=SEED, debug=True)()
    with plain, debug:
        for b in range(2):
            want, got = plain.run(), debug.run()
            _same([[np.asarray(t.at(i)) for i in range(len(t))] for t in got],
                  [[np.asarray(t.at(i)) for i in range(len(t))] for t in want], f"{name} batch {b}")
