"""``transpose``: reorder the dimensions of each sample (CPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import (
    Device,
)
from .arguments import fn_function

__all__ = ["Transpose", "transpose"]


class Transpose(Operator):
    """Reorders the dimensions of each sample: output dim ``i`` is input dim ``perm[i]``."""

    name = "transpose"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, perm: Sequence[int] | None = None, *, input_layout: str = "",
                 output_layout: str | None = None, transpose_layout: bool = True,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.perm = None if perm is None else tuple(int(p) for p in perm)
        if self.perm is not None and sorted(self.perm) != list(range(len(self.perm))):
            raise PipelineDefinitionError(f"transpose: perm must be a permutation of 0..n-1, got {list(perm or [])}")
        self.input_layout = input_layout or ""
        if output_layout is not None:
            self._layout = output_layout
        elif transpose_layout and self.perm is not None and len(self.input_layout) == len(self.perm):
            self._layout = "".join(self.input_layout[p] for p in self.perm)
        elif transpose_layout and self.perm is None and self.input_layout:
            self._layout = self.input_layout[::-1]
        else:
            self._layout = self.input_layout
        if output_layout is not None and self.perm is not None and len(output_layout) not in (0, len(self.perm)):
            raise PipelineDefinitionError(
                f"transpose: output_layout {output_layout!r} does not have {len(self.perm)} dimensions"
            )

    def perm_for(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The permutation for a sample of ``shape`` (a ``SampleError`` when it does not fit)."""
        perm = self.perm if self.perm is not None else tuple(range(len(shape)))[::-1]
        if len(perm) != len(shape):
            raise SampleError(f"transpose: perm {list(perm)} has {len(perm)} dimensions but the sample has shape {shape}")
        return perm

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, sample: Any) -> np.ndarray:
            arr = np.asarray(sample)
            return np.asarray(np.transpose(arr, self.perm_for(arr.shape)), order="C")

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout

@fn_function()
def transpose(
    data: DataNode,
    *,
    perm: Sequence[int] | None = None,
    output_layout: str | None = None,
    transpose_layout: bool = True,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Reorder dimensions: output dimension ``i`` is input dimension ``perm[i]``.

    Args:
        perm: a permutation, e.g. ``[2, 0, 1]`` for HWC -> CHW. Default: reverse.
        output_layout: the layout name of the result (default: the input's,
            permuted when ``transpose_layout``).
        transpose_layout: permute the input's layout name too (default on).
        device: ``"cpu"`` or ``"gpu"``.
    """
    op = Transpose(perm, input_layout=input_layout(data, "transpose"), output_layout=output_layout,
                   transpose_layout=transpose_layout, name=name)
    return add_node(op, [data], device=device)[0]
