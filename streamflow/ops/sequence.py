"""Sequences (``F...`` layouts, e.g. the FHWC output of the video readers): ``per_frame``,
``sequence_rearrange``, ``element_extract``, and ``FrameWise``, which runs an image
operator on every frame of a sequence.

An image operator given a sequence (``add_frames_node``, called by the
operators' ``fn`` functions) becomes ``FrameWise(op)``: the sequences of a
chunk are split into their frames, the operator runs once on all of them,
and the frames are stacked back. Every frame of a sample shares the sample's
id, so its per-sample arguments and its random draws are the same on every
frame, as in DALI; an argument wrapped in ``fn.per_frame`` gives one value
per frame instead (its outer extent must equal the number of frames).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = [
    "ElementExtract",
    "FrameWise",
    "PerFrame",
    "SequenceRearrange",
    "add_frames_node",
    "element_extract",
    "frame_layout",
    "is_per_frame_argument",
    "per_frame",
    "sequence_rearrange",
]


def frame_layout(layout: str) -> str:
    """The layout of one frame of ``layout`` (``"FHWC"`` -> ``"HWC"``); other layouts unchanged."""
    return layout[1:] if layout.startswith("F") else layout


class PerFrame(Operator):
    """``per_frame``: marks its input as a sequence (layout ``F...``); the data is untouched."""

    name = "per_frame"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, layout: str, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self._layout = layout

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [list(chunk.inputs[0])]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def per_frame(data: DataNode, *, replace: bool = False, device: str | Device | None = None,
              name: str | None = None) -> DataNode:
    """Mark ``data`` as a sequence, so that as an argument it gives one value per frame.

    ``fn.flip(video, horizontal=fn.per_frame(flags))`` flips frame ``f`` of each
    sequence by ``flags[f]``. A layout not starting with ``F`` is an error
    unless ``replace=True`` (then its first letter becomes ``F``).
    """
    layout = input_layout(data, "per_frame")
    if layout and not layout.startswith("F"):
        if not replace:
            raise PipelineDefinitionError(
                f"per_frame: the input {data.name} has layout {layout!r}, which does not start with 'F'; "
                "pass replace=True to mark its outer dimension as frames"
            )
        layout = "F" + layout[1:]
    return add_node(PerFrame(layout or "F", name=name), [data], device=device)[0]


class FrameWise(Operator):
    """Runs ``inner`` on every frame of each input sequence; per-frame arguments are indexed by frame."""

    name = "frame_wise"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, inner: Operator, per_frame_args: frozenset[str]) -> None:
        super().__init__(name=inner.instance_name)
        self.inner = inner
        self.per_frame_args = per_frame_args
        self.name = inner.name  # type: ignore[misc]
        self.devices = inner.devices  # type: ignore[misc]
        self.per_sample_args = inner.per_sample_args  # type: ignore[misc]
        self.num_outputs = inner.num_outputs

    def place(self, device: str | Device | None, input_devices: Sequence[Device]) -> None:
        super().place(device, input_devices)
        self.inner.device = self.device

    def run_on(self, device: Device) -> Operator:
        self.inner.run_on(device)
        self.device = device
        return self

    def output_channels(self, input_channels: Sequence[int | None]) -> int | None:
        return self.inner.output_channels(input_channels)

    def layout(self, index: int) -> str:
        inner = self.inner.layout(index)
        return "F" + inner if inner else ""

    def expand(self, chunk: Chunk) -> tuple[Chunk, list[tuple[int, int]], dict[int, SampleError]]:
        """The frames of ``chunk``'s sequences as one chunk: (that chunk, each row's frame span, rows failed)."""
        frames: list[Any] = []
        spans: list[tuple[int, int]] = []
        failed: dict[int, SampleError] = {}
        owners: list[int] = []
        for row, seq in enumerate(chunk.inputs[0]):
            begin = len(frames)
            ndim = getattr(seq, "ndim", 0)
            if ndim < 2:
                failed[row] = SampleError(f"{self.name}: expected a sequence of frames, got shape {getattr(seq, 'shape', None)}")
            else:
                for name in self.per_frame_args:
                    values = chunk.args[name][row]
                    if len(np.atleast_1d(np.asarray(values))) != len(seq):
                        failed[row] = SampleError(
                            f"{self.name}: the per-frame argument {name} has {len(np.atleast_1d(np.asarray(values)))} "
                            f"values for a sequence of {len(seq)} frames"
                        )
                if row not in failed:
                    frames.extend(seq[f] for f in range(len(seq)))
                    owners.extend([row] * len(seq))
            spans.append((begin, len(frames)))
        args: dict[str, list[Any]] = {}
        for name, values in chunk.args.items():
            if name in self.per_frame_args:
                args[name] = [np.atleast_1d(np.asarray(values[r]))[f] for r, f in _frame_pairs(spans, owners)]
            else:
                args[name] = [values[r] for r in owners]
        sub = Chunk(
            inputs=[frames, *([chunk.inputs[i][r] for r in owners] for i in range(1, len(chunk.inputs)))],
            args=args,
            sample_ids=chunk.sample_ids[owners] if owners else chunk.sample_ids[:0],
            sources=[chunk.sources[r] for r in owners],
            epoch=chunk.epoch,
            key=chunk.key,
        )
        return sub, spans, failed

    def regroup(self, chunk: Chunk, sub: Chunk, outputs: list[list[Any]], spans: list[tuple[int, int]],
                failed: Mapping[int, SampleError], stack: Callable[[list[Any]], Any]) -> list[list[Any]]:
        """Stack each row's frames back into a sequence; a frame that failed fails its row."""
        result: list[list[Any]] = [[None] * len(spans) for _ in outputs]
        for row, (begin, end) in enumerate(spans):
            if row in failed:
                chunk.fail(row, failed[row])
                continue
            bad = next((j for j in range(begin, end) if j in sub.failures), None)
            if bad is not None:
                err = sub.failures[bad]
                chunk.fail(row, SampleError(f"frame {bad - begin}: {err.reason}", err.source))
                continue
            for k, out in enumerate(outputs):
                frames = out[begin:end]
                shapes = {tuple(f.shape) for f in frames}
                if len(shapes) != 1:
                    chunk.fail(row, SampleError(f"{self.name}: the frames came out in different shapes {sorted(shapes)}"))
                    break
                result[k][row] = stack(frames)
        return result

    def run(self, chunk: Chunk) -> list[list[Any]]:
        sub, spans, failed = self.expand(chunk)
        outputs = self.inner.run(sub) if len(sub) else [[] for _ in range(self.num_outputs)]

        def stack(frames: list[Any]) -> Any:
            return np.stack(frames)

        return self.regroup(chunk, sub, outputs, spans, failed, stack)


