"""``mfcc``: mel-frequency cepstral coefficients of a mel spectrogram, as DALI 2.4's CPU operator.

A discrete cosine transform (types 1 to 4, Wikipedia's definitions: type 2 is
``X_k = sum_n x_n cos(pi / N (n + 1/2) k)``) along ``axis`` (default 0, the
``f`` of an ``"ft"`` mel spectrogram), keeping the first ``n_mfcc``
coefficients; ``normalize=True`` makes the basis orthonormal (not for type
1). ``lifter > 0`` scales coefficient ``i`` by ``1 + sin(pi (i + 1) / lifter) * lifter / 2``.
The transform is a ``(n_mfcc, N)`` matrix built in float64; float32 output.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["Mfcc", "dct_matrix", "mfcc"]


@functools.lru_cache(maxsize=32)
def dct_matrix(dct_type: int, n_out: int, n_in: int, normalize: bool, lifter: float) -> np.ndarray:
    """The ``(n_out, n_in)`` float32 DCT matrix, liftering folded in (read-only, cached)."""
    k = np.arange(n_out, dtype=np.float64)[:, None]
    t = np.arange(n_in, dtype=np.float64)[None, :]
    if dct_type == 1:
        basis = np.cos(np.pi / max(n_in - 1, 1) * t * k)
        basis[:, 0] = 0.5
        basis[:, -1] = 0.5 * (-1.0) ** k[:, 0]
    elif dct_type == 2:
        basis = np.cos(np.pi / n_in * (t + 0.5) * k)
    elif dct_type == 3:
        basis = np.cos(np.pi / n_in * t * (k + 0.5))
        basis[:, 0] = 0.5
    else:
        basis = np.cos(np.pi / n_in * (t + 0.5) * (k + 0.5))
    if normalize:
        basis *= np.sqrt(2.0 / n_in)
        if dct_type == 2:
            basis[0] /= np.sqrt(2.0)
        elif dct_type == 3:
            basis[:, 0] = np.sqrt(1.0 / n_in)
    if lifter > 0:
        basis *= (1.0 + np.sin(np.pi * (k + 1.0) / lifter) * (lifter / 2.0))
    out = basis.astype(np.float32)
    out.setflags(write=False)
    return out


class Mfcc(Operator):
    """See the module docstring."""

    name = "mfcc"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, *, n_mfcc: int = 20, dct_type: int = 2, normalize: bool = False, lifter: float = 0.0,
                 axis: int = 0, layout: str = "", name: str | None = None) -> None:
        super().__init__(name=name)
        if dct_type not in (1, 2, 3, 4):
            raise PipelineDefinitionError(f"mfcc: dct_type must be 1, 2, 3 or 4, got {dct_type}")
        if normalize and dct_type == 1:
            raise PipelineDefinitionError("mfcc: normalize=True is not supported with dct_type=1")
        if int(n_mfcc) <= 0:
            raise PipelineDefinitionError(f"mfcc: n_mfcc must be positive, got {n_mfcc}")
        if float(lifter) < 0:
            raise PipelineDefinitionError(f"mfcc: lifter must be >= 0, got {lifter}")
        self.n_mfcc, self.dct_type, self.normalize = int(n_mfcc), int(dct_type), bool(normalize)
        self.lifter, self.axis = float(lifter), int(axis)
        self._layout = layout

    def matrix(self, ndim: int, shape: tuple[int, ...]) -> tuple[int, np.ndarray]:
        if not -ndim <= self.axis < ndim:
            raise SampleError(f"mfcc: axis {self.axis} out of range for a {ndim}-d sample")
        axis = self.axis % ndim
        n = shape[axis]
        if self.n_mfcc > n:
            raise SampleError(f"mfcc: n_mfcc ({self.n_mfcc}) exceeds the {n} values along axis {axis}")
        if self.dct_type == 1 and n < 2:
            raise SampleError("mfcc: dct_type=1 needs at least 2 values along the axis")
        return axis, dct_matrix(self.dct_type, self.n_mfcc, n, self.normalize, self.lifter)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, x: Any) -> np.ndarray:
            x = np.asarray(x)
            if x.ndim == 0 or x.dtype != np.float32:
                raise SampleError(f"mfcc: expects a float32 mel spectrogram, got shape {x.shape} of {x.dtype}")
            axis, m = self.matrix(x.ndim, x.shape)
            out = np.tensordot(m, x.astype(np.float64), axes=([1], [axis]))
            return np.ascontiguousarray(np.moveaxis(out, 0, axis), dtype=np.float32)

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def mfcc(
    data: DataNode,
    *,
    n_mfcc: int = 20,
    dct_type: int = 2,
    normalize: bool = False,
    lifter: float = 0.0,
    axis: int = 0,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """MFCCs: a DCT of (log) mel spectrograms along ``axis``.

    Args:
        n_mfcc: coefficients kept.
        dct_type: 1, 2 (default), 3 or 4.
        normalize: orthonormal DCT (not with type 1).
        lifter: cepstral liftering coefficient (0: none).
        axis: the transformed axis (0: the ``f`` of ``"ft"``).
    """
    op = Mfcc(n_mfcc=n_mfcc, dct_type=dct_type, normalize=normalize, lifter=lifter, axis=axis,
              layout=input_layout(data, "mfcc"), name=name)
    return add_node(op, [data], device=device)[0]
