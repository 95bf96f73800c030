"""Pipelines that use what DALI's data-loading tutorials teach, written once for both libraries.

DALI's notebooks (``docs/examples/general/data_loading/*.ipynb``,
``debug_mode.ipynb``, the sharding part of ``multigpu.ipynb`` and the
``dynamic_mode.ipynb`` variants of the readers) were read to learn which
operators, arguments, call styles and iteration patterns a user following
them writes; the pipelines below are our own, on data the tests build from
``tests/data``. Each case is ``case(lib, data) -> {name: array}``: ``lib``
holds ``fn``, ``types``, ``pipeline_def``, ``tfrec`` and ``ndd`` of DALI or
of streamflow (only the imports differ), ``data`` the paths made by
:func:`build_data`.

``record_notebooks.py`` runs every case on DALI 2.4 (CPU, ``device_id=None``)
and stores the arrays in ``tests/data/dali/notebooks/notebooks.npz``;
``tests/integration/test_dali_data_notebooks.py`` runs them on streamflow and
compares (:data:`TOLERANCES`). Importable with numpy only (the writers of
``shard_writers.py`` import ``lmdb`` / ``webdataset`` when called).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import shard_writers as W  # tests/ is on sys.path: in the tests (conftest) and in record_notebooks.py

DATA = Path(__file__).resolve().parent.parent / "data"
Out = dict[str, np.ndarray]

#: Largest absolute difference allowed from DALI's arrays, by key prefix (exact where missing).
#: Image outputs of ``brightness_contrast`` and of ``resize`` are within 1 of DALI at rounding
#: ties (docs/dali-differences.md); normalized floats within 1 / std of that.
TOLERANCES = {
    "external_input/image": 1.0,
    "parallel_external_source/image": 1.0,
    "tfrecord/image": 1.0,
    "webdataset/image": 1.0 / (0.224 * 255) + 1e-5,
    "debug_mode/image": 1.0,
}


# --- the data sets ---------------------------------------------------------------------------
def build_data(root: Path) -> dict[str, Any]:
    """Write every data set the cases read under ``root``; return their paths."""
    root.mkdir(parents=True, exist_ok=True)
    data = W.build_reference(root / "shards", DATA)
    samples = W.reference_samples(DATA)
    images = root / "images"
    files = []
    for key, jpeg, label in samples:  # file_root with one folder per class
        path = images / f"class{label}" / f"{key}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg)
        files.append((str(path), label))
    data["images"] = str(images)
    data["files"] = files
    # A TFRecord with the features DALI's TFRecord tutorial reads: a class text and box coordinates.
    boxes = root / "boxes.tfrecord"
    index = W.write_tfrecord(boxes, [
        W.example({
            "image/encoded": jpeg,
            "image/class/label": np.array([label]),
            "image/class/text": f"class {label}",
            "image/object/bbox/xmin": np.arange(k % 3, dtype=np.float32) / 10 + 0.125,
            "image/object/bbox/ymin": np.arange(k % 3, dtype=np.float32) / 20 + 0.25,
        })
        for k, (_, jpeg, label) in enumerate(samples)
    ])
    W.write_tfrecord_index(root / "boxes.idx", index)
    data["boxes"], data["boxes_idx"] = str(boxes), str(root / "boxes.idx")
    # MRI slices as .npy files (one file per slice) and the whole volume in one file.
    volume = np.load(DATA / "volumes" / "anatomical.npy")[:, :, :, 0]
    (root / "npy_2d").mkdir()
    for i in range(5):
        np.save(root / "npy_2d" / f"{i}.npy", np.ascontiguousarray(volume[5 * i]))
    (root / "npy_2d" / "notes.txt").write_text("not an array")
    (root / "npy_3d").mkdir()
    np.save(root / "npy_3d" / "volume.npy", volume)
    np.save(root / "npy_3d" / "half.npy", np.ascontiguousarray(volume[::2, ::2]))
    data["npy_2d"], data["npy_3d"] = str(root / "npy_2d"), str(root / "npy_3d")
    data["coco_root"], data["coco_annotations"] = str(DATA), str(DATA / "coco" / "instances.json")
    return data


# --- helpers ---------------------------------------------------------------------------------
def digest(array: Any) -> np.ndarray:
    """The first 8 bytes of the SHA-256 of an array's bytes, as uint8 (compact exact check)."""
    a = np.ascontiguousarray(np.asarray(array))
    return np.frombuffer(hashlib.sha256(a.tobytes()).digest()[:8], np.uint8).copy()


