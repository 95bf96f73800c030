"""``segmentation.random_mask_pixel``: the coordinates of a random (foreground) pixel of a mask.

As DALI's ``RandomMaskPixel`` (CPU): with ``foreground`` set (per sample), the
pixel is drawn uniformly among the foreground pixels, those above
``threshold`` (default 0) or equal to ``value``; otherwise, or when the mask
has no foreground, uniformly among all pixels. The output holds one int64
index per axis of the input (channels included), e.g. as the centre of a
crop (``fn.roi_random_crop``, ``fn.slice``). Draws come from (seed,
operator, epoch, sample), not DALI's stream.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import rng
from ...errors import PipelineDefinitionError, SampleError
from ...graph import DataNode, add_node, split_arguments
from ...operator import Chunk, Operator
from ...types import Device, Number
from ..arguments import fn_function

__all__ = ["RandomMaskPixel", "random_mask_pixel"]


def _scalar(value: Any) -> float:
    return float(np.asarray(value, dtype=np.float64).reshape(-1)[0])


class RandomMaskPixel(Operator):
    """One random pixel's coordinates per mask."""

    name = "segmentation.random_mask_pixel"
    per_sample_args = frozenset({"foreground", "threshold", "value"})

    def __init__(self, *, foreground: int = 0, threshold: float | None = None, value: int | None = None,
                 seed: int | None = None, name: str | None = None) -> None:
        super().__init__(name=name)
        self.foreground = int(foreground)
        self.threshold = threshold
        self.value = value
        self.seed = seed

    def _one(self, chunk: Chunk, row: int, mask: Any) -> np.ndarray:
        arr = np.asarray(mask)
        if arr.dtype.kind not in "biuf" or arr.ndim == 0 or arr.size == 0:
            raise SampleError(f"segmentation.random_mask_pixel: the mask must be a non-empty numeric array, "
                              f"got {arr.dtype} {arr.shape}")
        key = chunk.key if self.seed is None else rng.RandomKey(int(self.seed), 0x3A5C)
        gen = rng.sample_generator(key, chunk.epoch, int(chunk.sample_ids[row]))
        flat = arr.reshape(-1)
        candidates = None
        if int(_scalar(chunk.arg("foreground", row, self.foreground))):
            value = chunk.arg("value", row, self.value)
            if value is not None:
                fg = np.flatnonzero(flat == int(_scalar(value)))
            else:
                threshold = chunk.arg("threshold", row, self.threshold)
                fg = np.flatnonzero(flat > (0.0 if threshold is None else _scalar(threshold)))
            if fg.size:
                candidates = fg
        index = int(gen.integers(flat.size)) if candidates is None else int(candidates[gen.integers(candidates.size)])
        return np.asarray(np.unravel_index(index, arr.shape), dtype=np.int64)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, sample: self._one(chunk, row, sample))]



@fn_function()
def random_mask_pixel(
    data: DataNode,
    *,
    foreground: int | DataNode = 0,
    threshold: Number | DataNode | None = None,
    value: int | DataNode | None = None,
    seed: int | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Coordinates (int64, one per axis) of a random pixel; a foreground one when ``foreground`` is 1.

    Args:
        data: the mask (any shape).
        foreground: 1 draws among the foreground pixels, 0 among all (per sample allowed).
        threshold: pixels above this are foreground (default 0); exclusive with ``value``.
        value: pixels equal to this are foreground (integer masks).
        seed: a fixed random stream for this operator (default: the pipeline's).
    """
    if threshold is not None and value is not None:
        raise PipelineDefinitionError("segmentation.random_mask_pixel: threshold and value are mutually exclusive")
    constants, per_sample = split_arguments(dict(foreground=foreground, threshold=threshold, value=value))
    op = RandomMaskPixel(foreground=constants.get("foreground", 0), threshold=constants.get("threshold"),
                         value=constants.get("value"), seed=seed, name=name)
    return add_node(op, [data], per_sample, device=device)[0]
