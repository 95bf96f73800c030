"""``fn.readers.numpy``: ``.npy`` arrays, or regions of them (re-exported by ``fn.readers``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..distributed import resolve_shard
from ..errors import PipelineDefinitionError
from ..graph import DataNode, add_node, split_arguments
from ..io.roi import RoiError, parse_out_of_bounds_policy, resolve_roi
from ..ops.numpy_reader import NumpyReader, NumpyRegionRead, list_npy_files
from ..ops.sharding import ShardSpec
from ..types import Device, parse_device

__all__ = ["numpy"]

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
        random_shuffle, initial_fill, shard_id, num_shards, stick_to_shard,
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
    if dev is Device.MIXED:
        raise PipelineDefinitionError("readers.numpy: device must be 'cpu' or 'gpu', not 'mixed'")
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
    shard_id, num_shards = resolve_shard(shard_id, num_shards)
    spec = ShardSpec(
        shard_id=shard_id,
        num_shards=num_shards,
        stick_to_shard=stick_to_shard,
        pad_last_batch=pad_last_batch,
        random_shuffle=random_shuffle,
        initial_fill=initial_fill,
    )
    paths = list_npy_files(file_root, files, file_filter)
    if not per_sample:
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
        return add_node(reader, [])[0]
    # Per-sample ROI: the source yields paths; the region read runs after the
    # per-sample values exist (see streamflow/ops/numpy_reader.py).
    reader = NumpyReader(paths, shard=spec, seed=seed, deferred=True, name=name)
    (path_node,) = add_node(reader, [])
    read = NumpyRegionRead(device=dev, roi=constants, out_of_bounds_policy=policy, fill_value=fill_value)
    return add_node(read, [path_node], per_sample)[0]
