"""``BatchArena``: operators write a pipeline output's samples straight into the batch array.

A host pipeline output is handed to the user as one ``(N, ...)`` array. The
plain way builds every sample as its own array and stacks them at the end:
one more copy of the whole batch, and a fresh allocation per sample (page
faults: on the dev VM that costs as much as the normalization itself). An
operator that knows its output shape before computing it (``resize +
crop_mirror_normalize``, ``crop_mirror_normalize``, ``resize``) instead asks
``Chunk.output_buffer`` for its row of the batch array and writes there.

The arena is created per batch and output when the stage starts; the first
sample that asks fixes the shape and dtype, and a sample of another shape
gets ``None`` (it allocates its own array as usual). At the end,
``take(samples)`` returns the batch array only when every row of it holds
the right sample in order; otherwise (a row failed and was dropped or
replaced, shapes differed) the samples are stacked as before. So the arena
only ever saves work; it never changes a result.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tensor import aligned_empty

__all__ = ["BatchArena"]


class BatchArena:
    """The future ``(rows, ...)`` array of one host output of one batch (thread-safe)."""

    __slots__ = ("_lock", "array", "dtype", "rows", "shape")

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.array: np.ndarray | None = None
        self.shape: tuple[int, ...] | None = None
        self.dtype: np.dtype | None = None
        self._lock = threading.Lock()

    def slot(self, row: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray | None:
        """Row ``row`` of the batch array, or ``None`` if ``shape``/``dtype`` differ from the first sample's."""
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        with self._lock:
            if self.array is None:
                self.array = aligned_empty((self.rows, *shape), dtype)
                self.shape, self.dtype = shape, dtype
            elif shape != self.shape or dtype != self.dtype:
                return None
            array = self.array
        if not 0 <= row < self.rows:
            return None
        return array[row]

    def take(self, samples: Sequence[Any]) -> np.ndarray | None:
        """The batch array if ``samples`` are exactly its rows, in order; else ``None``."""
        array = self.array
        if array is None or len(samples) != self.rows:
            return None
        base = array.__array_interface__["data"][0]
        stride = array.strides[0] if array.ndim else 0
        for i, sample in enumerate(samples):
            if (
                not isinstance(sample, np.ndarray)
                or sample.shape != self.shape
                or sample.dtype != self.dtype
                or not sample.flags.c_contiguous
                or sample.__array_interface__["data"][0] != base + i * stride
            ):
                return None
        return array
