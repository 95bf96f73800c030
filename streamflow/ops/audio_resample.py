"""``audio_resample``: resample signals of shape ``(n,)`` or ``(n, channels)``, as DALI 2.4's CPU operator.

The factor is ``scale``, ``out_rate / in_rate`` or ``out_length / n``
(exactly one of them, each constant or per sample: ``scale`` per sample is
speed perturbation). The filter is DALI's windowed sinc
(``streamflow._native.audio``): ``quality`` 0 gives 3 lobes, 50 gives 16, 100
gives 64. Output length: ``ceil(n * scale)`` (``out_length`` when given).

``dtype`` (default: the input's): a change of type rescales to the type's
range as DALI does: integer inputs are read as ``[-1, 1]`` (unsigned: 0 maps
to -1), integer outputs saturate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._native import audio as native_audio
from .._native.audio import normalized_float, normalized_int
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device
from .arguments import fn_function
from .cast import parse_output_dtype
from .decoders.audio import check_quality

__all__ = ["RESAMPLE_TYPES", "AudioResample", "audio_resample"]

RESAMPLE_TYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.float32))


class AudioResample(Operator):
    """See the module docstring."""

    name = "audio_resample"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"scale", "in_rate", "out_rate", "out_length"})
    keeps_channels = True

    def __init__(self, *, scale: float | None = None, in_rate: float | None = None, out_rate: float | None = None,
                 out_length: int | None = None, per_sample: frozenset[str] = frozenset(), quality: float = 50.0,
                 dtype: Any = None, name: str | None = None) -> None:
        super().__init__(name=name)
        given = {k for k, v in dict(scale=scale, in_rate=in_rate, out_rate=out_rate, out_length=out_length).items()
                 if v is not None} | set(per_sample)
        if ("in_rate" in given) != ("out_rate" in given):
            raise PipelineDefinitionError("audio_resample: in_rate and out_rate must be given together")
        modes = sum(("in_rate" in given, "scale" in given, "out_length" in given))
        if modes > 1:
            raise PipelineDefinitionError("audio_resample: give one of scale, in_rate/out_rate or out_length")
        if modes == 0:
            raise PipelineDefinitionError(
                "audio_resample: no resampling factor; give scale, in_rate and out_rate, or out_length")
        self.mode = "rates" if "in_rate" in given else "scale" if "scale" in given else "out_length"
        self.scale, self.in_rate, self.out_rate, self.out_length = scale, in_rate, out_rate, out_length
        self.quality = check_quality(quality, self.name)
        self.out_dtype = None if dtype is None else parse_output_dtype(dtype, "audio_resample: dtype")
        if self.out_dtype is not None and self.out_dtype not in RESAMPLE_TYPES:
            raise PipelineDefinitionError(
                f"audio_resample: dtype {self.out_dtype.name} is not supported; use int8, uint8, int16, "
                "uint16, int32, uint32 or float32")

    def rates(self, chunk: Chunk, row: int, n_in: int) -> tuple[float, float, int]:
        """(in rate, out rate, output length) of ``row``."""

        def value(key: str, default: Any) -> float:
            return float(np.asarray(chunk.arg(key, row, default), dtype=np.float64).reshape(-1)[0])

        if self.mode == "rates":
            in_rate, out_rate = float(np.float32(value("in_rate", self.in_rate))), float(
                np.float32(value("out_rate", self.out_rate)))
            if not in_rate > 0:
                raise SampleError(f"audio_resample: in_rate must be positive, got {in_rate}")
            if not out_rate >= 0:
                raise SampleError(f"audio_resample: out_rate must be >= 0, got {out_rate}")
            return in_rate, out_rate, native_audio.resampled_length(n_in, in_rate, out_rate)
        if self.mode == "scale":
            scale = float(np.float32(value("scale", self.scale)))
            if not scale >= 0:
                raise SampleError(f"audio_resample: scale must be >= 0, got {scale}")
            return 1.0, scale, native_audio.resampled_length(n_in, 1.0, scale)
        length = int(value("out_length", self.out_length))
        if length < 0:
            raise SampleError(f"audio_resample: out_length must be >= 0, got {length}")
        if n_in == 0 and length != 0:
            raise SampleError("audio_resample: cannot produce a non-empty signal from an empty input")
        return float(n_in or 1), float(length or 1), length

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, x: self._one(chunk, row, np.asarray(x)))]

    def plan(self, chunk: Chunk, row: int, x: Any) -> tuple[float, float, int, np.dtype]:
        """A sample's (input rate, output rate, output length, output type), once its shape and type are checked."""
        if x.ndim not in (1, 2):
            raise SampleError(f"audio_resample: expects a (time,) or (time, channels) signal, got shape {x.shape}")
        if np.dtype(x.dtype) not in RESAMPLE_TYPES:
            raise SampleError(f"audio_resample: input type {x.dtype} is not supported")
        in_rate, out_rate, length = self.rates(chunk, row, int(x.shape[0]))
        return in_rate, out_rate, length, self.out_dtype or np.dtype(x.dtype)

    def _one(self, chunk: Chunk, row: int, x: np.ndarray) -> np.ndarray:
        in_rate, out_rate, length, out_dtype = self.plan(chunk, row, x)
        shape = (length, *x.shape[1:])
        if length == 0 or (x.ndim == 2 and x.shape[1] == 0):
            return np.zeros(shape, dtype=out_dtype)
        native_out = out_dtype if out_dtype in (np.dtype(np.float32), np.dtype(np.int16), np.dtype(np.int32)) \
            else np.dtype(np.float32)
        y = native_audio.resample(normalized_float(x), in_rate, out_rate, self.quality, out_length=length,
                                  dtype=native_out)
        return y if y.dtype == out_dtype else normalized_int(y, out_dtype)

    def layout(self, index: int) -> str:
        return ""


@fn_function()
def audio_resample(
    data: DataNode,
    *,
    scale: float | DataNode | None = None,
    in_rate: float | DataNode | None = None,
    out_rate: float | DataNode | None = None,
    out_length: int | DataNode | None = None,
    quality: float = 50.0,
    dtype: DataType | str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Resample audio by ``scale``, ``out_rate / in_rate`` or to ``out_length`` samples.

    Args:
        scale: output rate / input rate (``2`` doubles the samples).
        in_rate, out_rate: the two rates (together; only their ratio matters).
        out_length: the output length in samples.
        quality: 0 (3 sinc lobes) to 100 (64 lobes); 50 gives 16.
        dtype: output type (default: the input's), rescaled to its range.
    """
    constants, per_sample = split_arguments(dict(scale=scale, in_rate=in_rate, out_rate=out_rate,
                                                 out_length=out_length))
    op = AudioResample(scale=constants.get("scale"), in_rate=constants.get("in_rate"),
                       out_rate=constants.get("out_rate"), out_length=constants.get("out_length"),
                       per_sample=frozenset(per_sample), quality=quality, dtype=dtype, name=name)
    return add_node(op, [data], per_sample, device=device)[0]