def put(out: Out, key: str, value: Any) -> None:
    assert key not in out, key
    out[key] = np.asarray(value)


def exact(out: Out, key: str, array: Any) -> None:
    """A large array compared exactly, in a small file: its shape, dtype, sum and digest."""
    a = np.asarray(array)
    put(out, f"{key}/shape", a.shape)
    put(out, f"{key}/sum", a.sum(dtype=np.float64))
    put(out, f"{key}/digest", digest(a))
    put(out, f"{key}/dtype", np.frombuffer(a.dtype.str.encode(), np.uint8))


def thumb(image: np.ndarray) -> np.ndarray:
    """Every 16th row and column: enough pixels to compare decoded photos, in a small file."""
    return np.ascontiguousarray(np.asarray(image)[::16, ::16])


def tensor_list(out: Out, key: str, tl: Any, image: bool = False) -> None:
    """A TensorList's samples through ``len()`` and ``.at(i)``, as DALI's notebooks show them."""
    for i in range(len(tl)):
        sample = np.asarray(tl.at(i))
        put(out, f"{key}/{i}/shape", sample.shape)
        put(out, f"{key}/{i}", thumb(sample) if image else sample)


# --- external_input.ipynb --------------------------------------------------------------------
class FileBatches:
    """An iterator over (encoded images, labels) batches of a file list, as the tutorial's."""

    def __init__(self, files: list[tuple[str, int]], batch_size: int, epochs: int | None = None):
        self.files, self.batch_size, self.epochs = files, batch_size, epochs

    def __iter__(self) -> FileBatches:
        self.i, self.served = 0, 0
        return self

    def __next__(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        if self.epochs is not None and self.served >= self.epochs * len(self.files):
            raise StopIteration
        jpegs, labels = [], []
        for _ in range(self.batch_size):
            name, label = self.files[self.i]
            with open(name, "rb") as f:
                jpegs.append(np.frombuffer(f.read(), dtype=np.uint8))
            labels.append(np.array([label], dtype=np.uint8))
            self.i = (self.i + 1) % len(self.files)
            self.served += 1
        return jpegs, labels


def external_input(lib: Any, data: dict[str, Any]) -> Out:
    fn, types = lib.fn, lib.types
    out: Out = {}

    # The tutorial's style: Pipeline(...), a with block, set_outputs.
    pipe = lib.Pipeline(batch_size=3, num_threads=2, device_id=None, seed=12)
    with pipe:
        jpegs, labels = fn.external_source(source=FileBatches(data["files"], 3), num_outputs=2, dtype=types.UINT8)
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        pipe.set_outputs(fn.brightness_contrast(images, contrast=2), labels)
    pipe.build()
    for it in range(4):  # the iterator never ends: runs go on past the end of the file list
        images, labels = pipe.run()
        batch_cpu = images.as_cpu()
        tensor_list(out, f"external_input/image/{it}", batch_cpu, image=True)
        put(out, f"external_input/labels/{it}", labels.as_tensor())
        put(out, f"external_input/labels_at2/{it}", labels.at(2))

    # An iterator that ends: run() raises StopIteration, reset() starts it again.
    @lib.pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def finite_pipe():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.external_source(source=FileBatches(data["files"], 4, epochs=1), num_outputs=2)
        return labels, fn.shapes(jpegs)

    pipe = finite_pipe()
    pipe.build()
    # One epoch: DALI 2.4 never restarts an exhausted iterable without cycle="raise" (every later run()
    # raises StopIteration); streamflow starts it again with the next epoch (docs/dali-differences.md).
    for epoch in range(1):
        runs = 0
        try:
            while True:
                labels, shapes = pipe.run()
                put(out, f"external_input/finite/{epoch}/{runs}", labels.as_array())
                put(out, f"external_input/finite_shapes/{epoch}/{runs}", shapes.as_array())
                runs += 1
        except StopIteration:
            pipe.reset()
        put(out, f"external_input/finite_runs/{epoch}", runs)

    # cycle: a list of batches read again and again (True / "quiet"), or once per reset ("raise").
    batches = [[np.full((2, k + 1), 10 * b + k, np.int16) for k in range(2)] for b in range(3)]
    for cycle in (True, "quiet", "raise"):
        @lib.pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def cycle_pipe():  # type: ignore[no-untyped-def]
            return fn.external_source(source=batches, cycle=cycle, layout="HW") * 2

        pipe = cycle_pipe()
        pipe.build()
        seen = []
        for _ in range(7):
            try:
                (x,) = pipe.run()
                seen.append(int(np.asarray(x.at(0))[0, 0]))
                assert x.layout() == "HW"
            except StopIteration:
                seen.append(-1)
                pipe.reset()
        put(out, f"external_input/cycle/{cycle}", seen)

    # A callable without arguments gives one batch per call.
    counter = iter(range(100))

    @lib.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def callable_pipe():  # type: ignore[no-untyped-def]
        return fn.external_source(source=lambda: np.full((2, 3), next(counter), np.float32), batch=True)

    pipe = callable_pipe()
    pipe.build()
    for it in range(2):
        (x,) = pipe.run()
        put(out, f"external_input/callable/{it}", x.as_tensor())
    return out


# --- parallel_external_source.ipynb ----------------------------------------------------------
class FileSamples:
    """Sample ``idx_in_epoch`` of a file list, or StopIteration past its end (picklable)."""

    def __init__(self, files: list[tuple[str, int]]):
        self.files = files

    def __call__(self, sample_info: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if sample_info.idx_in_epoch >= len(self.files):
            raise StopIteration()
        name, label = self.files[sample_info.idx_in_epoch]
        with open(name, "rb") as f:
            encoded = np.frombuffer(f.read(), dtype=np.uint8)
        info = [sample_info.idx_in_epoch, sample_info.idx_in_batch, sample_info.iteration, sample_info.epoch_idx]
        return encoded, np.int32([label]), np.int32(info)


def batch_of_info(batch_info: Any) -> list[np.ndarray]:
    """A batch callback with ``batch_info=True``: two iterations per epoch."""
    if batch_info.iteration >= 2:
        raise StopIteration()
    return [np.int32([batch_info.iteration, batch_info.epoch_idx, k]) for k in range(2)]


def batch_generator() -> Any:
    """A generator function: a new generator for every epoch."""
    for i in range(2):
        yield [np.full((2,), 10 * i + k, np.int64) for k in range(2)]


def _epochs(pipe: Any, out: Out, key: str, epochs: int = 2, image: bool = False) -> None:
    for epoch in range(epochs):
        runs = 0
        try:
            while True:
                outs = pipe.run()
                for j, o in enumerate(outs):
                    if image and j == 0:  # decoded photos: under <case>/image/... (compared within 1)
                        case, rest = key.split("/", 1)
                        tensor_list(out, f"{case}/image/{rest}/{epoch}/{runs}", o, image=True)
                    else:
                        put(out, f"{key}/o{j}/{epoch}/{runs}", o.as_array())
                runs += 1
        except StopIteration:
            pipe.reset()
        put(out, f"{key}/runs/{epoch}", runs)


def parallel_external_source(lib: Any, data: dict[str, Any]) -> Out:
    fn, types = lib.fn, lib.types
    out: Out = {}
    files = data["files"][:7]  # 7 samples, batches of 3: the last batch is short
    for parallel in (False, True):
        kw = {"parallel": True} if parallel else {}

        @lib.pipeline_def(batch_size=3, num_threads=2, device_id=None, py_num_workers=2, py_start_method="spawn")
        def sample_pipe():  # type: ignore[no-untyped-def]
            jpegs, labels, info = fn.external_source(source=FileSamples(files), num_outputs=3, batch=False,
                                                     dtype=[types.UINT8, types.INT32, types.INT32], **kw)
            images = fn.decoders.image(jpegs, device="cpu")
            return fn.brightness_contrast(images, contrast=2), labels, info

        pipe = sample_pipe()
        pipe.build()
        _epochs(pipe, out, f"parallel_external_source/p{int(parallel)}", image=True)

    @lib.pipeline_def(batch_size=2, num_threads=2, device_id=None, py_num_workers=2, py_start_method="spawn")
    def batch_info_pipe():  # type: ignore[no-untyped-def]
        a = fn.external_source(source=batch_of_info, batch=True, batch_info=True, parallel=True)
        b = fn.external_source(source=batch_generator, batch=True, parallel=True, cycle="raise")
        return a, b

    pipe = batch_info_pipe()
    pipe.build()
    _epochs(pipe, out, "parallel_external_source/batch_info")
    return out


# --- numpy_reader (pipeline mode and dynamic mode) ------------------------------------------
NUMPY_ROIS: list[dict[str, Any]] = [
    {},
    {"roi_start": [2, 5, 3], "roi_end": [10, 20, 20]},
    {"roi_start": [2, 5], "roi_shape": [7, 9], "roi_axes": [1, 2]},
    {"rel_roi_start": [0.1, 0.2], "rel_roi_end": [0.6, 0.9], "roi_axes": [1, 2]},
    {"roi_start": [-3, 30], "roi_end": [7, 45], "roi_axes": [0, 2], "out_of_bounds_policy": "pad", "fill_value": 7},
    {"roi_start": [20, 0, 0], "roi_end": [30, 50, 10], "out_of_bounds_policy": "trim_to_shape"},
]


def numpy_reader(lib: Any, data: dict[str, Any]) -> Out:
    fn = lib.fn
    out: Out = {}

    def slices_pipe(reader: dict[str, Any]) -> Any:
        @lib.pipeline_def(batch_size=2, num_threads=2, device_id=None)
        def numpy_pipe():  # type: ignore[no-untyped-def]
            return fn.readers.numpy(device="cpu", name="Reader", **reader)

        pipe = numpy_pipe()
        pipe.build()
        return pipe

    cases = {
        "filter": {"file_root": data["npy_2d"], "file_filter": "*.npy"},
        "files": {"file_root": data["npy_2d"], "files": ["3.npy", "0.npy", "4.npy"]},
    }
    for name, reader in cases.items():
        pipe = slices_pipe(reader)
        put(out, f"numpy_reader/{name}/meta", _meta(pipe.reader_meta("Reader")))
        for it in range(3):
            (arrays,) = pipe.run()
            exact(out, f"numpy_reader/{name}/{it}", arrays.as_tensor())
    for k, roi in enumerate(NUMPY_ROIS):
        pipe = slices_pipe({"file_root": data["npy_3d"], "file_filter": "*.npy", **roi})
        (arrays,) = pipe.run()
        for i in range(len(arrays)):
            exact(out, f"numpy_reader/roi{k}/{i}", arrays.at(i))
    return out


def _meta(meta: dict[str, Any]) -> np.ndarray:
    keys = ["epoch_size", "epoch_size_padded", "number_of_shards", "shard_id", "pad_last_batch", "stick_to_shard"]
    return np.array([int(meta[k]) for k in keys], np.int64)


def numpy_reader_dynamic(lib: Any, data: dict[str, Any]) -> Out:
    ndd = lib.ndd
    out: Out = {}
    reader = ndd.readers.Numpy(file_root=data["npy_2d"], file_filter="*.npy")
    # One epoch: 5 files in batches of 2. DALI 2.4 fills the last batch with the next epoch's first
    # file and starts the next epoch after it; streamflow's epochs end with the data (a short batch).
    for it, batch in enumerate(reader.next_epoch(batch_size=2)):
        (arrays,) = batch if isinstance(batch, tuple) else (batch,)
        for i, t in enumerate(arrays):
            exact(out, f"numpy_reader_dynamic/{it}/{i}", np.asarray(t))
    # With pad_last_batch (the last file repeated) both libraries give whole batches and equal epochs.
    for shard_id in range(2):
        reader = ndd.readers.Numpy(file_root=data["npy_2d"], file_filter="*.npy", pad_last_batch=True,
                                   shard_id=shard_id, num_shards=2)
        for epoch in range(2):
            for it, (arrays,) in enumerate(reader.next_epoch(batch_size=2)):
                sums = [np.asarray(t).sum(dtype=np.int64) for t in arrays]
                put(out, f"numpy_reader_dynamic/padded/{shard_id}/{epoch}/{it}", sums)
    for k, roi in enumerate(NUMPY_ROIS[1:4], start=1):
        reader = ndd.readers.Numpy(file_root=data["npy_3d"], file_filter="*.npy", **roi)
        for i, sample in enumerate(reader.next_epoch()):
            (array,) = sample if isinstance(sample, tuple) else (sample,)
            exact(out, f"numpy_reader_dynamic/roi{k}/{i}", np.asarray(array))
    return out


# --- dataloading_tfrecord.ipynb (pipeline and dynamic mode) ----------------------------------
def tfrecord_features(tfrec: Any) -> dict[str, Any]:
    return {
        "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
        "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
        "image/class/text": tfrec.FixedLenFeature([], tfrec.string, ""),
        "image/object/bbox/xmin": tfrec.VarLenFeature(tfrec.float32, 0.0),
        "image/object/bbox/ymin": tfrec.VarLenFeature(tfrec.float32, 0.0),
    }


def tfrecord(lib: Any, data: dict[str, Any]) -> Out:
    fn, types = lib.fn, lib.types
    out: Out = {}

    @lib.pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def tfrecord_pipeline():  # type: ignore[no-untyped-def]
        inputs = fn.readers.tfrecord(path=data["boxes"], index_path=data["boxes_idx"],
                                     features=tfrecord_features(lib.tfrec), name="Reader")
        images = fn.decoders.image(inputs["image/encoded"], device="cpu", output_type=types.RGB)
        resized = fn.resize(images, resize_shorter=40.0)
        normalized = fn.crop_mirror_normalize(resized, dtype=types.FLOAT, crop=(32, 32),
                                              mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0])
        return (normalized, inputs["image/class/label"], inputs["image/class/text"],
                inputs["image/object/bbox/xmin"], inputs["image/object/bbox/ymin"])

    pipe = tfrecord_pipeline()
    pipe.build()
    put(out, "tfrecord/epoch_size", pipe.epoch_size("Reader"))
    for it in range(3):
        images, labels, text, xmin, ymin = pipe.run()
        put(out, f"tfrecord/image/{it}", images.as_tensor())
        put(out, f"tfrecord/label/{it}", labels.as_tensor())
        tensor_list(out, f"tfrecord/text/{it}", text)
        tensor_list(out, f"tfrecord/xmin/{it}", xmin)
        tensor_list(out, f"tfrecord/ymin/{it}", ymin)
    return out


def tfrecord_dynamic(lib: Any, data: dict[str, Any]) -> Out:
    ndd = lib.ndd
    out: Out = {}
    reader = ndd.readers.TFRecord(path=data["boxes"], index_path=data["boxes_idx"],
                                  features=tfrecord_features(lib.tfrec))
    for it, batch in enumerate(reader.next_epoch(batch_size=3)):
        images = ndd.decoders.image(batch["image/encoded"])
        labels = np.asarray(ndd.as_tensor(batch["image/class/label"]))  # a dense batch: one array
        for i, image in enumerate(images):
            key = f"tfrecord_dynamic/{it}/{i}"
            put(out, f"{key}/shape", np.asarray(image).shape)
            put(out, f"{key}/label", labels[i])
            put(out, f"{key}/text", np.asarray(batch["image/class/text"].tensors[i]))
            put(out, f"{key}/xmin", np.asarray(batch["image/object/bbox/xmin"].tensors[i]))
    return out


# --- dataloading_webdataset.ipynb / webdataset.ipynb (pipeline and dynamic mode) -------------
def webdataset(lib: Any, data: dict[str, Any]) -> Out:
    fn, types = lib.fn, lib.types
    out: Out = {}

    @lib.pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def wds_pipeline():  # type: ignore[no-untyped-def]
        img, cls = fn.readers.webdataset(paths=data["wds"], ext=["jpg", "cls"],
                                         missing_component_behavior="error", name="Reader")
        images = fn.decoders.image(img, device="cpu", output_type=types.RGB)
        resized = fn.resize(images, resize_x=24, resize_y=24)
        normalized = fn.crop_mirror_normalize(resized, dtype=types.FLOAT, output_layout="CHW",
                                              mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                              std=[0.229 * 255, 0.224 * 255, 0.225 * 255])
        return normalized, cls

    pipe = wds_pipeline()
    pipe.build()
    put(out, "webdataset/meta", _meta(pipe.reader_meta("Reader")))
    for it in range(3):
        images, cls = pipe.run()
        put(out, f"webdataset/image/{it}", images.as_array())
        tensor_list(out, f"webdataset/cls/{it}", cls)
    return out


def webdataset_dynamic(lib: Any, data: dict[str, Any]) -> Out:
    ndd = lib.ndd
    out: Out = {}
    reader = ndd.readers.Webdataset(paths=data["wds"], ext=["jpg", "cls"])
    for it, (jpegs, cls) in enumerate(reader.next_epoch(batch_size=3)):
        images = ndd.decoders.image(jpegs)
        for i, (image, c) in enumerate(zip(images, cls)):
            put(out, f"webdataset_dynamic/{it}/{i}/shape", np.asarray(image).shape)
            put(out, f"webdataset_dynamic/{it}/{i}/cls", np.asarray(c))
    return out


# --- dataloading_recordio.ipynb (pipeline and dynamic mode) ---------------------------------
def recordio(lib: Any, data: dict[str, Any]) -> Out:
    fn, types = lib.fn, lib.types
    out: Out = {}

    @lib.pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def recordio_pipeline():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.mxnet(path=[data["rec"]], index_path=[data["rec_idx"]],
                                         random_shuffle=False, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        cropped = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="HWC", crop=(24, 24),
                                           crop_pos_x=0.25, crop_pos_y=0.75,
                                           mean=[0.0, 0.0, 0.0], std=[255.0, 255.0, 255.0])
        return cropped, labels, fn.shapes(jpegs)

    pipe = recordio_pipeline()
    pipe.build()
    put(out, "recordio/epoch_size", pipe.epoch_size("Reader"))
    for it in range(3):
        images, labels, sizes = pipe.run()
        put(out, f"recordio/image/{it}", images.as_tensor())
        put(out, f"recordio/labels/{it}", labels.as_array())
        put(out, f"recordio/sizes/{it}", sizes.as_array())
    return out


def recordio_dynamic(lib: Any, data: dict[str, Any]) -> Out:
    ndd = lib.ndd
    out: Out = {}
    reader = ndd.readers.MXNet(path=[data["rec"]], index_path=[data["rec_idx"]])
    for it, (jpegs, labels) in enumerate(reader.next_epoch(batch_size=3)):
        images = ndd.decoders.image(jpegs)
        for i, (image, label) in enumerate(zip(images, labels)):
            put(out, f"recordio_dynamic/{it}/{i}/digest", digest(image))
            put(out, f"recordio_dynamic/{it}/{i}/label", np.asarray(label))
    return out


# --- dataloading_lmdb.ipynb ------------------------------------------------------------------
def lmdb(lib: Any, data: dict[str, Any]) -> Out:
    fn, types = lib.fn, lib.types
    out: Out = {}
    for name, reader in (("caffe", fn.readers.caffe), ("caffe2", fn.readers.caffe2)):
        @lib.pipeline_def(batch_size=3, num_threads=2, device_id=None)
        def lmdb_pipeline():  # type: ignore[no-untyped-def]
            jpegs, labels = reader(path=data[name], name="Reader")
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            output = fn.crop_mirror_normalize(images, dtype=types.FLOAT, crop=(20, 20),
                                              mean=[0.0, 0.0, 0.0], std=[255.0, 255.0, 255.0], mirror=1)
            return output, labels

        pipe = lmdb_pipeline()
        pipe.build()
        put(out, f"lmdb/{name}/meta", _meta(pipe.reader_meta("Reader")))
        for it in range(3):
            images, labels = pipe.run()
            put(out, f"lmdb/{name}/image/{it}", images.as_tensor())
            put(out, f"lmdb/{name}/labels/{it}", labels.as_tensor())
    return out


# --- coco_reader (pipeline mode and dynamic mode) --------------------------------------------
def coco(lib: Any, data: dict[str, Any]) -> Out:
    fn, types = lib.fn, lib.types
    out: Out = {}

    @lib.pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def coco_pipeline():  # type: ignore[no-untyped-def]
        inputs, bboxes, labels, polygons, vertices, image_ids = fn.readers.coco(
            file_root=data["coco_root"], annotations_file=data["coco_annotations"], skip_empty=True,
            shard_id=0, num_shards=1, ratio=True, ltrb=True, polygon_masks=True, image_ids=True, name="Reader")
        images = fn.decoders.image(inputs, device="cpu", output_type=types.RGB)
        return fn.shapes(images), bboxes, labels, polygons, vertices, image_ids

    pipe = coco_pipeline()
    pipe.build()
    put(out, "coco/meta", _meta(pipe.reader_meta("Reader")))
    names = ["shapes", "bboxes", "labels", "polygons", "vertices", "image_ids"]
    for it in range(3):
        for name, tl in zip(names, pipe.run()):
            tensor_list(out, f"coco/{name}/{it}", tl)

    @lib.pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def masks_pipeline():  # type: ignore[no-untyped-def]
        inputs, bboxes, labels, masks = fn.readers.coco(
            file_root=data["coco_root"], annotations_file=data["coco_annotations"], pixelwise_masks=True)
        return fn.decoders.image(inputs, device="cpu").shape(), masks, labels

    pipe = masks_pipeline()
    pipe.build()
    for it in range(3):
        shapes, masks, labels = pipe.run()
        put(out, f"coco/masks/{it}/shapes", shapes.as_array())
        for i in range(len(masks)):
            exact(out, f"coco/masks/{it}/{i}", masks.at(i))
    return out


def coco_dynamic(lib: Any, data: dict[str, Any]) -> Out:
    ndd = lib.ndd
    out: Out = {}
    reader = ndd.readers.COCO(file_root=data["coco_root"], annotations_file=data["coco_annotations"],
                              ratio=True, ltrb=True, image_ids=True)
    for i, (jpeg, bboxes, labels, image_id) in enumerate(reader.next_epoch()):
        put(out, f"coco_dynamic/{i}/digest", digest(jpeg))
        put(out, f"coco_dynamic/{i}/bboxes", np.asarray(bboxes))
        put(out, f"coco_dynamic/{i}/labels", np.asarray(labels))
        put(out, f"coco_dynamic/{i}/image_id", np.asarray(image_id))
    reader = ndd.readers.COCO(file_root=data["coco_root"], annotations_file=data["coco_annotations"],
                              ratio=True, ltrb=True, image_ids=True)  # batches: another reader (as in DALI)
    for it, (jpegs, bboxes, labels, image_ids) in enumerate(reader.next_epoch(batch_size=2)):
        for i, (image_id, boxes) in enumerate(zip(image_ids, bboxes)):
            put(out, f"coco_dynamic/batch/{it}/{i}/id", np.asarray(image_id))
            put(out, f"coco_dynamic/batch/{it}/{i}/boxes", np.asarray(boxes).shape)
    return out


# --- debug_mode.ipynb ------------------------------------------------------------------------
def debug_mode(lib: Any, data: dict[str, Any]) -> Out:
    fn, types = lib.fn, lib.types
    out: Out = {}
    seen: list[np.ndarray] = []

    # DALI 2.4's debug mode needs a CUDA driver even for CPU operators: recorded without debug only;
    # the test compares streamflow's debug run with DALI's run of the same definition.
    for debug_run in lib.debug_runs:
        @lib.experimental_pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=5, debug=debug_run)
        def file_pipeline():  # type: ignore[no-untyped-def]
            jpegs, labels = fn.readers.file(file_root=data["images"], random_shuffle=False, name="Reader")
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images = fn.resize(images, resize_x=32, resize_y=24)
            if debug_run:  # in debug mode the outputs hold data: .get() is a TensorList
                got = labels.get()
                seen.append(np.array([len(got)] + [int(np.asarray(got.at(i))[0]) for i in range(len(got))]))
                seen.append(np.asarray(images.get().as_tensor()).sum(axis=(1, 2, 3)))
            return images, labels

        pipe = file_pipeline()
        pipe.build()
        for it in range(3):
            images, labels = pipe.run()
            put(out, f"debug_mode/image/{int(debug_run)}/{it}", images.as_tensor())
            put(out, f"debug_mode/labels/{int(debug_run)}/{it}", labels.as_tensor())
    for k, value in enumerate(seen):
        put(out, f"debug_mode/inside/{k}", value)
    return out


