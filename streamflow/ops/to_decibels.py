"""``to_decibels``: ``multiplier * log10(max(min_ratio, x / reference))``, as DALI 2.4's CPU operator.

``min_ratio = 10 ** (cutoff_db / multiplier)``; ``reference=0`` (the default)
uses each sample's maximum. Float32 output, any shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SampleError
from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["ToDecibels", "decibels", "to_decibels"]


def decibels(xp: Any, x: Any, multiplier: float, reference: float, cutoff_db: float) -> Any:
    """The conversion of one sample (float32 result) for any array module ``xp``."""
    v = x.astype(xp.float32)
    ref = float(v.max()) if reference == 0.0 and v.size else float(reference)
    min_ratio = np.float32(10.0 ** (cutoff_db / multiplier))
    inv = np.float32(1.0 / ref) if ref != 0 else np.float32(np.inf)
    ratio = xp.maximum(v * inv, min_ratio) if ref != 0 else xp.full(v.shape, min_ratio, dtype=xp.float32)
    return (np.float32(multiplier) * xp.log10(ratio)).astype(xp.float32)


class ToDecibels(Operator):
    """See the module docstring."""

    name = "to_decibels"
    keeps_channels = True
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, *, multiplier: float = 10.0, reference: float = 0.0, cutoff_db: float = -200.0,
                 layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        self.multiplier, self.reference, self.cutoff_db = float(multiplier), float(reference), float(cutoff_db)
        self._layout = layout

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, x: Any) -> np.ndarray:
            x = np.asarray(x)
            if x.dtype.kind not in "uif":
                raise SampleError(f"to_decibels: expects numbers, got {x.dtype}")
            return decibels(np, x, self.multiplier, self.reference, self.cutoff_db)

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def to_decibels(
    data: DataNode,
    *,
    multiplier: float = 10.0,
    reference: float = 0.0,
    cutoff_db: float = -200.0,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Magnitudes to decibels.

    Args:
        multiplier: 10 for power, 20 for amplitude (``ln(10)`` gives natural logs).
        reference: the 0 dB magnitude; 0 uses each sample's maximum.
        cutoff_db: the lowest output [dB].
    """
    op = ToDecibels(multiplier=multiplier, reference=reference, cutoff_db=cutoff_db,
                    layout=input_layout(data, "to_decibels"), name=name)
    return add_node(op, [data], device=device)[0]
