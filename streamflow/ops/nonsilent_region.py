"""``nonsilent_region``: where a 1-D signal's leading and trailing silence end, as DALI 2.4's CPU operator.

The short-term power is the mean of ``x**2`` over each window of
``window_length`` samples (``n - window_length + 1`` windows; a shorter
signal is one window). A window is loud when its power is at least
``reference_power * 10 ** (cutoff_db / 10)``; ``reference_power`` defaults to
the loudest window's power. Outputs ``(begin, length)`` as int32 scalars:
the first loud window's start, and up to the end of the last loud window;
``(0, 0)`` for an all-silent signal.

The window sums are computed from float64 running sums (DALI keeps a float32
running sum, restarted every ``reset_interval`` samples for precision;
``reset_interval`` is accepted and has no effect here), so a window whose
power lies within float32 rounding of the threshold may be judged
differently. The operator runs them in C (``streamflow._native.audio.nonsilent``,
two passes, no temporary arrays); ``moving_power`` and ``region`` are the
same computation in numpy (the C one gives their results).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._native import audio as native_audio
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["NonsilentRegion", "moving_power", "nonsilent_region", "region"]


def moving_power(xp: Any, x: Any, window: int) -> Any:
    """Mean of ``x**2`` over every window of ``window`` samples (float64), for any array module ``xp``."""
    v = x.astype(xp.float64) if x.dtype.kind == "f" else x.astype(xp.int64).astype(xp.float64)
    if x.dtype.kind == "f":
        v = v.astype(xp.float32).astype(xp.float64)
    sums = xp.concatenate([xp.zeros(1, dtype=xp.float64), xp.cumsum(v * v)])
    return (sums[window:] - sums[:-window]) / window


def region(power: np.ndarray, window: int, cutoff_db: float, reference_power: float | None) -> tuple[int, int]:
    """(begin, length) of the non-silent region from the windows' powers."""
    reference = float(power.max()) if reference_power is None else reference_power
    threshold = reference * 10.0 ** (cutoff_db / 10.0)
    loud = np.flatnonzero(power >= threshold)
    if loud.size == 0:
        return 0, 0
    begin = int(loud[0])
    return begin, int(loud[-1]) - begin + window


class NonsilentRegion(Operator):
    """See the module docstring."""

    name = "nonsilent_region"
    num_outputs = 2
    per_sample_args = frozenset({"cutoff_db", "reference_power"})

    def __init__(self, *, cutoff_db: float = -60.0, reference_power: float | None = None, window_length: int = 2048,
                 reset_interval: int = 8192, name: str | None = None) -> None:
        super().__init__(name=name)
        if int(window_length) <= 0:
            raise PipelineDefinitionError(f"nonsilent_region: window_length must be positive, got {window_length}")
        if reference_power is not None and not float(reference_power) > 0:
            raise PipelineDefinitionError(
                f"nonsilent_region: reference_power must be positive, got {reference_power}")
        self.cutoff_db, self.window_length = float(cutoff_db), int(window_length)
        self.reference_power = None if reference_power is None else float(reference_power)
        self.reset_interval = int(reset_interval)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return chunk.each_sample(lambda row, x: self._one(chunk, row, x), outputs=2)

    def _one(self, chunk: Chunk, row: int, x: Any) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(x)
        if x.ndim != 1 or x.dtype.kind not in "uif" or x.size == 0:
            raise SampleError(f"nonsilent_region: expects a non-empty 1-D numeric signal (decode with downmix=True), "
                              f"got shape {x.shape} of {x.dtype}")
        window = min(self.window_length, x.shape[0])
        cutoff = float(np.asarray(chunk.arg("cutoff_db", row, self.cutoff_db)).reshape(-1)[0])
        reference = chunk.arg("reference_power", row, self.reference_power)
        reference = None if reference is None else float(np.asarray(reference).reshape(-1)[0])
        # float32 as DALI reads it (float64 is rounded to float32 first, integers are exact in float64)
        v = x if x.dtype == np.float32 else x.astype(np.float32) if x.dtype.kind == "f" else x.astype(np.float64)
        begin, length = native_audio.nonsilent(v, window, cutoff, reference)
        return np.asarray(begin, dtype=np.int32), np.asarray(length, dtype=np.int32)


@fn_function()
def nonsilent_region(
    data: DataNode,
    *,
    cutoff_db: float | DataNode = -60.0,
    reference_power: float | DataNode | None = None,
    window_length: int = 2048,
    reset_interval: int = 8192,
    device: str | Device | None = None,
    name: str | None = None,
) -> tuple[DataNode, DataNode]:
    """Leading and trailing silence detection; returns ``(begin, length)`` (int32).

    Args:
        cutoff_db: windows quieter than this, relative to the reference, are silent [dB].
        reference_power: the 0 dB power (default: the loudest window's).
        window_length: samples per window of the short-term power.
        reset_interval: DALI's precision setting; accepted, no effect.
    """
    constants, per_sample = split_arguments(dict(cutoff_db=cutoff_db, reference_power=reference_power))
    op = NonsilentRegion(cutoff_db=constants.get("cutoff_db", -60.0), reference_power=constants.get("reference_power"),
                         window_length=window_length, reset_interval=reset_interval, name=name)
    out = add_node(op, [data], per_sample, device=device)
    return out[0], out[1]
