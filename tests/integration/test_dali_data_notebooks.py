"""The features of DALI's data-loading tutorials, run on streamflow and compared with DALI 2.4.

DALI's notebooks (external_input, parallel_external_source, numpy_reader,
dataloading_tfrecord, dataloading_webdataset, dataloading_recordio,
dataloading_lmdb, coco_reader, debug_mode, the sharding part of multigpu,
and the dynamic-mode variants of the readers) teach a set of operators,
arguments, call styles and iteration patterns. ``dali_reference/notebook_cases.py``
holds our own pipelines using exactly those, written once with the imports
as the only difference; ``record_notebooks.py`` ran them on DALI 2.4's CPU
operators (``device_id=None``) into ``tests/data/dali/notebooks/notebooks.npz``.
Each test runs one notebook's cases on streamflow and compares every array:
same keys (so the same number of batches, samples and ``StopIteration``
points), same shapes and dtypes, and equal values except where
``notebook_cases.TOLERANCES`` allows a rounding difference (decoded photos
through ``brightness_contrast`` / ``resize``: within 1, as documented in
docs/dali-differences.md).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dali_reference import notebook_cases as C

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "dali" / "notebooks" / "notebooks.npz"


@cache
def reference() -> dict[str, np.ndarray]:
    with np.load(REFERENCE) as ref:
        return {k: ref[k] for k in ref.files}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("lmdb")
    pytest.importorskip("webdataset")
    return C.build_data(tmp_path_factory.mktemp("notebooks"))


@pytest.fixture(scope="module")
def lib() -> Any:
    return C.libraries("streamflow")


def tolerance(key: str) -> float:
    return max([tol for prefix, tol in C.TOLERANCES.items() if key.startswith(prefix)], default=0.0)


def compare(got: dict[str, np.ndarray], case: str, dali_only: tuple[str, ...] = ()) -> None:
    """``got`` against DALI's arrays of ``case``; keys starting with ``dali_only`` exist in DALI's only."""
    want = {k: v for k, v in reference().items() if k.split("/", 1)[0] == case}
    extra = sorted(k for k in want if k.startswith(dali_only)) if dali_only else []
    assert not dali_only or extra, f"{dali_only} not found in DALI's arrays"
    want = {k: v for k, v in want.items() if k not in extra}
    assert want, f"no DALI arrays recorded for {case}"
    assert sorted(got) == sorted(want), (
        f"missing {sorted(set(want) - set(got))[:8]}, extra {sorted(set(got) - set(want))[:8]}")
    for key, expected in want.items():
        value = got[key]
        assert value.shape == expected.shape, (key, value.shape, expected.shape)
        assert value.dtype == expected.dtype, (key, value.dtype, expected.dtype)
        if expected.dtype.kind in "biuf":
            diff = np.abs(value.astype(np.float64) - expected.astype(np.float64))
            assert diff.max(initial=0) <= tolerance(key), (key, diff.max())
        else:
            assert np.array_equal(value, expected), key


def test_external_input(lib: Any, data: dict[str, Any]) -> None:
    """external_input.ipynb: Pipeline + with + set_outputs; an iterator of (jpegs, labels) batches,
    num_outputs=2, dtype, decoding and
    brightness_contrast, run(), as_cpu(), at(), as_tensor(); an iterator that ends (StopIteration, reset);
    cycle=True / "quiet" / "raise"; a callable source."""
    compare(C.external_input(lib, data), "external_input")


def test_external_input_exhausted_iterator_starts_again(lib: Any, data: dict[str, Any]) -> None:
    """A deliberate difference (docs/dali-differences.md): after StopIteration and reset(), DALI 2.4 never
    asks an exhausted iterator again (every run() raises StopIteration); streamflow starts the next epoch."""
    fn = lib.fn

    @lib.pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def finite_pipe():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.external_source(source=C.FileBatches(data["files"], 4, epochs=1), num_outputs=2)
        return labels

    pipe = finite_pipe()
    pipe.build()
    for _epoch in range(2):
        assert [pipe.run()[0].as_array().ravel().tolist() for _ in range(2)] == [[0, 1, 2, 0], [1, 2, 0, 1]]
        with pytest.raises(StopIteration):
            pipe.run()
        pipe.reset()


def test_parallel_external_source(lib: Any, data: dict[str, Any]) -> None:
    """parallel_external_source.ipynb: a per-sample callable (batch=False) reading SampleInfo and raising
    StopIteration past the data, with and without parallel=True (py_num_workers, py_start_method);
    batch_info=True and a generator function in batch mode; epochs through reset()."""
    compare(C.parallel_external_source(lib, data), "parallel_external_source")


def test_numpy_reader_pipeline_mode(lib: Any, data: dict[str, Any]) -> None:
    """numpy_reader(/pipeline_mode).ipynb: readers.numpy with file_root + file_filter or files, reader_meta,
    and the region-of-interest arguments (roi_start/roi_end/roi_shape, rel_roi_*, roi_axes,
    out_of_bounds_policy "pad" with fill_value and "trim_to_shape")."""
    compare(C.numpy_reader(lib, data), "numpy_reader")


def test_numpy_reader_dynamic_mode(lib: Any, data: dict[str, Any]) -> None:
    """numpy_reader/dynamic_mode.ipynb: ndd.readers.Numpy, next_epoch(batch_size=...), next_epoch() sample
    by sample, ROI arguments. DALI fills the epoch's last batch (5 files, batches of 2) with the next
    epoch's first file; streamflow's epoch ends with the data (docs/dali-differences.md). With
    pad_last_batch=True (two shards, two epochs) the batches are the same."""
    compare(C.numpy_reader_dynamic(lib, data), "numpy_reader_dynamic", dali_only=("numpy_reader_dynamic/2/1/",))


def test_dataloading_tfrecord(lib: Any, data: dict[str, Any]) -> None:
    """dataloading_tfrecord.ipynb: readers.tfrecord with path / index_path / features
    (FixedLenFeature string and int64, VarLenFeature float32), a dict of outputs, decoding, resize_shorter,
    crop_mirror_normalize; epoch_size()."""
    compare(C.tfrecord(lib, data), "tfrecord")


def test_tfrecord_reader_dynamic_mode(lib: Any, data: dict[str, Any]) -> None:
    """tfrecord_reader/dynamic_mode.ipynb: ndd.readers.TFRecord yields dicts of batches (last batch: as
    for webdataset)."""
    compare(C.tfrecord_dynamic(lib, data), "tfrecord_dynamic", dali_only=("tfrecord_dynamic/2/2/",))


def test_dataloading_webdataset(lib: Any, data: dict[str, Any]) -> None:
    """dataloading_webdataset.ipynb / webdataset.ipynb: readers.webdataset(paths, ext=["jpg", "cls"],
    missing_component_behavior), resize_x/resize_y, crop_mirror_normalize to CHW; reader_meta."""
    compare(C.webdataset(lib, data), "webdataset")


def test_webdataset_reader_dynamic_mode(lib: Any, data: dict[str, Any]) -> None:
    """webdataset_reader/dynamic_mode.ipynb: ndd.readers.Webdataset, batches of (jpg, cls), ndd decoding.
    DALI fills the last batch (8 samples, batches of 3) with the next epoch's first sample; streamflow's
    last batch has 2 (docs/dali-differences.md)."""
    compare(C.webdataset_dynamic(lib, data), "webdataset_dynamic", dali_only=("webdataset_dynamic/2/2/",))


def test_dataloading_recordio(lib: Any, data: dict[str, Any]) -> None:
    """dataloading_recordio.ipynb: readers.mxnet(path, index_path), crop_mirror_normalize with crop
    positions and HWC output; epoch_size()."""
    compare(C.recordio(lib, data), "recordio")


def test_recordio_reader_dynamic_mode(lib: Any, data: dict[str, Any]) -> None:
    """recordio_reader/dynamic_mode.ipynb: ndd.readers.MXNet batches, decoded by ndd.decoders.image
    (last batch: as for webdataset)."""
    compare(C.recordio_dynamic(lib, data), "recordio_dynamic", dali_only=("recordio_dynamic/2/2/",))


def test_dataloading_lmdb(lib: Any, data: dict[str, Any]) -> None:
    """dataloading_lmdb.ipynb: readers.caffe and readers.caffe2 over LMDB, decoding, crop_mirror_normalize
    with mirror; reader_meta."""
    compare(C.lmdb(lib, data), "lmdb")


def test_coco_reader_pipeline_mode(lib: Any, data: dict[str, Any]) -> None:
    """coco_reader(/pipeline_mode).ipynb: readers.coco with skip_empty, shard_id/num_shards, ratio, ltrb,
    polygon_masks and image_ids: six outputs, decoded images' shapes (DataNode.shape()); reader_meta;
    pixelwise_masks."""
    compare(C.coco(lib, data), "coco")


def test_coco_reader_dynamic_mode(lib: Any, data: dict[str, Any]) -> None:
    """coco_reader/dynamic_mode.ipynb: ndd.readers.COCO sample by sample, then a second reader by batches
    (5 images in batches of 2: DALI fills the last batch from the next epoch, streamflow's has 1)."""
    compare(C.coco_dynamic(lib, data), "coco_dynamic", dali_only=("coco_dynamic/batch/2/1/",))


def test_debug_mode(lib: Any, data: dict[str, Any]) -> None:
    """debug_mode.ipynb: pipeline.experimental.pipeline_def(debug=True), outputs' .get() TensorLists inside
    the definition. DALI 2.4's debug mode needs a CUDA driver, so both of streamflow's runs (debug and not)
    are compared with DALI's run without debug, and the values seen inside with the outputs."""
    got = C.debug_mode(lib, data)
    compare({k: v for k, v in got.items() if not k.startswith(("debug_mode/inside", "debug_mode/image/1",
                                                                  "debug_mode/labels/1"))}, "debug_mode")
    debug_only = {k.replace("/1/", "/0/"): v for k, v in got.items() if k.startswith(("debug_mode/image/1",
                                                                                      "debug_mode/labels/1"))}
    compare(debug_only, "debug_mode")
    # What the definition saw, batch after batch, is the stream run() gave. The definition sees each
    # epoch's batches (the last one short: 8 files, batches of 3) and run() joins them across the epoch
    # end, where DALI's reader wraps around inside the batch (docs/dali-differences.md).
    inside = [got[f"debug_mode/inside/{k}"] for k in range(len([k for k in got if "/inside/" in k]))]
    seen_labels = [v for counts in inside[0::2] for v in counts[1:].tolist()]
    seen_sums = [v for sums in inside[1::2] for v in sums.tolist()]
    assert [counts[0] for counts in inside[0::2]][:3] == [3, 3, 2]
    run_labels = [v for it in range(3) for v in got[f"debug_mode/labels/1/{it}"].ravel().tolist()]
    run_sums = [v for it in range(3) for v in got[f"debug_mode/image/1/{it}"].astype(np.int64).sum(axis=(1, 2, 3))]
    assert seen_labels[:9] == run_labels and seen_sums[:9] == run_sums


def test_debug_mode_print(lib: Any, data: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """debug_mode.ipynb prints operator outputs inside the definition (and their .get())."""
    fn = lib.fn

    @lib.experimental_pipeline_def(batch_size=2, num_threads=1, device_id=None, debug=True)
    def printing():  # type: ignore[no-untyped-def]
        jpegs, labels = fn.readers.file(file_root=data["images"])
        print(labels)
        print(labels.get())
        return labels

    pipe = printing()
    pipe.build()
    (labels,) = pipe.run()
    printed = capsys.readouterr().out  # the values, as DALI prints a debug node's TensorList
    assert "readers.file" in printed and f"[{np.asarray(labels.at(1)).item()}]" in printed


def test_multigpu_sharding(lib: Any, data: dict[str, Any]) -> None:
    """multigpu.ipynb, sharding on the CPU: one pipeline per shard_id of num_shards, with pad_last_batch
    and stick_to_shard; reader_meta and epoch_size of each; five run()s each (wrapping past the epoch)."""
    compare(C.sharding(lib, data), "sharding")