# --- multigpu.ipynb: sharding (one pipeline per shard, on the CPU) ---------------------------
def sharding(lib: Any, data: dict[str, Any]) -> Out:
    fn = lib.fn
    out: Out = {}
    variants = {
        "plain": {},
        "padded": {"pad_last_batch": True},
        "stick": {"stick_to_shard": True},
        "stick_padded": {"stick_to_shard": True, "pad_last_batch": True},
    }
    for vname, extra in variants.items():
        for shard_id in range(3):
            @lib.pipeline_def(batch_size=2, num_threads=1, device_id=None)
            def sharded_pipeline():  # type: ignore[no-untyped-def]
                jpegs, labels = fn.readers.file(file_root=data["images"], random_shuffle=False, shard_id=shard_id,
                                                num_shards=3, name="Reader", **extra)
                return fn.shapes(jpegs), labels

            pipe = sharded_pipeline()
            pipe.build()
            key = f"sharding/{vname}/{shard_id}"
            put(out, f"{key}/meta", _meta(pipe.reader_meta("Reader")))
            put(out, f"{key}/epoch_size", pipe.epoch_size("Reader"))
            sizes = []
            for _ in range(5):
                shapes, labels = pipe.run()
                sizes.append(np.concatenate([shapes.as_array().ravel(), labels.as_array().ravel()]))
            put(out, f"{key}/runs", np.stack(sizes))
    return out


