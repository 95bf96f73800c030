"""``noise.gaussian``, ``noise.shot``, ``noise.salt_and_pepper``: random noise added to the data.

As DALI 2.4 defines them (the output has the input's shape and type;
integer results are rounded to nearest and saturated):

* ``gaussian``: ``out = in + N(mean, stddev)``, drawn per element.
* ``shot``: ``out = poisson(max(0, in / factor)) * factor`` (photon noise:
  each event adds ``factor``); ``factor = 0`` returns the input.
* ``salt_and_pepper``: each pixel is replaced with probability ``prob``, by
  ``salt_val`` with probability ``salt_vs_pepper``, else by ``pepper_val``
  (defaults: the type's maximum and minimum, 1 and -1 for floats). With
  ``per_channel=False`` a pixel's channels are replaced together (the channel
  axis comes from the layout; channels last when unknown).

Values are drawn from the sample's own generator (``streamflow.rng``): a
pure function of (seed, operator, epoch, sample), so they differ from DALI's
but are reproducible; ``seed=`` fixes the operator's stream. Distributions
are checked in ``tests/unit/ops/test_noise.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import rng
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function
from .random import operator_key

__all__ = ["GaussianNoise", "SaltAndPepperNoise", "ShotNoise", "gaussian", "salt_and_pepper", "shot"]

F32 = np.float32
_TYPES = tuple(np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
                                     np.int64, np.uint64, np.float16, np.float32, np.float64))


def _to_type(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float results in the input's type: integers rounded to nearest and saturated."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        hi = float(info.max) if info.bits < 64 else np.nextafter(float(info.max), 0.0)
        return np.clip(np.rint(values), float(info.min), hi).astype(dtype)
    return values.astype(dtype, copy=False)


def _scalar(value: Any, what: str) -> float:
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if arr.size != 1 or not math.isfinite(float(arr[0])):
        raise SampleError(f"{what} must be one finite number, got {value!r}")
    return float(arr[0])


class _Noise(Operator):
    keeps_channels = True
    ARGS: dict[str, Any] = {}

    def __init__(self, *, seed: int | None = None, layout: str = "", name: str | None = None, **args: Any) -> None:
        super().__init__(name=name)
        self.seed = None if seed is None or int(seed) < 0 else int(seed)
        self.args = {k: args.get(k, d) for k, d in self.ARGS.items()}
        for k, v in self.args.items():
            if v is not None:
                try:
                    _scalar(v, f"{self.name}: {k}")
                except SampleError as err:
                    raise PipelineDefinitionError(str(err)) from None
        self._layout = layout

    def arg(self, chunk: Chunk, name: str, row: int) -> float | None:
        value = chunk.arg(name, row, self.args[name])
        return None if value is None else _scalar(value, f"{self.name}: {name}")

    def apply(self, chunk: Chunk, row: int, x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def run(self, chunk: Chunk) -> list[list[Any]]:
        key = operator_key(chunk, self.seed, self.name)

        def one(row: int, sample: Any) -> np.ndarray:
            x = np.asarray(sample)
            if x.dtype not in _TYPES:
                raise SampleError(f"{self.name}: unsupported input type {x.dtype}")
            gen = rng.sample_generator(key, chunk.epoch, int(chunk.sample_ids[row]))
            return self.apply(chunk, row, x, gen)

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


class GaussianNoise(_Noise):
    """``in + N(mean, stddev)`` per element."""

    name = "noise.gaussian"
    ARGS = {"mean": 0.0, "stddev": 1.0}
    per_sample_args = frozenset(ARGS)

    def apply(self, chunk: Chunk, row: int, x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        mean, std = self.arg(chunk, "mean", row), self.arg(chunk, "stddev", row)
        assert mean is not None and std is not None
        if std < 0:
            raise SampleError(f"noise.gaussian: stddev must be >= 0, got {std}")
        noise = gen.standard_normal(x.shape, dtype=F32)
        work = np.float64 if x.dtype.itemsize >= 4 and x.dtype.kind in "iuf" and x.dtype != F32 else F32
        values = x.astype(work) + (noise * F32(std) + F32(mean)).astype(work)
        return _to_type(values, x.dtype)


class ShotNoise(_Noise):
    """``poisson(max(0, in / factor)) * factor``."""

    name = "noise.shot"
    ARGS = {"factor": 20.0}
    per_sample_args = frozenset(ARGS)

    def apply(self, chunk: Chunk, row: int, x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        factor = self.arg(chunk, "factor", row)
        assert factor is not None
        if factor == 0:
            return x.copy()
        lam = np.maximum(x.astype(np.float64) / factor, 0.0)
        return _to_type(gen.poisson(lam).astype(np.float64) * factor, x.dtype)


class SaltAndPepperNoise(_Noise):
    """Pixels replaced by ``salt_val`` / ``pepper_val`` with probability ``prob``."""

    name = "noise.salt_and_pepper"
    ARGS = {"prob": 0.05, "salt_vs_pepper": 0.5, "salt_val": None, "pepper_val": None}
    per_sample_args = frozenset(ARGS)

    def __init__(self, *, per_channel: bool = False, **kw: Any) -> None:
        super().__init__(**kw)
        self.per_channel = bool(per_channel)
        for k in ("prob", "salt_vs_pepper"):
            if self.args[k] is not None and not 0.0 <= float(self.args[k]) <= 1.0:
                raise PipelineDefinitionError(f"noise.salt_and_pepper: {k} must be in [0, 1], got {self.args[k]}")

    def _channel_axis(self, ndim: int) -> int | None:
        if self._layout:
            return self._layout.index("C") if "C" in self._layout else None
        return ndim - 1 if ndim >= 3 else None

    def apply(self, chunk: Chunk, row: int, x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        prob, svp = self.arg(chunk, "prob", row), self.arg(chunk, "salt_vs_pepper", row)
        assert prob is not None and svp is not None
        if not (0.0 <= prob <= 1.0 and 0.0 <= svp <= 1.0):
            raise SampleError(f"noise.salt_and_pepper: prob and salt_vs_pepper must be in [0, 1], got {prob}, {svp}")
        if x.dtype.kind == "f":
            lo, hi = -1.0, 1.0
        else:
            info = np.iinfo(x.dtype)
            lo, hi = float(info.min), float(info.max)
        salt = self.arg(chunk, "salt_val", row)
        pepper = self.arg(chunk, "pepper_val", row)
        salt_v = _to_type(np.asarray(hi if salt is None else salt), x.dtype)
        pepper_v = _to_type(np.asarray(lo if pepper is None else pepper), x.dtype)
        axis = None if self.per_channel else self._channel_axis(x.ndim)
        shape = x.shape if axis is None else tuple(1 if i == axis else s for i, s in enumerate(x.shape))
        u = gen.random(shape, dtype=F32)
        corrupt = u < F32(prob)
        # a second draw picks salt or pepper for the corrupted elements
        is_salt = gen.random(shape, dtype=F32) < F32(svp)
        out = x.copy()
        np.copyto(out, salt_v, where=np.broadcast_to(corrupt & is_salt, x.shape))
        np.copyto(out, pepper_v, where=np.broadcast_to(corrupt & ~is_salt, x.shape))
        return out


def _noise(op_class: type[_Noise], data: DataNode, device: str | Device | None, name: str | None,
           seed: int | None, extra: dict[str, Any] | None = None, **args: Any) -> DataNode:
    constants, per_sample = split_arguments(args)
    op = op_class(seed=seed, layout=input_layout(data, op_class.name), name=name, **(extra or {}), **constants)
    return add_node(op, [data], per_sample, device=device)[0]


@fn_function(label="noise.gaussian")
def gaussian(data: DataNode, *, mean: float | DataNode = 0.0, stddev: float | DataNode = 1.0,
             seed: int | None = None, device: str | Device | None = None, name: str | None = None) -> DataNode:
    """Add normally distributed noise: ``out = in + N(mean, stddev)`` (in the input's type, saturated)."""
    return _noise(GaussianNoise, data, device, name, seed, mean=mean, stddev=stddev)


@fn_function(label="noise.shot")
def shot(data: DataNode, *, factor: float | DataNode = 20.0, seed: int | None = None,
         device: str | Device | None = None, name: str | None = None) -> DataNode:
    """Shot (Poisson) noise: ``out = poisson(max(0, in / factor)) * factor``; 0 leaves the data unchanged."""
    return _noise(ShotNoise, data, device, name, seed, factor=factor)


@fn_function(label="noise.salt_and_pepper")
def salt_and_pepper(
    data: DataNode,
    *,
    prob: float | DataNode = 0.05,
    salt_vs_pepper: float | DataNode = 0.5,
    salt_val: float | DataNode | None = None,
    pepper_val: float | DataNode | None = None,
    per_channel: bool = False,
    seed: int | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Replace pixels by salt or pepper values with probability ``prob``.

    Args:
        prob: probability that a pixel (or element, with ``per_channel``) is replaced.
        salt_vs_pepper: probability that a replaced pixel becomes salt.
        salt_val, pepper_val: the values (default the type's max / min; 1 / -1 for floats).
        per_channel: draw independently for every channel.
    """
    return _noise(SaltAndPepperNoise, data, device, name, seed, {"per_channel": per_channel}, prob=prob,
                  salt_vs_pepper=salt_vs_pepper, salt_val=salt_val, pepper_val=pepper_val)
