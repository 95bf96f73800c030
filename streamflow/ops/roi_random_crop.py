"""``roi_random_crop``: a random crop window that holds as much of a region of interest as it can (DALI 2.4).

Per dimension ``d``, with the crop extent ``c`` and the ROI ``[s, e)``: a
ROI longer than the crop gives a start uniform in ``[s, e - c]`` (the window
lies inside the ROI); a shorter one ``[e - c, s]`` (the window holds the
ROI). With an input shape (``in_shape``, or the shape of the positional
input) the start is kept in ``[0, n - c]``, and the ROI must lie inside the
input. The output is the window's start, int64, one value per dimension.
Random values come from ``(seed, epoch, sample)`` (``streamflow.rng``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import rng
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, require_node, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function
from .random_crop_window import random_crop_key

__all__ = ["RoiRandomCrop", "roi_random_crop", "roi_crop_start"]


def roi_crop_start(crop: Sequence[int], roi_start: Sequence[int], roi_end: Sequence[int],
                   shape: Sequence[int] | None, gen: np.random.Generator) -> np.ndarray:
    """The window's start (see the module doc); ``gen`` draws one integer per dimension."""
    out = np.empty(len(crop), dtype=np.int64)
    for d, (c, s, e) in enumerate(zip(crop, roi_start, roi_end)):
        s, e = min(s, e), max(s, e)
        lo, hi = (s, e - c) if e - s > c else (e - c, s)
        if shape is not None:
            lo, hi = max(lo, 0), min(hi, shape[d] - c)
        out[d] = int(gen.integers(lo, hi + 1))
    return out


def _ints(value: Any, what: str) -> list[int]:
    arr = np.asarray(value)
    if arr.dtype.kind not in "uif":
        raise SampleError(f"roi_random_crop: {what} must be integers, got {value!r}")
    return [int(v) for v in arr.reshape(-1)]


class RoiRandomCrop(Operator):
    """Draws a crop window start per sample (see the module doc)."""

    name = "roi_random_crop"
    per_sample_args = frozenset({"crop_shape", "roi_start", "roi_end", "roi_shape", "in_shape"})

    def __init__(self, *, args: dict[str, Any], has_input: bool, seed: int | None = None,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.args = {k: None if v is None else np.asarray(v) for k, v in args.items()}
        self.has_input = has_input
        self.seed = seed

    def run(self, chunk: Chunk) -> list[list[Any]]:
        key = random_crop_key(chunk, self.seed)

        def one(row: int, _: Any) -> np.ndarray:
            get = {k: chunk.arg(k, row, self.args.get(k)) for k in self.per_sample_args}
            crop = _ints(get["crop_shape"], "crop_shape")
            start = _ints(get["roi_start"], "roi_start")
            if get["roi_end"] is not None:
                end = _ints(get["roi_end"], "roi_end")
            else:
                end = [s + n for s, n in zip(start, _ints(get["roi_shape"], "roi_shape"))]
            shape = None
            if self.has_input:
                shape = list(np.shape(chunk.inputs[0][row]))
            elif get["in_shape"] is not None:
                shape = _ints(get["in_shape"], "in_shape")
            lengths = {len(crop), len(start), len(end)} | ({len(shape)} if shape is not None else set())
            if len(lengths) != 1:
                raise SampleError(f"roi_random_crop: crop_shape {crop}, roi {start}..{end} and input shape "
                                  f"{shape} must have the same number of dimensions")
            if any(c < 0 for c in crop):
                raise SampleError(f"roi_random_crop: crop_shape must be >= 0, got {crop}")
            if shape is not None:
                for d, n in enumerate(shape):
                    if crop[d] > n:
                        raise SampleError(f"roi_random_crop: the crop {crop} is larger than the input {shape}")
                    if not (0 <= min(start[d], end[d]) and max(start[d], end[d]) <= n):
                        raise SampleError(f"roi_random_crop: the ROI {start}..{end} leaves the input {shape}")
            gen = rng.sample_generator(key, chunk.epoch, int(chunk.sample_ids[row]))
            return roi_crop_start(crop, start, end, shape, gen)

        return [chunk.each_sample(one)]


@fn_function()
def roi_random_crop(
    data: DataNode | None = None,
    *,
    crop_shape: Sequence[int] | DataNode,
    roi_start: Sequence[int] | DataNode,
    roi_end: Sequence[int] | DataNode | None = None,
    roi_shape: Sequence[int] | DataNode | None = None,
    in_shape: Sequence[int] | DataNode | None = None,
    seed: int | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """The start of a random crop window of ``crop_shape`` that holds as much of the ROI as it can.

    Args:
        data: optional input whose shape bounds the window (instead of ``in_shape``).
        crop_shape: the window's extents (*per sample*).
        roi_start: the ROI's start (*per sample*).
        roi_end, roi_shape: the ROI's end or extents (one of them; *per sample*).
        in_shape: the input's shape, when no input is given (*per sample*).
        seed: a fixed random stream (default: the pipeline's).

    Returns int64 start coordinates, one per dimension; feed them to
    ``fn.slice(data, start, crop_shape, axes=...)``.
    """
    given = dict(crop_shape=crop_shape, roi_start=roi_start, roi_end=roi_end, roi_shape=roi_shape, in_shape=in_shape)
    constants, per_sample = split_arguments({k: v for k, v in given.items() if v is not None})
    if roi_end is not None and roi_shape is not None:
        raise PipelineDefinitionError("roi_random_crop: roi_end and roi_shape are mutually exclusive")
    if roi_end is None and roi_shape is None:
        raise PipelineDefinitionError("roi_random_crop: give roi_end or roi_shape")
    if data is not None and in_shape is not None:
        raise PipelineDefinitionError("roi_random_crop: give an input or in_shape, not both")
    op = RoiRandomCrop(args=constants, has_input=data is not None, seed=seed, name=name)
    inputs = [] if data is None else [require_node(data, "roi_random_crop")]
    return add_node(op, inputs, per_sample, device=device)[0]
