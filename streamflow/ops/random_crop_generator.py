"""``random_crop_generator``: a random crop window (anchor, shape) for each input shape, as DALI 2.4.

The input is, per sample, a 1-D integer shape ``(H, W)`` or ``(H, W, C)``
(e.g. ``fn.peek_image_shape``); the outputs are the window's anchor ``(y, x)``
and shape ``(h, w)``, int32, ready for ``fn.slice(images, start=anchor,
shape=shape, axes=[0, 1])``. The draw is the one of
``decoders.image_random_crop`` (``random_area``, ``random_aspect_ratio``,
``num_attempts``; see ``random_crop_window.py``), a pure function of (seed,
operator, epoch, sample id).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import SampleError
from ..graph import DataNode, add_node
from ..operator import Chunk, Operator
from .arguments import fn_function
from .random_crop_window import RandomCropParams, sample_window

__all__ = ["RandomCropGenerator", "random_crop_generator"]


class RandomCropGenerator(Operator):
    """Per input shape, a random window: outputs (anchor (y, x), shape (h, w)), int32."""

    name: ClassVar[str] = "random_crop_generator"
    num_outputs = 2

    def __init__(self, params: RandomCropParams, seed: int | None = None, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.params = params
        self.seed = seed

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return chunk.each_sample(lambda row, value: self._one(chunk, row, value), outputs=2)

    def _one(self, chunk: Chunk, row: int, value: Any) -> tuple[np.ndarray, np.ndarray]:
        arr = np.asarray(value)
        if arr.ndim != 1 or arr.size not in (2, 3) or arr.dtype.kind not in "iu":
            raise SampleError(f"random_crop_generator: expected a 1-D integer shape (H, W) or (H, W, C), got "
                              f"{arr.dtype} of shape {arr.shape}")
        height, width = int(arr[0]), int(arr[1])
        if height <= 0 or width <= 0:
            raise SampleError(f"random_crop_generator: the shape must be positive, got {arr.tolist()}")
        draw = sample_window(chunk, row, height, width, self.params, self.seed)
        return np.array([draw.y0, draw.x0], dtype=np.int32), np.array([draw.h, draw.w], dtype=np.int32)


@fn_function()
def random_crop_generator(
    input: DataNode,
    *,
    random_area: float | Sequence[float] = (0.08, 1.0),
    random_aspect_ratio: float | Sequence[float] = (0.75, 1.333333),
    num_attempts: int = 10,
    seed: int | None = None,
    name: str | None = None,
) -> tuple[DataNode, DataNode]:
    """A random crop window per input shape: ``(anchor, shape)``, each ``(y, x)``/``(h, w)`` int32.

    Args:
        input: per sample, the shape ``(H, W)`` or ``(H, W, C)`` to crop.
        random_area: range of the window's area as a fraction of the image's.
        random_aspect_ratio: range of the window's width / height (log-uniform).
        num_attempts: draws before falling back to the largest fitting window.
        seed: a fixed random stream for this operator (default: the pipeline's).
    """
    params = RandomCropParams.from_args("random_crop_generator", random_area, random_aspect_ratio, num_attempts)
    op = RandomCropGenerator(params, None if seed is None or seed < 0 else seed, name=name)
    anchor, shape = add_node(op, [input])
    return anchor, shape
