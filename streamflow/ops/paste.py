"""``paste`` and ``multi_paste``: images placed on canvases, as DALI 2.4's CPU operators.

``paste``: each HWC image on a canvas ``ratio`` times larger (at least
``min_canvas_size``), filled with ``fill_value``: canvas extent
``int(max(n * ratio, min_canvas_size))`` and offset ``int(paste * (canvas -
n))``, both truncated from float32 arithmetic, as measured on DALI 2.4.

``multi_paste``: regions of HWC images pasted, in order (later over earlier),
onto zero canvases. Either one input and ``in_ids`` (output sample ``i`` takes
the batch's samples ``in_ids[i]``: the operator sees the whole batch), or
several inputs (output ``i`` takes sample ``i`` of each). Per region, ``(y,
x)`` anchors and ``(h, w)`` shapes: absolute, or relative (anchors truncated,
shapes rounded up, as DALI 2.4); a region must lie inside its input and the
canvas. ``dtype`` converts as ``cast`` (float to integer rounds half away from
zero and saturates).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, require_node, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device, Number
from .arguments import fn_function
from .cast import cast_array, parse_output_dtype

__all__ = ["MultiPaste", "Paste", "multi_paste", "paste", "paste_geometry"]


def _f32(x: Any) -> np.float32:
    return np.float32(x)


def integer_fill(values: Sequence[float], dtype: np.dtype) -> np.ndarray:
    """Fill values in ``dtype``: integers take the float truncated and wrapped (DALI's cast of a fill)."""
    arr = np.asarray(values, dtype=np.float64)
    if dtype.kind in "ui":
        return np.trunc(np.nan_to_num(arr)).astype(np.int64).astype(dtype)
    return arr.astype(dtype)


def paste_geometry(height: int, width: int, ratio: float, paste_y: float, paste_x: float,
                   min_canvas: float) -> tuple[int, int, int, int]:
    """(canvas height, canvas width, y0, x0) of a paste, truncated from float32 as DALI."""
    ch = int(max(_f32(height) * _f32(ratio), _f32(min_canvas)))
    cw = int(max(_f32(width) * _f32(ratio), _f32(min_canvas)))
    return ch, cw, int(_f32(paste_y) * _f32(ch - height)), int(_f32(paste_x) * _f32(cw - width))


def _scalar(value: Any, what: str) -> float:
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if arr.size != 1:
        raise SampleError(f"paste: {what} must be one number per sample, got {arr.size} values")
    return float(arr[0])


class Paste(Operator):
    """Places each HWC image on a larger canvas filled with ``fill_value``."""

    keeps_channels = True
    name = "paste"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"ratio", "paste_x", "paste_y", "min_canvas_size"})

    def __init__(self, *, ratio: float | None, fill_value: Sequence[float], paste_x: float = 0.5,
                 paste_y: float = 0.5, min_canvas_size: float = 0.0, n_channels: int = 3,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.ratio = ratio
        self.paste_x, self.paste_y, self.min_canvas_size = paste_x, paste_y, min_canvas_size
        self.fill = tuple(float(v) for v in fill_value)
        self.n_channels = int(n_channels)
        if self.n_channels < 1:
            raise PipelineDefinitionError(f"paste: n_channels must be >= 1, got {n_channels}")
        if len(self.fill) not in (1, self.n_channels):
            raise PipelineDefinitionError(
                f"paste: fill_value must have 1 or n_channels={self.n_channels} values, got {len(self.fill)}"
            )
        if ratio is not None and not ratio >= 1:
            raise PipelineDefinitionError(f"paste: ratio must be >= 1, got {ratio}")
        for label, v in (("paste_x", paste_x), ("paste_y", paste_y)):
            if not 0 <= v <= 1:
                raise PipelineDefinitionError(f"paste: {label} must be in [0, 1], got {v}")

    def canvas(self, chunk: Chunk, row: int, shape: tuple[int, int, int]) -> tuple[int, int, int, int]:
        """(canvas height, canvas width, y0, x0) for ``row``'s HWC image of ``shape``, its arguments checked."""
        h, w, c = shape
        if len(self.fill) != 1 and c != len(self.fill):
            raise SampleError(
                f"paste: the image has {c} channels but fill_value has {len(self.fill)} values "
                f"(n_channels={self.n_channels}); give one fill value or one per channel"
            )
        ratio = _scalar(chunk.arg("ratio", row, self.ratio), "ratio")
        px = _scalar(chunk.arg("paste_x", row, self.paste_x), "paste_x")
        py = _scalar(chunk.arg("paste_y", row, self.paste_y), "paste_y")
        min_canvas = _scalar(chunk.arg("min_canvas_size", row, self.min_canvas_size), "min_canvas_size")
        if not ratio >= 1:
            raise SampleError(f"paste: ratio must be >= 1, got {ratio}")
        if not (0 <= px <= 1 and 0 <= py <= 1):
            raise SampleError(f"paste: paste_x and paste_y must be in [0, 1], got {px} and {py}")
        ch, cw, y0, x0 = paste_geometry(h, w, ratio, py, px, min_canvas)
        if ch * cw * c > (1 << 34):
            raise SampleError(f"paste: the canvas {ch}x{cw}x{c} is too large (ratio={ratio})")
        return ch, cw, y0, x0

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, sample: Any) -> np.ndarray:
            image = np.asarray(sample)
            if image.ndim != 3 or image.dtype.kind not in "uif":
                raise SampleError(f"paste: expects numeric HWC images, got shape {image.shape} dtype {image.dtype}")
            h, w, c = image.shape
            ch, cw, y0, x0 = self.canvas(chunk, row, (h, w, c))
            out = chunk.output_buffer(row, (ch, cw, c), image.dtype)
            if out is None:
                out = np.empty((ch, cw, c), image.dtype)
            out[...] = integer_fill(self.fill, image.dtype)
            out[y0 : y0 + h, x0 : x0 + w] = image
            return out

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return "HWC"


