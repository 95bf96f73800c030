"""Fused decode + crop: ``decoders.image_random_crop``, ``decoders.image_crop``,
``decoders.image_slice``.

Each reads the oriented image size from the header (``ImageDecoder.peek_shape``),
computes the window, and decodes only that window (``decode_batch(regions=...)``,
an nvImageCodec region decode). The result equals decoding the whole image and
slicing the window, bit for bit (nvImageCodec's region decode is exact, EXIF
orientation included), but reads and converts only the window's pixels.

Windows:

* ``image_random_crop``: the random-crop draw of ``ops.random_crop``
  (``random_area``, ``random_aspect_ratio``, ``num_attempts``), one per sample,
  a pure function of (seed, operator, epoch, sample id).
* ``image_crop``: ``crop=(h, w)`` at ``crop_pos_x/y`` (anchor
  ``round(pos * (extent - crop))``, halves away from zero; ``rounding``), as
  ``fn.crop``; a window larger than the image is an error naming the file.
* ``image_slice``: ``anchor`` and ``shape`` in the order of ``axes`` (default
  ``(1, 0)``, i.e. ``(x, y)``, as DALI), normalized to the image size by
  default; start ``= llround(anchor * extent)``, end ``= llround((anchor +
  shape) * extent)`` (DALI's ``PositionalSliceAttr``, halves away from zero);
  integer anchors and shapes are always absolute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DecodeError, PipelineDefinitionError, SampleError
from .base import Chunk
from .crop import CropSpec, crop_window
from .decoder import ImageDecode
from .random_crop import RandomCropParams, sample_window

__all__ = ["DecoderCrop", "ImageCrop", "ImageRandomCrop", "ImageSlice", "slice_window"]

Window = tuple[int, int, int, int]  # (y0, x0, h, w)


class DecoderCrop(ImageDecode):
    """A decoder that decodes one window per sample (subclasses say which)."""

    name = "decoders.image_crop_base"

    def window(self, chunk: Chunk, row: int, height: int, width: int) -> Window:
        raise NotImplementedError

    def run(self, chunk: Chunk) -> list[list[Any]]:
        decoder = self._get_decoder()
        data = chunk.inputs[0]
        regions: list[tuple[int, int, int, int] | None] = []
        failed: dict[int, SampleError] = {}
        for row, raw in enumerate(data):
            source = chunk.sources[row]
            try:
                height, width, _ = decoder.peek_shape(raw, source)
                y0, x0, h, w = self.window(chunk, row, height, width)
            except DecodeError as err:
                failed[row] = err
                regions.append(None)
                continue
            except (SampleError, ValueError) as err:
                reason = err.reason if isinstance(err, SampleError) else str(err)
                failed[row] = SampleError(f"{self.name}: {reason}", source)
                regions.append(None)
                continue
            if h <= 0 or w <= 0 or y0 < 0 or x0 < 0 or y0 + h > height or x0 + w > width:
                failed[row] = SampleError(
                    f"{self.name}: window {h}x{w} at (y={y0}, x={x0}) does not fit the "
                    f"{height}x{width} image", source,
                )
                regions.append(None)
                continue
            regions.append((y0, x0, y0 + h, x0 + w))
        todo = [row for row in range(len(data)) if row not in failed]
        out: list[Any] = [None] * len(data)
        if todo:
            results = decoder.decode_batch(
                [data[r] for r in todo], [chunk.sources[r] for r in todo], regions=[regions[r] for r in todo],
            )
            for row, result in zip(todo, results):
                if isinstance(result, DecodeError):
                    failed[row] = result
                else:
                    out[row] = result
        for row, failure in failed.items():
            chunk.fail(row, failure)
        return [out]


class ImageRandomCrop(DecoderCrop):
    """Decodes a random window of each image (DALI's random-crop draw)."""

    name = "decoders.image_random_crop"
    uses_random = True

    def __init__(self, params: RandomCropParams, *, seed: int | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.params = params
        self.seed = seed

    def window(self, chunk: Chunk, row: int, height: int, width: int) -> Window:
        return sample_window(chunk, row, height, width, self.params, self.seed).window


class ImageCrop(DecoderCrop):
    """Decodes a fixed-size window at a relative position."""

    name = "decoders.image_crop"
    per_sample_args = frozenset({"crop_h", "crop_w", "crop_pos_x", "crop_pos_y"})

    def __init__(self, spec: CropSpec, **kw: Any) -> None:
        super().__init__(**kw)
        self.spec = spec

    def window(self, chunk: Chunk, row: int, height: int, width: int) -> Window:
        s = self.spec
        crop_h = chunk.arg("crop_h", row, s.crop_h)
        crop_w = chunk.arg("crop_w", row, s.crop_w)
        return crop_window(
            height, width,
            None if crop_h is None else float(crop_h), None if crop_w is None else float(crop_w),
            float(chunk.arg("crop_pos_y", row, s.pos_y)), float(chunk.arg("crop_pos_x", row, s.pos_x)),
            s.rounding,
        )


def _axes(axes: Sequence[int] | None, axis_names: str | None, op_name: str) -> tuple[int, ...]:
    if axis_names is not None:
        index = {"H": 0, "W": 1}
        try:
            return tuple(index[c] for c in axis_names.upper())
        except KeyError:
            raise PipelineDefinitionError(f"{op_name}: axis_names must use H and W, got {axis_names!r}") from None
    result = []
    for a in (1, 0) if axes is None else axes:
        a = int(a)
        if a < -3 or a > 2:
            raise PipelineDefinitionError(f"{op_name}: axes must be in [-3, 2], got {list(axes or [])}")
        a = a + 3 if a < 0 else a
        if a == 2:
            raise PipelineDefinitionError(f"{op_name}: slicing the channel axis is not supported")
        result.append(a)
    if len(set(result)) != len(result) or not result:
        raise PipelineDefinitionError(f"{op_name}: axes must be distinct, got {list(axes or [])}")
    return tuple(result)


def _llround(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def slice_window(
    height: int, width: int, anchor: Any, shape: Any, axes: Sequence[int] = (1, 0),
    normalized_anchor: bool = True, normalized_shape: bool = True,
) -> Window:
    """The ``(y0, x0, h, w)`` of a slice, with DALI's rounding (see the module doc)."""
    a_arr, s_arr = np.asarray(anchor).reshape(-1), np.asarray(shape).reshape(-1)
    if a_arr.size != len(axes) or s_arr.size != len(axes):
        raise ValueError(
            f"anchor and shape must have {len(axes)} values (one per axis of {tuple(axes)}), "
            f"got {a_arr.size} and {s_arr.size}"
        )
    norm_a = normalized_anchor and np.issubdtype(a_arr.dtype, np.floating)
    norm_s = normalized_shape and np.issubdtype(s_arr.dtype, np.floating)
    extents = (height, width)
    start, size = [0, 0], [height, width]
    for i, dim in enumerate(axes):
        # DALI reads float arguments as float32, then computes in double.
        a = float(np.float32(a_arr[i])) if np.issubdtype(a_arr.dtype, np.floating) else float(a_arr[i])
        s = float(np.float32(s_arr[i])) if np.issubdtype(s_arr.dtype, np.floating) else float(s_arr[i])
        n = extents[dim]
        if norm_a and norm_s:
            end = (a + s) * n
            a *= n
        else:
            if norm_a:
                a *= n
            if norm_s:
                s *= n
            end = a + s
        if not (math.isfinite(a) and math.isfinite(end)) or end < a:
            raise ValueError(f"slice end before its start on axis {dim}: start={a}, end={end}")
        start[dim] = _llround(a)
        size[dim] = _llround(end) - start[dim]
    return start[0], start[1], size[0], size[1]


class ImageSlice(DecoderCrop):
    """Decodes the window given by an anchor and a shape (per sample allowed)."""

    name = "decoders.image_slice"
    per_sample_args = frozenset({"anchor", "shape"})

    def __init__(self, anchor: Any = None, shape: Any = None, *, axes: Sequence[int] | None = None,
                 axis_names: str | None = None, normalized_anchor: bool = True, normalized_shape: bool = True,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.axes = _axes(axes, axis_names, self.name)
        self.anchor = None if anchor is None else np.asarray(anchor)
        self.shape = None if shape is None else np.asarray(shape)
        for label, value in (("anchor", self.anchor), ("shape", self.shape)):
            if value is not None and value.size != len(self.axes):
                raise PipelineDefinitionError(
                    f"{self.name}: {label} must have {len(self.axes)} values (axes {self.axes}), got {value.size}"
                )
        self.normalized_anchor = bool(normalized_anchor)
        self.normalized_shape = bool(normalized_shape)

    def window(self, chunk: Chunk, row: int, height: int, width: int) -> Window:
        anchor = chunk.arg("anchor", row, self.anchor)
        shape = chunk.arg("shape", row, self.shape)
        if anchor is None or shape is None:
            raise ValueError("image_slice needs both an anchor and a shape")
        return slice_window(height, width, anchor, shape, self.axes, self.normalized_anchor, self.normalized_shape)
