"""``preemphasis_filter``: ``y[t] = x[t] - coeff * x[t-1]``, as DALI 2.4's CPU operator.

The first output uses a border value: 0 (``border="zero"``), ``x[0]``
(``"clamp"``, the default) or ``x[1]`` (``"reflect"``). Works along the first
axis of ``(time,)`` or ``(time, channels)`` signals; integer inputs are
filtered as their values (no rescaling) and the result is converted to
``dtype`` (default ``FLOAT``) as ``cast`` converts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device
from .arguments import fn_function
from .cast import cast_array, parse_output_dtype

__all__ = ["BORDERS", "PreemphasisFilter", "preemphasis", "preemphasis_filter"]

BORDERS = ("zero", "clamp", "reflect")


def preemphasis(xp: Any, x: Any, coeff: float, border: str) -> Any:
    """The filter over the first axis of ``x`` in float32 (as DALI computes it), for any array module ``xp``."""
    v = x.astype(xp.float32, copy=False)
    out = xp.empty_like(v)
    if v.shape[0] == 0:
        return out
    c = np.float32(coeff)
    out[1:] = v[1:] - c * v[:-1]
    if border == "zero":
        first = v[0]
    elif border == "clamp":
        first = v[0] - c * v[0]
    else:
        first = v[0] - c * v[1] if v.shape[0] > 1 else v[0] - c * v[0]
    out[0] = first
    return out


class PreemphasisFilter(Operator):
    """See the module docstring."""

    name = "preemphasis_filter"
    keeps_channels = True
    per_sample_args = frozenset({"preemph_coeff"})
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, *, preemph_coeff: float = 0.97, border: str = "clamp", dtype: Any = DataType.FLOAT,
                 layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        if border not in BORDERS:
            raise PipelineDefinitionError(f"preemphasis_filter: border must be one of {BORDERS}, got {border!r}")
        self.preemph_coeff, self.border = float(preemph_coeff), border
        self.out_dtype = parse_output_dtype(dtype, "preemphasis_filter: dtype")
        self._layout = layout

    def coeff(self, chunk: Chunk, row: int) -> float:
        return float(np.asarray(chunk.arg("preemph_coeff", row, self.preemph_coeff)).reshape(-1)[0])

    def filter_sample(self, chunk: Chunk, row: int, x: Any, xp: Any = np) -> Any:
        """One sample's output; ``x`` is an array of ``xp`` (numpy, or cupy on the GPU)."""
        if x.ndim not in (1, 2) or x.dtype.kind not in "uif":
            raise SampleError(f"preemphasis_filter: expects a numeric (time,) or (time, channels) signal, "
                              f"got shape {x.shape} of {x.dtype}")
        return cast_array(preemphasis(xp, x, self.coeff(chunk, row), self.border), self.out_dtype, xp)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, x: self.filter_sample(chunk, row, np.asarray(x)))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def preemphasis_filter(
    data: DataNode,
    *,
    preemph_coeff: float | DataNode = 0.97,
    border: str = "clamp",
    dtype: DataType | str = DataType.FLOAT,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Preemphasis: ``y[t] = x[t] - preemph_coeff * x[t-1]``.

    Args:
        preemph_coeff: the coefficient (per sample as a ``DataNode``).
        border: ``x[-1]`` is 0 (``"zero"``), ``x[0]`` (``"clamp"``) or ``x[1]`` (``"reflect"``).
        dtype: output type (default ``FLOAT``).
    """
    constants, per_sample = split_arguments(dict(preemph_coeff=preemph_coeff))
    op = PreemphasisFilter(preemph_coeff=constants.get("preemph_coeff", 0.97), border=border, dtype=dtype,
                           layout=input_layout(data, "preemphasis_filter"), name=name)
    return add_node(op, [data], per_sample, device=device)[0]