@fn_function()
def paste(
    data: DataNode,
    *,
    ratio: Number | DataNode,
    fill_value: Number | Sequence[Number],
    paste_x: Number | DataNode = 0.5,
    paste_y: Number | DataNode = 0.5,
    min_canvas_size: Number | DataNode = 0.0,
    n_channels: int = 3,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Paste HWC images on a canvas ``ratio`` times larger, filled with ``fill_value``.

    Args:
        ratio: canvas size / image size, >= 1 (*per sample*).
        fill_value: the canvas colour, one value or ``n_channels`` values.
        paste_x, paste_y: where the image goes, 0 = left/top, 1 = right/bottom (*per sample*).
        min_canvas_size: the smallest canvas extent (*per sample*).
        n_channels: the images' channels (the length of ``fill_value``).

    The canvas extent is ``int(max(n * ratio, min_canvas_size))`` and the offset
    ``int(paste * (canvas - n))`` (float32, truncated, as DALI). DALI pastes
    only uint8 images; any numeric type works here (integer fills truncated).
    """
    constants, per_sample = split_arguments(
        dict(ratio=ratio, paste_x=paste_x, paste_y=paste_y, min_canvas_size=min_canvas_size))
    fills = np.asarray(fill_value, dtype=np.float64).reshape(-1)
    op = Paste(
        ratio=None if "ratio" in per_sample else float(constants["ratio"]),
        fill_value=tuple(fills.tolist()),
        paste_x=float(constants.get("paste_x", 0.5)), paste_y=float(constants.get("paste_y", 0.5)),
        min_canvas_size=float(constants.get("min_canvas_size", 0.0)), n_channels=n_channels, name=name,
    )
    return add_node(op, [require_node(data, "paste")], per_sample, device=device)[0]


# --- multi_paste --------------------------------------------------------------------------------

_REGION_ARGS = ("in_anchors", "in_anchors_rel", "shapes", "shapes_rel", "out_anchors", "out_anchors_rel")


def _pairs(value: Any, count: int, what: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "uif":
        raise SampleError(f"multi_paste: {what} must be numbers, got dtype {arr.dtype}")
    if arr.size != 2 * count:
        raise SampleError(
            f"multi_paste: {what} must hold {count} (y, x) pairs (one per pasted region), got shape {arr.shape}"
        )
    return arr.reshape(count, 2)


class MultiPaste(Operator):
    """Pastes regions of several images onto each output canvas (see the module doc)."""

    name = "multi_paste"
    per_sample_args = frozenset({*_REGION_ARGS, "in_ids", "output_size"})

    def __init__(self, *, num_inputs: int, in_ids: Any = None, output_size: Any = None,
                 regions: dict[str, Any] | None = None, per_sample_ids: bool = False,
                 per_sample_size: bool = False, dtype: Any = None, name: str | None = None) -> None:
        super().__init__(name=name)
        self.num_inputs = num_inputs
        self.in_ids = None if in_ids is None else np.asarray(in_ids, dtype=np.int64).reshape(-1)
        self.output_size = None if output_size is None else np.asarray(output_size, dtype=np.int64).reshape(-1)
        if self.output_size is not None and (self.output_size.size != 2 or (self.output_size < 0).any()):
            raise PipelineDefinitionError(f"multi_paste: output_size must be (H, W) >= 0, got {output_size!r}")
        self.regions = {k: np.asarray(v) for k, v in (regions or {}).items()}
        self.out_dtype = None if dtype is None else parse_output_dtype(dtype, "multi_paste: dtype")
        self.uses_ids = in_ids is not None or per_sample_ids
        # Output i may read any sample of the batch (in_ids), or the canvas comes from the whole
        # batch's shape (no output_size): the engine then hands over the whole batch at once.
        self.whole_batch = self.uses_ids or (output_size is None and not per_sample_size)

    def _sources(self, chunk: Chunk, row: int) -> list[np.ndarray]:
        if not self.uses_ids:
            return [np.asarray(col[row]) for col in chunk.inputs]
        ids = np.asarray(chunk.arg("in_ids", row, self.in_ids)).reshape(-1)
        batch = chunk.inputs[0]
        if ids.dtype.kind not in "ui":
            raise SampleError(f"multi_paste: in_ids must be integers, got dtype {ids.dtype}")
        bad = [int(i) for i in ids if not 0 <= i < len(batch)]
        if bad:
            raise SampleError(f"multi_paste: in_ids {bad} are outside the batch of {len(batch)} samples")
        return [np.asarray(batch[int(i)]) for i in ids]

    def _canvas(self, chunk: Chunk, row: int) -> tuple[int, int]:
        size = chunk.arg("output_size", row, self.output_size)
        if size is not None:
            hw = np.asarray(size).reshape(-1)
            if hw.size != 2 or (hw < 0).any():
                raise SampleError(f"multi_paste: output_size must be (H, W) >= 0, got {hw.tolist()}")
            return int(hw[0]), int(hw[1])
        shapes = {np.asarray(s).shape[:2] for col in chunk.inputs for s in col}
        if len(shapes) != 1:
            raise SampleError(
                f"multi_paste: the input samples differ in shape ({sorted(shapes)[:3]}...); give output_size=(H, W)"
            )
        h, w = shapes.pop()
        return int(h), int(w)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, _: Any) -> np.ndarray:
            sources = self._sources(chunk, row)
            count = len(sources)
            for s in sources:
                if s.ndim != 3 or s.dtype.kind not in "uif":
                    raise SampleError(f"multi_paste: expects numeric HWC images, got shape {s.shape} dtype {s.dtype}")
            if len({(s.shape[2], s.dtype) for s in sources}) > 1:
                raise SampleError("multi_paste: the pasted images must have the same channels and type")
            ch, cw = self._canvas(chunk, row)
            channels = sources[0].shape[2] if sources else 1
            in_dtype = sources[0].dtype if sources else np.dtype(np.uint8)
            dtype = self.out_dtype or in_dtype
            args = {k: chunk.arg(k, row, self.regions.get(k)) for k in _REGION_ARGS}
            vals = {k: _pairs(v, count, k) for k, v in args.items() if v is not None}
            out = chunk.output_buffer(row, (ch, cw, channels), dtype)
            if out is None:
                out = np.empty((ch, cw, channels), dtype)
            out[...] = 0
            for k, src in enumerate(sources):
                sh, sw = src.shape[:2]
                ia = _anchor(vals, "in_anchors", k, (sh, sw))
                oa = _anchor(vals, "out_anchors", k, (ch, cw))
                if "shapes" in vals:
                    size = (int(vals["shapes"][k, 0]), int(vals["shapes"][k, 1]))
                elif "shapes_rel" in vals:
                    rel = vals["shapes_rel"][k]
                    size = (math.ceil(_f32(rel[0]) * _f32(sh)), math.ceil(_f32(rel[1]) * _f32(sw)))
                else:
                    size = (sh - ia[0], sw - ia[1])
                for d, label in ((0, "height"), (1, "width")):
                    if size[d] < 0 or ia[d] < 0 or ia[d] + size[d] > (sh, sw)[d]:
                        raise SampleError(
                            f"multi_paste: region {k} (anchor {ia}, shape {size}) leaves its {sh}x{sw} input"
                        )
                    if oa[d] < 0 or oa[d] + size[d] > (ch, cw)[d]:
                        raise SampleError(
                            f"multi_paste: region {k} (shape {size}) at {oa} leaves the {ch}x{cw} output; "
                            f"the pasted region must be within the output ({label})"
                        )
                part = src[ia[0] : ia[0] + size[0], ia[1] : ia[1] + size[1]]
                out[oa[0] : oa[0] + size[0], oa[1] : oa[1] + size[1]] = (
                    part if dtype == in_dtype else cast_array(part, dtype))
            return out

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return "HWC"


def _anchor(vals: dict[str, np.ndarray], key: str, k: int, extents: tuple[int, int]) -> tuple[int, int]:
    if key in vals:
        return int(vals[key][k, 0]), int(vals[key][k, 1])
    rel = vals.get(key + "_rel")
    if rel is None:
        return 0, 0
    return int(_f32(rel[k, 0]) * _f32(extents[0])), int(_f32(rel[k, 1]) * _f32(extents[1]))


@fn_function()
def multi_paste(
    *inputs: DataNode,
    in_ids: Sequence[int] | int | DataNode | None = None,
    in_anchors: Sequence[Any] | DataNode | None = None,
    in_anchors_rel: Sequence[Any] | DataNode | None = None,
    shapes: Sequence[Any] | DataNode | None = None,
    shapes_rel: Sequence[Any] | DataNode | None = None,
    out_anchors: Sequence[Any] | DataNode | None = None,
    out_anchors_rel: Sequence[Any] | DataNode | None = None,
    output_size: Sequence[int] | DataNode | None = None,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Paste regions of HWC images onto zero canvases, in order (later over earlier).

    Args:
        inputs: one batch (with ``in_ids``) or up to 64 batches (output ``i``
            takes sample ``i`` of each, in order).
        in_ids: per output sample, the indices of the batch's samples to paste
            (*per sample*: a list per sample).
        in_anchors, in_anchors_rel: ``(y, x)`` per region in its input
            (default 0); relative values are truncated.
        shapes, shapes_rel: ``(h, w)`` per region (default: to the input's
            end); relative values are rounded up.
        out_anchors, out_anchors_rel: ``(y, x)`` per region on the canvas.
        output_size: ``(H, W)`` of the canvas; without it every input sample
            must have the same height and width, which the canvas takes.
        dtype: output type (default: the input's), converted as ``fn.cast``.

    Each region must lie inside its input and the canvas (as DALI; an error
    names the region). Arguments given as ``DataNode``s hold ``K x 2``
    arrays per sample, ``K`` the number of regions.
    """
    if not inputs:
        raise PipelineDefinitionError("multi_paste: give at least one input")
    if len(inputs) > 64:
        raise PipelineDefinitionError(f"multi_paste: at most 64 inputs, got {len(inputs)}")
    nodes = [require_node(x, "multi_paste", i) for i, x in enumerate(inputs)]
    given = dict(in_ids=in_ids, in_anchors=in_anchors, in_anchors_rel=in_anchors_rel, shapes=shapes,
                 shapes_rel=shapes_rel, out_anchors=out_anchors, out_anchors_rel=out_anchors_rel,
                 output_size=output_size)
    constants, per_sample = split_arguments({k: v for k, v in given.items() if v is not None})
    if "in_ids" in given and given["in_ids"] is not None and len(nodes) != 1:
        raise PipelineDefinitionError(f"multi_paste: in_ids needs exactly one input, got {len(nodes)}")
    for a, b in (("in_anchors", "in_anchors_rel"), ("shapes", "shapes_rel"), ("out_anchors", "out_anchors_rel")):
        if given[a] is not None and given[b] is not None:
            raise PipelineDefinitionError(f"multi_paste: {a!r} and {b!r} are mutually exclusive")
    op = MultiPaste(
        num_inputs=len(nodes), in_ids=constants.get("in_ids"), output_size=constants.get("output_size"),
        regions={k: v for k, v in constants.items() if k in _REGION_ARGS},
        per_sample_ids="in_ids" in per_sample, per_sample_size="output_size" in per_sample, dtype=dtype, name=name,
    )
    return add_node(op, nodes, per_sample, device=device)[0]