def is_per_frame_argument(node: DataNode) -> bool:
    """Whether an argument holds one value per frame. DALI's rule: its layout starts with ``F`` (``fn.per_frame``
    data, dynamic-mode batches marked per frame); also the matrices of transforms given per-frame arguments
    (``fn.transforms.*``, ``transforms.combine`` of them)."""
    op = node.producer.op
    if isinstance(op, PerFrame) or op.layout(node.index).startswith("F"):
        return True
    return not isinstance(op, FrameWise) and bool(getattr(op, "per_frame_args", None))


def _frame_pairs(spans: list[tuple[int, int]], owners: list[int]) -> list[tuple[int, int]]:
    """(row, frame number) of every expanded frame."""
    pairs: list[tuple[int, int]] = []
    for begin, end in spans:
        pairs.extend((owners[j], j - begin) for j in range(begin, end))
    return pairs


def add_frames_node(op: Operator, data: DataNode, per_sample: Mapping[str, DataNode] | None = None, *,
                    device: str | Device | None = None, frame_layouts: Sequence[str] = ("HWC",)) -> DataNode:
    """``add_node`` for an image operator: a sequence input (layout ``F...``) runs it frame by frame.

    Args:
        op: the operator, built for one frame (its layout without the ``F``).
        data: the input.
        per_sample: its per-sample arguments; those made by ``fn.per_frame`` vary by frame.
        device: as for ``add_node``.
        frame_layouts: the frame layouts ``op`` takes (a sequence of others is an error).
    """
    per_sample = dict(per_sample or {})
    layout = input_layout(data, op.name)
    marked = frozenset(k for k, v in per_sample.items() if is_per_frame_argument(v))
    if not layout.startswith("F"):
        if marked:
            raise PipelineDefinitionError(
                f"{op.name}: {', '.join(sorted(marked))} given per frame (fn.per_frame), but the input {data.name} "
                f"is not a sequence (layout {layout!r}; sequences have layouts starting with 'F', like 'FHWC')"
            )
        return add_node(op, [data], per_sample, device=device)[0]
    frame = layout[1:]
    if frame and frame not in frame_layouts:
        raise PipelineDefinitionError(
            f"{op.name}: sequences of {frame} frames are not supported; give {' or '.join('F' + f for f in frame_layouts)}"
        )
    return add_node(FrameWise(op, marked), [data], per_sample, device=device)[0]


