"""``permute_batch``: a batch made of the input batch's samples, in another order.

``out[i] = in[indices[i]]``; repetitions and omissions are allowed. ``indices``
is a list as long as the batch, or a per-sample scalar (a ``DataNode``). The
operator sees the whole batch at once (``Operator.whole_batch``); a sample
that failed earlier under ``on_error="skip"`` is not in it, and a batch that
no longer matches a constant list of indices fails clearly instead of
picking the wrong samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["PermuteBatch", "permute_batch"]


class PermuteBatch(Operator):
    """Selects, for output sample ``i``, input sample ``indices[i]`` of the same batch."""

    name: ClassVar[str] = "permute_batch"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"indices"})
    keeps_channels = True
    whole_batch = True

    def __init__(self, indices: Sequence[int] | None, *, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        self.indices = None if indices is None else tuple(indices)
        self._layout = layout

    def run(self, chunk: Chunk) -> list[list[Any]]:
        n = len(chunk)
        if self.indices is not None and len(self.indices) != n:
            reason = (f"permute_batch: indices has {len(self.indices)} entries for a batch of {n} samples; "
                      "a constant list must match the batch size (samples that failed earlier under "
                      "on_error='skip' leave the batch)")
            for row in range(n):
                chunk.fail(row, SampleError(reason))
            return [[None] * n]
        out: list[Any] = []
        for row in range(n):
            index = self._index(chunk, row)
            if not 0 <= index < n:
                chunk.fail(row, SampleError(f"permute_batch: index {index} is outside the batch of {n} samples"))
                out.append(None)
            else:
                out.append(chunk.inputs[0][index])
        return [out]

    def _index(self, chunk: Chunk, row: int) -> int:
        if self.indices is not None:
            return int(self.indices[row])
        value = np.asarray(chunk.args["indices"][row])
        if value.size != 1 or value.dtype.kind not in "iu":
            raise SampleError(f"permute_batch: a per-sample index must be one integer, got {value.tolist()}")
        return int(value.reshape(()))

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def permute_batch(
    input: DataNode,
    *,
    indices: int | Sequence[int] | DataNode,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """A batch of the input's samples picked by ``indices``: ``out[i] = input[indices[i]]``.

    Args:
        input: the batch to pick from.
        indices: one index per output sample, in ``[0, batch_size)`` (a list
            as long as the batch, or a per-sample integer ``DataNode``).
    """
    constants, per_sample = split_arguments({"indices": indices})
    fixed: tuple[int, ...] | None = None
    if "indices" in constants:
        value = constants["indices"]
        values = [value] if isinstance(value, (int, np.integer)) else value
        try:
            fixed = tuple(int(v) for v in values)
        except (TypeError, ValueError):
            raise PipelineDefinitionError(
                f"permute_batch: indices must be a list of ints or a DataNode, got {value!r}") from None
        if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) for v in values):
            raise PipelineDefinitionError(f"permute_batch: indices must be integers, got {list(values)!r}")
        if any(v < 0 for v in fixed):
            raise PipelineDefinitionError(f"permute_batch: indices must not be negative, got {list(fixed)}")
    op = PermuteBatch(fixed, layout=input_layout(input, "permute_batch"), name=name)
    return add_node(op, [input], per_sample, device=device)[0]