CASES: dict[str, Callable[[Any, dict[str, Any]], Out]] = {
    "external_input": external_input,
    "parallel_external_source": parallel_external_source,
    "numpy_reader": numpy_reader,
    "numpy_reader_dynamic": numpy_reader_dynamic,
    "tfrecord": tfrecord,
    "tfrecord_dynamic": tfrecord_dynamic,
    "webdataset": webdataset,
    "webdataset_dynamic": webdataset_dynamic,
    "recordio": recordio,
    "recordio_dynamic": recordio_dynamic,
    "lmdb": lmdb,
    "coco": coco,
    "coco_dynamic": coco_dynamic,
    "debug_mode": debug_mode,
    "sharding": sharding,
}


def libraries(kind: str) -> SimpleNamespace:
    """The modules a user imports: DALI's (``"dali"``) or streamflow's (``"streamflow"``)."""
    if kind == "dali":
        import nvidia.dali.experimental.dynamic as ndd
        import nvidia.dali.fn as fn
        import nvidia.dali.tfrecord as tfrec
        import nvidia.dali.types as types
        from nvidia.dali import pipeline_def
        from nvidia.dali.pipeline import Pipeline
        from nvidia.dali.pipeline.experimental import pipeline_def as experimental_pipeline_def
    else:
        from streamflow.pipeline.experimental import pipeline_def as experimental_pipeline_def  # type: ignore

        import streamflow.experimental.dynamic as ndd  # type: ignore[no-redef]
        import streamflow.fn as fn  # type: ignore[no-redef]
        import streamflow.tfrecord as tfrec  # type: ignore[no-redef]
        import streamflow.types as types  # type: ignore[no-redef]
        from streamflow import pipeline_def  # type: ignore[no-redef]
        from streamflow.pipeline import Pipeline  # type: ignore[no-redef]
    return SimpleNamespace(fn=fn, types=types, pipeline_def=pipeline_def, tfrec=tfrec, ndd=ndd, Pipeline=Pipeline,
                           experimental_pipeline_def=experimental_pipeline_def,
                           debug_runs=(False,) if kind == "dali" else (False, True))


def summary(out: Out) -> str:
    """Keys, shapes and dtypes: what the tests print when a case's keys differ."""
    return json.dumps({k: [list(v.shape), v.dtype.name] for k, v in sorted(out.items())})
