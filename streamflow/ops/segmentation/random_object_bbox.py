"""``segmentation.random_object_bbox``: the bounding box of a random object of a label map.

As DALI's ``RandomObjectBBox`` (CPU). Objects are the connected blobs of
pixels of one label, neighbours along the axes only (4-connectivity in 2D,
6 in 3D: diagonal pixels are separate blobs), found with
``scipy.ndimage.label``. With probability ``foreground_prob`` a class is drawn
(among ``classes``, default every label present but ``background``, weighted
by ``class_weights``, a class without a blob of at least ``threshold`` pixels
per axis not being eligible), then one of its blobs (of its ``k_largest``
boxes by volume) uniformly; with ``ignore_class`` a blob is drawn among all
classes' blobs. Otherwise, or when no blob qualifies, the box is the whole
input and the class the background label.

The box covers every axis of the input, in array order (``(y, x)`` for an HW
map, ``(y, x, c)`` for HWC): ``anchor_shape`` (default: anchor and shape),
``start_end`` (start and one-past-end) or ``box`` (both in one), int32, plus
the class (int32) with ``output_class``. Draws come from (seed, operator,
epoch, sample), not DALI's stream; ``cache_objects`` is accepted and has no
effect (the blobs are found for every sample).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import rng
from ...errors import MissingDependencyError, PipelineDefinitionError, SampleError
from ...graph import DataNode, add_node, split_arguments
from ...operator import Chunk, Operator
from ...types import Device, Number
from ..arguments import fn_function

__all__ = ["Blob", "RandomObjectBBox", "find_blobs", "random_object_bbox"]

_FORMATS = ("anchor_shape", "start_end", "box")


@dataclass(frozen=True)
class Blob:
    """One connected blob: its class and its box ``[start, end)`` per axis."""

    label: int
    start: tuple[int, ...]
    end: tuple[int, ...]

    @property
    def volume(self) -> int:
        return int(np.prod([e - s for s, e in zip(self.start, self.end)]))


def _ndimage() -> Any:
    try:
        from scipy import ndimage
    except ImportError:
        raise MissingDependencyError("scipy", "segmentation", "segmentation.random_object_bbox") from None
    return ndimage


def find_blobs(mask: np.ndarray, label: int) -> list[Blob]:
    """The blobs of ``label`` in ``mask`` (axis-neighbour connectivity), in scan order."""
    ndimage = _ndimage()
    structure = ndimage.generate_binary_structure(mask.ndim, 1)
    labelled, count = ndimage.label(mask == label, structure=structure)
    blobs = []
    for slices in ndimage.find_objects(labelled)[:count]:
        if slices is not None:
            blobs.append(Blob(label, tuple(s.start for s in slices), tuple(s.stop for s in slices)))
    return blobs


def _ints(value: Any, what: str) -> list[int]:
    arr = np.asarray(value).reshape(-1)
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and np.all(arr == np.round(arr))):
        raise PipelineDefinitionError(f"segmentation.random_object_bbox: {what} must be integers, got {value!r}")
    return [int(v) for v in arr]


class RandomObjectBBox(Operator):
    """Draws one object box per label map."""

    name = "segmentation.random_object_bbox"
    per_sample_args = frozenset({"background", "classes", "class_weights", "foreground_prob", "threshold"})

    def __init__(self, *, format: str, output_class: bool, background: int | None, classes: Any,
                 class_weights: Any, foreground_prob: float, threshold: Any, k_largest: int | None,
                 ignore_class: bool, seed: int | None, name: str | None = None) -> None:
        super().__init__(name=name)
        self.format = format
        self.output_class = output_class
        self.background = background
        self.classes = classes
        self.class_weights = class_weights
        self.foreground_prob = foreground_prob
        self.threshold = threshold
        self.k_largest = k_largest
        self.ignore_class = ignore_class
        self.seed = seed
        self.num_outputs = (1 if format == "box" else 2) + int(output_class)

    def _choose(self, chunk: Chunk, row: int, mask: np.ndarray, gen: np.random.Generator) -> tuple[Blob | None, int]:
        """The drawn blob (``None``: the whole input) and the background label."""
        classes_arg = chunk.arg("classes", row, self.classes)
        bg_arg = chunk.arg("background", row, self.background)
        classes = None if classes_arg is None else _ints(classes_arg, "classes")
        if bg_arg is not None:
            background = _ints(bg_arg, "background")[0]
        elif classes is None or 0 not in classes:
            background = 0
        else:  # 0 is a class: the background is a value that is not
            background = min(classes) - 1
        if classes is None:
            classes = [int(v) for v in np.unique(mask) if int(v) != background]
        weights_arg = chunk.arg("class_weights", row, self.class_weights)
        if weights_arg is None:
            weights = np.ones(len(classes))
        else:
            weights = np.asarray(weights_arg, dtype=np.float64).reshape(-1)
            if weights.size != len(classes):
                raise SampleError(f"segmentation.random_object_bbox: {weights.size} class_weights for "
                                  f"{len(classes)} classes; give one weight per class")
            if np.any(weights < 0):
                raise SampleError(f"segmentation.random_object_bbox: class_weights must not be negative, got {weights}")
        fg_prob = float(np.asarray(chunk.arg("foreground_prob", row, self.foreground_prob)).reshape(-1)[0])
        if gen.random() >= fg_prob or not classes:
            return None, background
        threshold_arg = chunk.arg("threshold", row, self.threshold)
        minimum = None
        if threshold_arg is not None:
            minimum = np.asarray(_ints(threshold_arg, "threshold"))
            if minimum.size == 1:
                minimum = np.full(mask.ndim, minimum[0])
            if minimum.size != mask.ndim:
                raise SampleError(f"segmentation.random_object_bbox: threshold has {minimum.size} values for a "
                                  f"{mask.ndim}D input")

        def eligible(blobs: list[Blob]) -> list[Blob]:
            if minimum is None:
                return blobs
            return [b for b in blobs if all(e - s >= m for s, e, m in zip(b.start, b.end, minimum))]

        def largest(blobs: list[Blob]) -> list[Blob]:
            if self.k_largest is None:
                return blobs
            return sorted(blobs, key=lambda b: -b.volume)[: self.k_largest]

        per_class = {c: eligible(find_blobs(mask, c)) for c, w in zip(classes, weights) if w > 0}
        if self.ignore_class:
            pool = largest([b for c in classes if c in per_class for b in per_class[c]])
            if not pool:
                return None, background
            return pool[int(gen.integers(len(pool)))], background
        names = [c for c in classes if per_class.get(c)]
        if not names:
            return None, background
        w = np.array([weights[classes.index(c)] for c in names], dtype=np.float64)
        cdf = np.cumsum(w / w.sum())
        chosen = names[min(int(np.searchsorted(cdf, gen.random(), side="right")), len(names) - 1)]
        pool = largest(per_class[chosen])
        return pool[int(gen.integers(len(pool)))], background

    def _one(self, chunk: Chunk, row: int, sample: Any) -> list[Any]:
        mask = np.asarray(sample)
        if mask.dtype.kind not in "biu" or mask.ndim == 0:
            raise SampleError(f"segmentation.random_object_bbox: the input must be an integer label map, "
                              f"got {mask.dtype} {mask.shape}")
        key = chunk.key if self.seed is None else rng.RandomKey(int(self.seed), 0x0B1B)
        gen = rng.sample_generator(key, chunk.epoch, int(chunk.sample_ids[row]))
        blob, background = self._choose(chunk, row, mask, gen)
        if blob is None:
            start, end, label = np.zeros(mask.ndim, np.int32), np.asarray(mask.shape, np.int32), background
        else:
            start, end, label = np.asarray(blob.start, np.int32), np.asarray(blob.end, np.int32), blob.label
        if self.format == "box":
            out = [np.concatenate([start, end])]
        elif self.format == "start_end":
            out = [start, end]
        else:
            out = [start, (end - start).astype(np.int32)]
        if self.output_class:
            out.append(np.asarray(label, dtype=np.int32))
        return out

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return chunk.each_sample(lambda row, sample: self._one(chunk, row, sample), outputs=self.num_outputs)



@fn_function()
def random_object_bbox(
    data: DataNode,
    *,
    format: str = "anchor_shape",
    output_class: bool = False,
    background: int | DataNode | None = None,
    classes: int | Sequence[int] | DataNode | None = None,
    class_weights: Number | Sequence[Number] | DataNode | None = None,
    foreground_prob: Number | DataNode = 1.0,
    threshold: int | Sequence[int] | DataNode | None = None,
    k_largest: int | None = None,
    ignore_class: bool = False,
    cache_objects: bool = False,
    seed: int | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode | tuple[DataNode, ...]:
    """The box of a random object (connected blob of one label) of a label map.

    Args:
        data: an integer label map (any number of dimensions).
        format: ``"anchor_shape"`` (anchor, shape), ``"start_end"`` (start, end) or ``"box"`` (one output).
        output_class: add the label of the chosen object (the background label when none).
        background: the background label (default 0).
        classes: the labels that are objects (default: every label but the background).
        class_weights: relative probabilities of ``classes``.
        foreground_prob: probability of choosing an object rather than the whole input.
        threshold: minimum extent per axis of an object's box.
        k_largest: choose among the ``k`` largest boxes only.
        ignore_class: choose among all objects, whatever their class.
        cache_objects: accepted; has no effect.
        seed: a fixed random stream for this operator (default: the pipeline's).
    """
    del cache_objects
    if format not in _FORMATS:
        raise PipelineDefinitionError(
            f"segmentation.random_object_bbox: format must be one of {', '.join(repr(f) for f in _FORMATS)}, got {format!r}")
    if ignore_class and (classes is not None or class_weights is not None or output_class):
        raise PipelineDefinitionError(
            "segmentation.random_object_bbox: ignore_class cannot be combined with classes, class_weights or output_class")
    if k_largest is not None and k_largest < 1:
        raise PipelineDefinitionError(f"segmentation.random_object_bbox: k_largest must be at least 1, got {k_largest}")
    args = dict(background=background, classes=classes, class_weights=class_weights, foreground_prob=foreground_prob,
                threshold=threshold)
    constants, per_sample = split_arguments(args)
    fg = constants.get("foreground_prob", 1.0)
    if fg is not None and not 0.0 <= float(fg) <= 1.0:
        raise PipelineDefinitionError(f"segmentation.random_object_bbox: foreground_prob must be in [0, 1], got {fg}")
    op = RandomObjectBBox(format=format, output_class=output_class, background=constants.get("background"),
                          classes=constants.get("classes"), class_weights=constants.get("class_weights"),
                          foreground_prob=constants.get("foreground_prob", 1.0), threshold=constants.get("threshold"),
                          k_largest=k_largest, ignore_class=ignore_class, seed=seed, name=name)
    out = add_node(op, [data], per_sample, device=device)
    return out[0] if len(out) == 1 else out
