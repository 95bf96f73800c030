"""``normalize``: mean/stddev normalization, as DALI 2.4's CPU operator.

``out = scale * (in - mean) / sqrt(stddev**2 + epsilon) + shift``.
A mean or stddev that is not given is computed per sample over ``axes``
(default: all axes); a computed stddev is taken around the mean in use
(the given one, if given) with ``N - ddof`` in the divisor. A zero
``sqrt(stddev**2 + epsilon)`` gives ``shift`` (DALI: a 0 inverse).
Computed in float64, then converted as ``cast`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import (
    DataType,
    Device,
)
from .arguments import check_axis_names, fn_function, ints_argument, layout_axes, resolve_axes
from .cast import cast_array, parse_output_dtype

__all__ = ["Normalize", "normalize"]


class Normalize(Operator):
    """See the module docstring. ``mean`` and ``stddev`` may be per-sample tensors."""

    keeps_channels = True
    name = "normalize"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"mean", "stddev"})

    def __init__(
        self,
        *,
        mean: Any = None,
        stddev: Any = None,
        axes: int | Sequence[int] | None = None,
        axis_names: str | None = None,
        layout: str = "",
        scale: float = 1.0,
        shift: float = 0.0,
        epsilon: float = 0.0,
        ddof: int = 0,
        batch: bool = False,
        mean_per_sample: bool = False,
        stddev_per_sample: bool = False,
        dtype: Any = DataType.FLOAT,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        if axes is not None and axis_names:
            raise PipelineDefinitionError("normalize: give axes or axis_names, not both")
        self.axes = ints_argument(axes, "normalize: axes")
        self.axis_names = axis_names.upper() if axis_names else None
        self.layout_hint = layout or ""
        if self.axis_names:  # fail early on a bad name (the letters are matched in upper case)
            check_axis_names(self.axis_names, self.layout_hint.upper(), "normalize: axis_names")
        self.mean = None if mean is None else np.asarray(mean, dtype=np.float64)
        self.stddev = None if stddev is None else np.asarray(stddev, dtype=np.float64)
        if self.stddev is not None and np.any(self.stddev < 0):
            raise PipelineDefinitionError("normalize: stddev must not be negative")
        self.has_mean = mean is not None or mean_per_sample
        self.has_stddev = stddev is not None or stddev_per_sample
        self.scale, self.shift = float(scale), float(shift)
        self.epsilon = float(epsilon)
        if self.epsilon < 0:
            raise PipelineDefinitionError(f"normalize: epsilon must be >= 0, got {epsilon}")
        self.ddof = int(ddof)
        if self.ddof < 0:
            raise PipelineDefinitionError(f"normalize: ddof must be >= 0, got {ddof}")
        #: DALI's batch=True: a missing mean / stddev is computed over the reduced axes of every sample at once
        self.batch = bool(batch) and not (self.has_mean and self.has_stddev)
        self.whole_batch = self.batch  # the statistics mix the samples: one chunk
        self.out_dtype = parse_output_dtype(dtype, "normalize: dtype")

    def _reduced_axes(self, ndim: int) -> tuple[int, ...]:
        if self.axis_names:
            return tuple(layout_axes(self.axis_names, self.layout_hint.upper(), ndim, "normalize: axis_names"))
        if self.axes is None:
            return tuple(range(ndim))
        return tuple(sorted(set(resolve_axes(self.axes, ndim, "normalize: axes"))))

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        stats = None
        if self.batch:
            try:
                stats = self.batch_statistics(chunk, [np.asarray(v) for v in chunk.inputs[0]])
            except SampleError as e:  # the batch's statistics are every sample's
                for row in range(len(chunk.inputs[0])):
                    chunk.fail(row, e)
                return [[None] * len(chunk.inputs[0])]
        for row, value in enumerate(chunk.inputs[0]):
            try:
                out.append(self.normalize_sample(chunk, row, np.asarray(value), stats=stats))
            except (SampleError, PipelineDefinitionError, ValueError) as e:
                chunk.fail(row, e if isinstance(e, SampleError) else SampleError(str(e)))
                out.append(None)
        return [out]

    def batch_statistics(self, chunk: Chunk, samples: Sequence[np.ndarray]) -> tuple[Any, Any]:
        """``batch=True``: the (mean, stddev) not given, over the reduced axes of all samples together.

        As in DALI, the samples' extents outside the reduced axes must be equal;
        the results keep the reduced axes with extent 1 (host float64 arrays).
        """
        if not samples:
            return None, None
        ndims = {x.ndim for x in samples}
        axes = self._reduced_axes(samples[0].ndim)
        kept = {tuple(e for i, e in enumerate(x.shape) if i not in axes) for x in samples}
        if len(ndims) > 1 or len(kept) > 1:
            raise SampleError(f"normalize: batch=True needs samples of equal extents outside the reduced axes "
                              f"{list(axes)}, got shapes {[x.shape for x in samples]}")
        count = sum(int(np.prod([x.shape[a] for a in axes])) for x in samples)
        data = [x.astype(np.float64) for x in samples]
        mean = chunk.arg("mean", 0, self.mean)
        computed_mean = None
        if not self.has_mean:
            mean = computed_mean = sum(d.sum(axis=axes, keepdims=True) for d in data) / max(count, 1)
        computed_std = None
        if not self.has_stddev:
            ss = sum(((d - np.asarray(mean, dtype=np.float64)) ** 2).sum(axis=axes, keepdims=True) for d in data)
            computed_std = np.sqrt(ss / (count - self.ddof)) if count - self.ddof > 0 else np.zeros_like(ss)
        return computed_mean, computed_std

    def normalize_sample(self, chunk: Chunk, row: int, x: Any, xp: Any = np,
                         stats: tuple[Any, Any] | None = None) -> Any:
        """One sample, normalized; ``xp`` is its array module (numpy, or cupy on the GPU).

        The statistics and the arithmetic are the same operations on either;
        given means and deviations are host values, copied to ``xp``. ``stats``:
        the batch's (mean, stddev) of ``batch_statistics`` (None: per sample).
        """
        if x.dtype.kind not in "uif":
            raise SampleError(f"normalize: input must be numeric, got dtype {x.dtype}")
        data = x.astype(np.float64)
        mean = chunk.arg("mean", row, self.mean)
        std = chunk.arg("stddev", row, self.stddev)
        if stats is not None:
            mean = mean if stats[0] is None else stats[0]
            std = std if stats[1] is None else stats[1]
        axes = self._reduced_axes(x.ndim)
        if self.axes is None and not self.axis_names:
            # DALI: without axes, the reduced axes are those where a given
            # (non-scalar) mean/stddev has extent 1.
            shaped = [np.asarray(v) for v in (mean, std) if v is not None and np.asarray(v).size > 1]
            if shaped:
                ref = shaped[0]
                if ref.ndim != x.ndim:
                    raise SampleError(f"normalize: mean/stddev of shape {ref.shape} does not fit a sample "
                                      f"of shape {x.shape}; give axes or a tensor with {x.ndim} dimensions")
                axes = tuple(i for i, e in enumerate(ref.shape) if e == 1)
        if mean is None:  # (no reduced axes: each value is its own mean; not every xp reduces over ())
            mean = data.mean(axis=axes, keepdims=True) if axes else data
        else:
            mean = xp.asarray(self._broadcastable(np.asarray(mean, dtype=np.float64), x.shape, axes, "mean"))
        if std is None:
            n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
            ss = xp.sum((data - mean) ** 2, axis=axes, keepdims=True) if axes else (data - mean) ** 2
            var = ss / max(n - self.ddof, 1) if n - self.ddof > 0 else xp.zeros_like(ss)
        else:
            std = xp.asarray(self._broadcastable(np.asarray(std, dtype=np.float64), x.shape, axes, "stddev"))
            var = std * std
        denom = xp.sqrt(var + self.epsilon)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = xp.where(denom > 0, 1.0 / xp.where(denom > 0, denom, 1.0), 0.0)
        return cast_array((data - mean) * (inv * self.scale) + self.shift, self.out_dtype, xp)

    @staticmethod
    def _broadcastable(value: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...], what: str) -> np.ndarray:
        if value.ndim == 0 or value.size == 1:
            return value.reshape(())
        if value.ndim != len(shape) or any(
            v != (1 if i in axes else s) and not (v == 1) for i, (v, s) in enumerate(zip(value.shape, shape))
        ):
            raise SampleError(
                f"normalize: {what} of shape {value.shape} does not fit a sample of shape {shape} "
                f"(reduced axes {list(axes)} must have extent 1, the others the sample's extent)"
            )
        return value

    def layout(self, index: int) -> str:
        return self.layout_hint

@fn_function()
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
    device: str | Device | None = None,
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
        batch: a mean / stddev that is not given is computed over the whole batch (the samples'
            extents outside the reduced axes must match).
        dtype: output type, default ``FLOAT``; integer types round and saturate.
    """
    constants, per_sample = split_arguments(dict(mean=mean, stddev=stddev))
    layout = input_layout(data, "normalize")
    if axis_names and not layout:
        layout = "HWC"
    op = Normalize(
        mean=constants.get("mean"), stddev=constants.get("stddev"), axes=axes, axis_names=axis_names,
        layout=layout or "", scale=scale, shift=shift, epsilon=epsilon, ddof=ddof, batch=batch,
        mean_per_sample="mean" in per_sample, stddev_per_sample="stddev" in per_sample, dtype=dtype, name=name,
    )
    return add_node(op, [data], per_sample, device=device)[0]
