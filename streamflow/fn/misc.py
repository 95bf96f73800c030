"""``fn.cast`` and ``fn.normalize``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..graph import DataNode, add_node, split_arguments
from ..ops.misc import Cast, Normalize
from ..types import DataType, Device, parse_device

__all__ = ["cast", "normalize"]


def cast(data: DataNode, *, dtype: DataType | str, device: str | Device = "cpu", name: str | None = None) -> DataNode:
    """Convert to ``dtype``; float to integer rounds half away from zero and saturates (NaN -> 0)."""
    op = Cast(dtype, name=name)
    op.device = parse_device(device)
    return add_node(op, [data], {})[0]


def normalize(
    data: DataNode,
    *,
    mean: float | Sequence[Any] | np.ndarray | DataNode | None = None,
    stddev: float | Sequence[Any] | np.ndarray | DataNode | None = None,
    axes: int | Sequence[int] | None = None,
    axis_names: str | None = None,
    scale: float = 1.0,
    shift: float = 0.0,
    epsilon: float = 0.0,
    ddof: int = 0,
    batch: bool = False,
    dtype: DataType | str = DataType.FLOAT,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """``out = scale * (in - mean) / sqrt(stddev**2 + epsilon) + shift``.

    Args:
        mean: given mean (scalar, or a tensor with extent 1 on the reduced
            axes, or per sample as a ``DataNode``); computed when omitted.
        stddev: given standard deviation (same forms); computed when omitted,
            around the mean in use, dividing by ``N - ddof``.
        axes: axes to reduce (default: all, or inferred from the shape of a
            given mean/stddev: its extent-1 axes).
        axis_names: the same by layout letters (``"HW"``), needs an input
            with a known layout (decoded images are ``HWC``).
        scale, shift: applied after normalizing.
        epsilon: added to the variance.
        ddof: delta degrees of freedom of the computed stddev.
        batch: statistics over the whole batch (only with given mean and stddev for now).
        dtype: output type, default ``FLOAT``; integer types round and saturate.
    """
    constants, per_sample = split_arguments(dict(mean=mean, stddev=stddev))
    producer = data.producer.op
    layout = producer.layout(data.index) if hasattr(producer, "layout") else ""
    if axis_names and not layout:
        layout = "HWC"
    op = Normalize(
        mean=constants.get("mean"), stddev=constants.get("stddev"), axes=axes, axis_names=axis_names,
        layout=layout or "", scale=scale, shift=shift, epsilon=epsilon, ddof=ddof, batch=batch,
        mean_per_sample="mean" in per_sample, stddev_per_sample="stddev" in per_sample, dtype=dtype, name=name,
    )
    op.device = parse_device(device)
    return add_node(op, [data], per_sample)[0]
