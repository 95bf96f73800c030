"""``readers.numpy``: ``.npy`` arrays, or regions of them, read with a few ``pread``s.

Files come from ``file_root`` (every file under it, recursively, whose name
matches ``file_filter``, sorted) or from ``files`` (relative to
``file_root`` when given). Shuffling, sharding and padding are the file
reader's (:class:`~streamflow.sharding.EpochOrder`).

Two ways to run, chosen by ``fn.readers.numpy``:

* **Constant ROI** (or none): :class:`NumpyReader` reads every sample of a
  batch in the read stage, all files concurrently on the pipeline's I/O
  pool, each with :func:`streamflow.io.read_npy` (header parse, ROI
  resolution, coalesced positioned reads of just the region's bytes).
* **Per-sample ROI** (any ROI argument is a ``DataNode``) **or**
  ``device="gpu"``: the work is split in two nodes. :class:`NumpyReader`
  with ``deferred=True`` yields each sample's path in the read stage
  (sharding, shuffling and ``on_error="skip"`` replacements stay the
  source's), and :class:`NumpyRegionRead` reads each file's region with that
  sample's ROI arguments: an operator of the ``cpu`` stage, or of the ``gpu``
  stage for ``device="gpu"``, where ``gpu/ops/readers_numpy.py`` reads with
  kvikio (GPUDirect Storage, or its compat mode) into device memory on the
  stage's own device and stream.

A file that cannot be read (missing, truncated, hostile or non-numeric
header, ROI that does not fit under ``out_of_bounds_policy="error"``) is a
per-sample :class:`~streamflow.errors.ReadError` naming the file, so
``on_error="skip"`` replaces it and keeps batches full.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np

from ...errors import PipelineDefinitionError, ReadError, SampleError
from ...graph import DataNode, add_node, split_arguments
from ...io import npy as npy_io
from ...io import remote, storage
from ...io.npy_bytes import array_from_npy_bytes
from ...io.pools import IOPool
from ...io.roi import (
    DEFAULT_MAX_GAP,
    DEFAULT_MAX_READS,
    DEFAULT_MAX_WASTE,
    ROI_ARGUMENTS,
    RoiError,
    parse_out_of_bounds_policy,
    resolve_roi,
)
from ...operator import Chunk, Operator, SourceBatch
from ...sharding import ShardSpec
from ...types import Device, OutOfBoundsPolicy, parse_device
from ..arguments import READER, fn_function
from .file import check_folder, walk_files
from .list_source import ListSource, split_read_errors

__all__ = ["PER_SAMPLE_ROI_ARGUMENTS", "NumpyReader", "NumpyRegionRead", "list_npy_files", "numpy"]

#: ROI arguments that may be per-sample ``DataNode``s (``roi_axes`` is constant, as in DALI).
PER_SAMPLE_ROI_ARGUMENTS = frozenset(a for a in ROI_ARGUMENTS if a != "roi_axes")

#: How a region's byte ranges are merged into few reads (see ``io.roi.plan_reads``).
COALESCE = {"max_gap": DEFAULT_MAX_GAP, "max_waste": DEFAULT_MAX_WASTE, "max_reads": DEFAULT_MAX_READS}


def list_npy_files(
    file_root: str | os.PathLike[str] | None,
    files: Sequence[str | os.PathLike[str]] | None,
    file_filter: str,
) -> list[str]:
    """The reader's sample paths: ``files`` (joined to ``file_root``), or the
    files under ``file_root`` matching ``file_filter`` (recursive, sorted)."""
    root = os.fspath(file_root) if file_root is not None else None
    if files is not None:
        if isinstance(files, (str, os.PathLike)):
            files = [files]
        paths = [remote.join_url(root, os.fspath(p)) if root else os.fspath(p) for p in files]
        if not paths:
            raise PipelineDefinitionError("readers.numpy: files is empty")
        return paths
    if root is None:
        raise PipelineDefinitionError("readers.numpy needs file_root or files")
    if storage.is_url(root):
        return _list_url_files(root, file_filter)
    check_folder(root, "readers.numpy")
    if not isinstance(file_filter, str) or not file_filter:
        raise PipelineDefinitionError(
            f"readers.numpy: file_filter must be a glob pattern such as '*.npy', got {file_filter!r}"
        )
    paths = walk_files(root, [file_filter], case_sensitive=True)
    if not paths:
        raise PipelineDefinitionError(
            f"readers.numpy: no files matching {file_filter!r} under {root!r} (searched recursively)"
        )
    return paths


def _list_url_files(root: str, file_filter: str) -> list[str]:
    import fnmatch

    try:
        paths = [u for u in remote.list_files_sync(root) if fnmatch.fnmatchcase(u.rsplit("/", 1)[-1], file_filter)]
    except ReadError as e:
        raise PipelineDefinitionError(f"readers.numpy: cannot list file_root {root!r}: {e.reason}") from None
    if not paths:
        raise PipelineDefinitionError(f"readers.numpy: no files matching {file_filter!r} under {root!r}")
    return paths


def read_url_npy(path: str, roi: Mapping[str, Any] | None, policy: OutOfBoundsPolicy, fill_value: Any) -> Any:
    """A remote ``.npy`` file read whole (object stores have no cheap small reads), then its region."""
    return array_from_npy_bytes(storage.read_whole(path), path, roi, policy, fill_value)


def as_read_error(error: BaseException, path: str) -> ReadError:
    """``error`` as the ``ReadError`` of the file ``path`` (one sample's failure)."""
    if isinstance(error, ReadError):
        return error
    return ReadError(f"{type(error).__name__}: {error}", path)


class NumpyReader(ListSource):
    """Reads ``.npy`` files (or a constant region of each): one array per sample.

    Args:
        paths: the data set, in order (see :func:`list_npy_files`).
        device: ``Device.CPU`` (numpy arrays) or ``Device.GPU`` (cupy arrays,
            kvikio; untested, see the module docstring).
        roi: constant ROI arguments (a dict with keys from ``ROI_ARGUMENTS``),
            or ``None`` for whole arrays.
        out_of_bounds_policy, fill_value: as :func:`streamflow.io.read_npy`.
        shard: sharding and shuffling.
        seed: shuffling seed (default: the pipeline's).
        deferred: yield each sample's path instead of its data (the per-sample
            ROI mode: :class:`NumpyRegionRead` reads it).
        name: the reader's name (``pipe.epoch_size(name)``, iterators).
    """

    name = "readers.numpy"
    num_outputs = 1

    def __init__(
        self,
        paths: Sequence[str],
        *,
        device: Device = Device.CPU,
        roi: Mapping[str, Any] | None = None,
        out_of_bounds_policy: OutOfBoundsPolicy = OutOfBoundsPolicy.ERROR,
        fill_value: Any = 0,
        shard: ShardSpec = ShardSpec(),
        seed: int | None = None,
        deferred: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(shard=shard, seed=seed, name=name, device=device)
        self.paths = list(paths)
        self.roi = dict(roi) if roi else None
        self.policy = out_of_bounds_policy
        self.fill_value = fill_value
        self.deferred = deferred
        self._executor: Executor | None = None
        #: what this reader's own reads cost (``bytes_read / useful_bytes``)
        self.stats = npy_io.ReadStats()

    # --- set-up and epochs (as readers.file) ------------------------------
    @property
    def num_items(self) -> int:
        return len(self.paths)

    def prepare(self, batch_size: int, seed: int, io: IOPool) -> None:
        super().prepare(batch_size, seed, io)
        # read_npy wants an Executor: big reads are split over several threads.
        self._executor = io.executor

    # --- reading ----------------------------------------------------------
    async def _read_one(self, path: str) -> Any:
        if storage.is_url(path):
            assert self._io is not None
            try:
                return await self._io.call(read_url_npy, path, self.roi, self.policy, self.fill_value)
            except SampleError as e:
                return as_read_error(e, path)
        try:
            return await npy_io.read_npy(
                path,
                roi=self.roi,
                fill_value=self.fill_value,
                device=self.device,
                out_of_bounds_policy=self.policy,
                executor=self._executor,
                stats=self.stats,
            )
        except SampleError as e:
            return as_read_error(e, path)

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        paths = [self.paths[int(i)] for i in items]
        sources: list[str | None] = list(paths)
        if self.deferred:
            return SourceBatch(outputs=[list(paths)], sample_ids=ids, sources=sources)
        # every file of the batch at once; read_npy runs the blocking reads on the I/O pool
        results = await asyncio.gather(*(self._read_one(p) for p in paths))
        data, failures = split_read_errors(results)
        return SourceBatch(outputs=[data], sample_ids=ids, sources=sources, failures=failures)


def _per_sample_value(value: Any) -> Any:
    """A per-sample argument as resolve_roi takes it (arrays -> flat lists)."""
    if hasattr(value, "__cuda_array_interface__"):  # cupy: ROI values live on the host
        value = value.get()
    if isinstance(value, np.ndarray):
        return value.reshape(-1).tolist() if value.ndim else value.item()
    return value


class NumpyRegionRead(Operator):
    """Per-sample-ROI half of ``readers.numpy``: reads each row's path with its ROI.

    Input: the paths a deferred :class:`NumpyReader` yields. Per-sample
    arguments: any of :data:`PER_SAMPLE_ROI_ARGUMENTS`; constant ROI
    arguments, ``roi_axes``, the policy and ``fill_value`` are fixed here.
    Runs on the pipeline's worker threads (``run`` is called per chunk, the
    chunks of a batch in parallel).
    """

    name = "readers.numpy"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = PER_SAMPLE_ROI_ARGUMENTS

    def __init__(
        self,
        *,
        device: Device = Device.CPU,
        roi: Mapping[str, Any] | None = None,
        out_of_bounds_policy: OutOfBoundsPolicy = OutOfBoundsPolicy.ERROR,
        fill_value: Any = 0,
        name: str | None = None,
    ) -> None:
        super().__init__(device=device, name=name)
        self.roi = dict(roi or {})
        self.policy = out_of_bounds_policy
        self.fill_value = fill_value
        self.stats = npy_io.ReadStats()

    def roi_for(self, chunk: Chunk, row: int) -> dict[str, Any]:
        """The ROI arguments of ``row``: the constant ones and its per-sample values."""
        roi = dict(self.roi)
        for name, values in chunk.args.items():
            roi[name] = _per_sample_value(values[row])
        return roi

    def read_each(self, chunk: Chunk, read: Any) -> list[Any]:
        """``read(path, roi)`` for every row; a failure is that row's ``ReadError``, named after its file."""
        out: list[Any] = []
        for row, path in enumerate(chunk.inputs[0]):
            try:
                out.append(read(path, self.roi_for(chunk, row)))
            except (SampleError, PipelineDefinitionError) as e:
                chunk.fail(row, as_read_error(e, path))
                out.append(None)
        return out

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def read(path: str, roi: dict[str, Any]) -> Any:
            if storage.is_url(path):
                return read_url_npy(path, roi, self.policy, self.fill_value)
            return npy_io.read_npy_sync(
                path, roi=roi, fill_value=self.fill_value, out_of_bounds_policy=self.policy, stats=self.stats,
            )

        return [self.read_each(chunk, read)]

    def layout(self, index: int) -> str:
        return ""


_ENDS = ("roi_end", "rel_roi_end", "roi_shape", "rel_roi_shape")
_HUGE = 1 << 40


def _check_roi(constants: dict[str, Any], per_sample: dict[str, DataNode], policy: Any) -> None:
    """Refuse contradictory or malformed ROI arguments when the pipeline is defined."""
    given = set(constants) | set(per_sample)
    if "roi_start" in given and "rel_roi_start" in given:
        raise PipelineDefinitionError("readers.numpy: roi_start and rel_roi_start are mutually exclusive")
    ends = [e for e in _ENDS if e in given]
    if len(ends) > 1:
        raise PipelineDefinitionError(
            f"readers.numpy: {', '.join(ends)} are mutually exclusive; give at most one of "
            "roi_end, rel_roi_end, roi_shape, rel_roi_shape"
        )
    if per_sample:
        return  # the number of values is only known per sample
    values = [v for k, v in constants.items() if k != "roi_axes"]
    if not values:
        return
    # Validate types, lengths, axes and signs against a made-up array that is
    # big enough on every axis (the real shapes are only known per file).
    axes = constants.get("roi_axes")
    try:
        if axes is None:
            first = values[0]
            n = len(first) if isinstance(first, (list, tuple)) or hasattr(first, "__len__") else 1
        else:
            listed = [axes] if isinstance(axes, int) else list(axes)
            n = max([a + 1 if a >= 0 else -a for a in listed] + [1])
        resolve_roi((_HUGE,) * n, **constants, out_of_bounds_policy=policy)
    except PipelineDefinitionError as e:
        raise PipelineDefinitionError(f"readers.numpy: {e}") from None
    except RoiError:
        pass  # depends on the file (e.g. the number of dimensions)
    except TypeError as e:
        raise PipelineDefinitionError(f"readers.numpy: malformed ROI argument: {e}") from None


@fn_function(READER)
def numpy(
    *,
    file_root: str | os.PathLike[str] | None = None,
    files: Sequence[str | os.PathLike[str]] | None = None,
    file_filter: str = "*.npy",
    device: str | Device = "cpu",
    roi_start: Any = None,
    roi_end: Any = None,
    roi_shape: Any = None,
    rel_roi_start: Any = None,
    rel_roi_end: Any = None,
    rel_roi_shape: Any = None,
    roi_axes: Sequence[int] | int | None = None,
    out_of_bounds_policy: str = "error",
    fill_value: float = 0,
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
) -> DataNode:
    """Read ``.npy`` files, or a region of interest of each, one array per sample.

    Only the bytes the region needs are read (coalesced ``pread``s; see
    docs/numpy.md); headers are parsed by streamflow (never ``np.load``,
    never pickle: object arrays are refused).

    Args:
        file_root: folder searched recursively for files matching
            ``file_filter`` (sorted); or the folder ``files`` are relative to.
        files: explicit list of ``.npy`` paths.
        file_filter: glob pattern on file names (case-sensitive), ``"*.npy"``.
        device: ``"cpu"`` (numpy arrays) or ``"gpu"`` (cupy arrays read with
            kvikio / GPUDirect Storage). GPU reads are not executed by the
            engine yet: a pipeline with ``device_id=None`` refuses them, and
            ``device_id="auto"`` without a GPU reads on the CPU instead.
        roi_start, rel_roi_start: start of the region (absolute ints, or
            fractions of the extent); default 0.
        roi_end, rel_roi_end, roi_shape, rel_roi_shape: end (exclusive) or
            size of the region, absolute or relative; at most one; default the
            extent.
        roi_axes: the axes the ROI values refer to, in order (others are whole).
        out_of_bounds_policy: ``"error"`` (default), ``"pad"`` (outside is
            ``fill_value``; negative starts allowed) or ``"trim_to_shape"``.
        fill_value: the padding value (rounded and saturated to the dtype).
        random_shuffle, initial_fill, shuffle_after_epoch, shard_id, num_shards, stick_to_shard,
            pad_last_batch, seed: shuffling and sharding, as ``readers.file``.
        name: the reader's name (``pipe.epoch_size(name)``, ``reader_name``).

    The six ROI value arguments may also be per-sample ``DataNode``s (e.g.
    ``rel_roi_start=fn.random.uniform(range=(0, 0.5), shape=3)``, or data from
    ``fn.external_source``): then the region of each file is read by the
    worker threads of the ``cpu`` stage, after those values are computed.

    Returns:
        One ``DataNode``: per sample, the region as a C-order, native-endian
        array (same values as ``np.load(path)[region]``).

    Raises:
        PipelineDefinitionError: contradictory or malformed arguments, no files.
        (Per sample, a ``ReadError`` naming the file: unreadable, truncated or
        refused file, region out of bounds under ``"error"``; with
        ``on_error="skip"`` the sample is replaced.)
    """
    try:
        dev = parse_device(device)
    except ValueError as e:
        raise PipelineDefinitionError(f"readers.numpy: {e}") from None
    policy = parse_out_of_bounds_policy(out_of_bounds_policy)
    roi_args = {
        "roi_start": roi_start,
        "roi_end": roi_end,
        "roi_shape": roi_shape,
        "rel_roi_start": rel_roi_start,
        "rel_roi_end": rel_roi_end,
        "rel_roi_shape": rel_roi_shape,
        "roi_axes": roi_axes,
    }
    constants, per_sample = split_arguments({k: v for k, v in roi_args.items() if v is not None})
    if "roi_axes" in per_sample:
        raise PipelineDefinitionError("readers.numpy: roi_axes must be constant, not per-sample data")
    _check_roi(constants, per_sample, policy)
    try:
        float(fill_value)
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"readers.numpy: fill_value must be a number, got {fill_value!r}") from None
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill,
                                shuffle_after_epoch=shuffle_after_epoch,
                                shuffle_after_epoch_seed=shuffle_after_epoch_seed)
    paths = list_npy_files(file_root, files, file_filter)
    if dev is Device.GPU and any(storage.is_url(p) for p in paths):
        raise PipelineDefinitionError(
            "readers.numpy: device='gpu' reads local files with kvikio; remote files (URLs) are read on the CPU: "
            "use device='cpu' and .gpu()"
        )
    if not per_sample and dev is Device.CPU:
        reader = NumpyReader(
            paths,
            device=dev,
            roi=constants,
            out_of_bounds_policy=policy,
            fill_value=fill_value,
            shard=spec,
            seed=seed,
            name=name,
        )
        return add_node(reader, [], device=dev)[0]
    # Per-sample ROI or GPU reads: the source yields paths; the region read runs
    # after the per-sample values exist, and GPU reads run in the gpu stage on
    # its device and stream (see the module docstring).
    reader = NumpyReader(paths, shard=spec, seed=seed, deferred=True, name=name)
    (path_node,) = add_node(reader, [], device=Device.CPU)
    read = NumpyRegionRead(device=dev, roi=constants, out_of_bounds_policy=policy, fill_value=fill_value)
    return add_node(read, [path_node], per_sample, device=dev)[0]
