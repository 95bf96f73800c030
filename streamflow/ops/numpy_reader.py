"""``readers.numpy``: ``.npy`` arrays, or regions of them, read with a few ``pread``s.

Files come from ``file_root`` (every file under it, recursively, whose name
matches ``file_filter``, sorted) or from ``files`` (relative to
``file_root`` when given). Shuffling, sharding and padding are the file
reader's (:class:`~streamflow.ops.sharding.EpochOrder`).

Two ways to run, chosen by ``fn.readers.numpy``:

* **Constant ROI** (or none): :class:`NumpyReader` reads every sample of a
  batch in the read stage, all files concurrently on the pipeline's I/O
  pool, each with :func:`streamflow.io.read_npy` (header parse, ROI
  resolution, coalesced positioned reads of just the region's bytes).
* **Per-sample ROI** (any ROI argument is a ``DataNode``): sources run
  before the operators that compute per-sample values, and the engine
  hands a source no argument inputs, so the work is split in two nodes:
  :class:`NumpyReader` with ``deferred=True`` yields each sample's path in
  the read stage (sharding, shuffling and ``on_error="skip"`` replacements
  stay the source's), and :class:`NumpyRegionRead`, an operator of the
  ``cpu`` stage (``gpu`` stage for ``device="gpu"``), reads each file's
  region with that sample's ROI arguments on the worker threads.

A file that cannot be read (missing, truncated, hostile or non-numeric
header, ROI that does not fit under ``out_of_bounds_policy="error"``) is a
per-sample :class:`~streamflow.errors.ReadError` naming the file, so
``on_error="skip"`` replaces it and keeps batches full.

``device="gpu"`` reads with kvikio (GPUDirect Storage, or its compat mode)
into CuPy arrays, see :mod:`streamflow.io.kvikio_backend`. That path has NOT
run on a GPU: the engine does not execute GPU operators yet (a pipeline
with ``device_id=None`` refuses them; ``device_id="auto"`` on a machine
without a GPU falls back to the CPU path, which is tested).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import PipelineDefinitionError, ReadError, SampleError
from ..io import npy as npy_io
from ..io.roi import DEFAULT_MAX_GAP, DEFAULT_MAX_READS, DEFAULT_MAX_WASTE, ROI_ARGUMENTS
from ..types import Device, OutOfBoundsPolicy
from .base import Chunk, Operator, SourceBatch
from .file_reader import _walk_files
from .list_source import ListSource
from .sharding import ShardSpec

if TYPE_CHECKING:
    from ..runtime.io_pool import IOPool

__all__ = ["PER_SAMPLE_ROI_ARGUMENTS", "NumpyReader", "NumpyRegionRead", "list_npy_files"]

#: ROI arguments that may be per-sample ``DataNode``s (``roi_axes`` is constant, as in DALI).
PER_SAMPLE_ROI_ARGUMENTS = frozenset(a for a in ROI_ARGUMENTS if a != "roi_axes")

_COALESCE = {"max_gap": DEFAULT_MAX_GAP, "max_waste": DEFAULT_MAX_WASTE, "max_reads": DEFAULT_MAX_READS}


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
        paths = [os.path.join(root, os.fspath(p)) if root else os.fspath(p) for p in files]
        if not paths:
            raise PipelineDefinitionError("readers.numpy: files is empty")
        return paths
    if root is None:
        raise PipelineDefinitionError("readers.numpy needs file_root or files")
    if not os.path.isdir(root):
        raise PipelineDefinitionError(f"readers.numpy: file_root {root!r} is not a directory")
    if not isinstance(file_filter, str) or not file_filter:
        raise PipelineDefinitionError(
            f"readers.numpy: file_filter must be a glob pattern such as '*.npy', got {file_filter!r}"
        )
    paths = _walk_files(root, [file_filter], case_sensitive=True)
    if not paths:
        raise PipelineDefinitionError(
            f"readers.numpy: no files matching {file_filter!r} under {root!r} (searched recursively)"
        )
    return paths


def _as_read_error(error: BaseException, path: str) -> ReadError:
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
        if deferred and device is not Device.CPU:
            raise PipelineDefinitionError("readers.numpy: a deferred reader yields host paths (device='cpu')")
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
            return _as_read_error(e, path)

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        paths = [self.paths[int(i)] for i in items]
        sources: list[str | None] = list(paths)
        if self.deferred:
            return SourceBatch(outputs=[list(paths)], sample_ids=ids, sources=sources)
        # every file of the batch at once; read_npy runs the blocking reads on the I/O pool
        results = await asyncio.gather(*(self._read_one(p) for p in paths))
        data: list[Any] = []
        failures: dict[int, SampleError] = {}
        for row, value in enumerate(results):
            if isinstance(value, ReadError):
                failures[row] = value
                data.append(None)
            else:
                data.append(value)
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

    def _read(self, path: str, roi: dict[str, Any]) -> Any:
        if self.device is Device.CPU:
            return npy_io.read_npy_sync(
                path,
                roi=roi,
                fill_value=self.fill_value,
                out_of_bounds_policy=self.policy,
                stats=self.stats,
            )
        from ..io import kvikio_backend  # only for GPU reads (untested: no GPU here)

        return kvikio_backend.read_npy_gpu_sync(
            path,
            roi=roi,
            fill_value=self.fill_value,
            out_of_bounds_policy=self.policy,
            coalesce=dict(_COALESCE),
            stats=self.stats,
        )

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, path in enumerate(chunk.inputs[0]):
            roi = dict(self.roi)
            for name, values in chunk.args.items():
                roi[name] = _per_sample_value(values[row])
            try:
                out.append(self._read(path, roi))
            except (SampleError, PipelineDefinitionError) as e:
                # a bad per-sample ROI value is this sample's failure, named after its file
                chunk.fail(row, _as_read_error(e, path))
                out.append(None)
        return [out]

    def layout(self, index: int) -> str:
        return ""