class SequenceRearrange(Operator):
    """``sequence_rearrange``: ``out[i] = in[new_order[i]]`` along the outermost (frame) axis."""

    name = "sequence_rearrange"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"new_order"})
    keeps_channels = True

    def __init__(self, new_order: Any, layout: str, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.new_order = None if new_order is None else _order(new_order)
        self._layout = layout

    def order_of(self, chunk: Chunk, row: int, frames: int) -> np.ndarray:
        order = chunk.arg("new_order", row, self.new_order)
        order = _order(order) if order is not None else None
        if order is None or len(order) == 0:
            raise SampleError("sequence_rearrange: new_order is empty; empty output sequences are not allowed")
        if order.min() < 0 or order.max() >= frames:
            raise SampleError(
                f"sequence_rearrange: new_order {order.tolist()} has indices outside [0, {frames}) "
                f"(the sequence has {frames} elements)"
            )
        return order

    def rearrange(self, chunk: Chunk, row: int, seq: Any, xp: Any = np) -> Any:
        """``row``'s sequence reordered; ``seq`` is an array of ``xp`` (numpy, or cupy on the GPU)."""
        if seq.ndim < 1:
            raise SampleError("sequence_rearrange: expected a sequence, got a scalar")
        order = self.order_of(chunk, row, int(seq.shape[0]))
        return xp.ascontiguousarray(seq[xp.asarray(order)])

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, seq: self.rearrange(chunk, row, np.asarray(seq)))]

    def layout(self, index: int) -> str:
        return self._layout


def _order(value: Any) -> np.ndarray:
    return np.atleast_1d(np.asarray(value)).reshape(-1).astype(np.int64)


def _check_sequence_layout(data: DataNode, op: str) -> str:
    layout = input_layout(data, op)
    if layout and not layout.startswith("F"):
        raise PipelineDefinitionError(
            f"{op}: the input {data.name} has layout {layout!r}; a sequence's layout starts with 'F' (frames)"
        )
    return layout


@fn_function()
def sequence_rearrange(data: DataNode, *, new_order: Sequence[int] | int | DataNode, device: str | Device | None = None,
                       name: str | None = None) -> DataNode:
    """Reorder, repeat or drop the frames of each sequence: ``out[i] = in[new_order[i]]``.

    Args:
        new_order: frame indices in ``[0, frames)`` (a list, or per sample a 1-D array).
    """
    layout = _check_sequence_layout(data, "sequence_rearrange")
    constants, per_sample = split_arguments(dict(new_order=new_order))
    order = constants.get("new_order")
    if order is not None and (len(_order(order)) == 0 or _order(order).min() < 0):
        raise PipelineDefinitionError(f"sequence_rearrange: new_order must be non-empty, non-negative indices, got {order!r}")
    return add_node(SequenceRearrange(order, layout, name=name), [data], per_sample, device=device)[0]


class ElementExtract(Operator):
    """``element_extract``: one output per entry of ``element_map``, the frame it names."""

    name = "element_extract"
    devices = frozenset({Device.CPU, Device.GPU})
    keeps_channels = True

    def __init__(self, element_map: Sequence[int], layout: str, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.element_map = [int(e) for e in element_map]
        self.num_outputs = len(self.element_map)
        self._layout = layout

    def extract(self, chunk: Chunk, seqs: Sequence[Any], xp: Any = np) -> list[list[Any]]:
        """Per element of ``element_map``, that element of each sequence (arrays of ``xp``: numpy, or cupy)."""
        outs: list[list[Any]] = [[None] * len(chunk) for _ in self.element_map]
        for row, seq in enumerate(seqs):
            n = int(seq.shape[0]) if seq.ndim else 0
            bad = [e for e in self.element_map if not 0 <= e < n]
            if bad:
                chunk.fail(row, SampleError(f"element_extract: element {bad[0]} is outside the sequence of {n} elements"))
                continue
            for k, e in enumerate(self.element_map):
                outs[k][row] = xp.ascontiguousarray(seq[e])
        return outs

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return self.extract(chunk, [np.asarray(seq) for seq in chunk.inputs[0]])

    def layout(self, index: int) -> str:
        return frame_layout(self._layout) if self._layout.startswith("F") else ""


@fn_function()
def element_extract(data: DataNode, *, element_map: Sequence[int] | int, device: str | Device | None = None,
                    name: str | None = None) -> DataNode | tuple[DataNode, ...]:
    """The frames ``element_map`` names, one output each (``FHWC`` in, ``HWC`` out).

    One element gives one ``DataNode``; several give a tuple.
    """
    layout = _check_sequence_layout(data, "element_extract")
    elements = [int(e) for e in np.atleast_1d(np.asarray(element_map)).reshape(-1)]
    if not elements or min(elements) < 0:
        raise PipelineDefinitionError(f"element_extract: element_map must be non-empty, non-negative indices, got {element_map!r}")
    outputs = add_node(ElementExtract(elements, layout, name=name), [data], device=device)
    return outputs[0] if len(outputs) == 1 else outputs
