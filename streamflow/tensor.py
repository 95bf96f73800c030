"""``TensorList``: one output of one batch, on the host or on the GPU; ``Batch``: all of them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .types import DataType, Device

__all__ = ["Batch", "TensorList"]


def _array_module(x: Any) -> Any:
    """numpy for host arrays, cupy for device arrays (imported only if present)."""
    mod = type(x).__module__
    if mod.startswith("cupy"):
        import cupy

        return cupy
    return np


class Layout(str):
    """A layout string that can also be called, as DALI's ``TensorList.layout()`` is: both
    ``batch.layout == "HWC"`` and ``batch.layout() == "HWC"`` work."""

    __slots__ = ()

    def __call__(self) -> str:
        return str(self)


class TensorList:
    """A batch of samples: dense (one array of shape ``(N, ...)``) or ragged.

    Dense batches are stored as one contiguous array, so ``as_tensor()`` and
    DLPack export are free. Ragged batches (samples of different shapes, such
    as decoded images before resizing) are a list of arrays.

    Args:
        data: an array whose first axis is the batch, or a sequence of arrays.
        layout: the per-sample layout, e.g. ``"HWC"`` or ``"CHW"`` (may be "").
        device: where the data lives.
    """

    __slots__ = ("_dense", "_samples", "device", "layout")

    def __init__(self, data: Any, layout: str = "", device: Device = Device.CPU) -> None:
        self.layout = Layout(layout)
        self.device = device
        if isinstance(data, (list, tuple)):
            self._dense = None
            self._samples: list[Any] | None = list(data)
        else:
            self._dense = data
            self._samples = None

    @classmethod
    def from_samples(cls, samples: Sequence[Any], layout: str = "", device: Device = Device.CPU) -> TensorList:
        """Build a batch, stacking the samples into one array when they agree in shape."""
        if samples and _uniform(samples):
            xp = _array_module(samples[0])
            if xp is np:
                return cls(_stack_aligned(samples), layout, device)
            return cls(xp.stack([xp.asarray(s) for s in samples]), layout, device)
        return cls(list(samples), layout, device)

    # --- shape and type -------------------------------------------------
    def __len__(self) -> int:
        return len(self._dense) if self._dense is not None else len(self._samples or ())

    def is_dense_tensor(self) -> bool:
        """True when every sample has the same shape (the batch is one array)."""
        return self._dense is not None or (bool(self._samples) and _uniform(self._samples or []))

    def shape(self) -> list[tuple[int, ...]]:
        """The shape of every sample."""
        if self._dense is not None:
            return [tuple(self._dense.shape[1:])] * len(self._dense)
        return [tuple(np.shape(s)) for s in self._samples or ()]

    @property
    def dtype(self) -> DataType:
        """The element type (``types.DataType``)."""
        first = self._dense if self._dense is not None else (self._samples or [np.zeros(0)])[0]
        return DataType.from_numpy(np.asarray(first).dtype if self.device is Device.CPU else first.dtype)

    # --- access ---------------------------------------------------------
    def rows(self, start: int, stop: int) -> TensorList:
        """Samples ``start`` .. ``stop - 1`` (a view when dense)."""
        if self._dense is not None:
            return TensorList(self._dense[start:stop], self.layout, self.device)
        return TensorList(list(self._samples or [])[start:stop], self.layout, self.device)

    @classmethod
    def concat(cls, parts: Sequence[TensorList]) -> TensorList:
        """The samples of ``parts`` in order (one dense array when every part is dense and alike)."""
        first = parts[0]
        dense = [p._dense for p in parts]
        if all(d is not None for d in dense) and len({(d.shape[1:], d.dtype) for d in dense}) == 1:  # type: ignore[union-attr]
            return cls(_array_module(dense[0]).concatenate(dense), first.layout, first.device)
        samples = [p.at(i) for p in parts for i in range(len(p))]
        return cls.from_samples(samples, layout=first.layout, device=first.device)

    def at(self, i: int) -> Any:
        """Sample ``i`` (a view, not a copy, for dense batches)."""
        if self._dense is not None:
            return self._dense[i]
        return (self._samples or [])[i]

    __getitem__ = at

    def __iter__(self) -> Iterator[Any]:
        return (self.at(i) for i in range(len(self)))

    def as_tensor(self) -> Any:
        """The batch as one array of shape ``(N, ...)`` (numpy or cupy).

        Raises:
            ValueError: the samples differ in shape; resize or crop them first,
                or iterate the samples.
        """
        if self._dense is None:
            samples = self._samples or []
            if not _uniform(samples):
                shapes = sorted({tuple(np.shape(s)) for s in samples})[:4]
                raise ValueError(
                    f"the batch is ragged (sample shapes include {shapes}); it cannot be one "
                    "tensor. Resize or crop to a common shape, or use .at(i) per sample."
                )
            xp = _array_module(samples[0]) if samples else np
            self._dense = xp.stack(samples) if samples else np.zeros((0,))
            self._samples = None
        return self._dense

    def as_array(self) -> Any:
        """The batch as one host numpy array (copied from the GPU if needed)."""
        return np.asarray(self.as_cpu().as_tensor())

    def as_cpu(self) -> TensorList:
        """This batch on the host (itself when already there)."""
        if self.device is Device.CPU:
            return self
        if self._dense is not None:
            return TensorList(self._dense.get(), self.layout, Device.CPU)
        return TensorList([s.get() for s in self._samples or []], self.layout, Device.CPU)

    # --- interoperability -----------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self.as_array()
        return arr.astype(dtype) if dtype is not None else arr

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.as_tensor().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self.as_tensor().__dlpack_device__()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.device is Device.CPU:
            raise AttributeError("a host TensorList has no __cuda_array_interface__")
        return self.as_tensor().__cuda_array_interface__

    def __repr__(self) -> str:
        kind = "dense" if self.is_dense_tensor() else "ragged"
        return f"TensorList({len(self)} samples, {kind}, device={self.device.value}, layout={self.layout!r})"


# Host batches start on a 64-byte boundary: frameworks (JAX, XLA) import such
# buffers without a copy, and SIMD loads stay aligned.
HOST_ALIGNMENT = 64


def aligned_empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised host array whose data starts on a HOST_ALIGNMENT boundary."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + HOST_ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % HOST_ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


def _stack_aligned(samples: Sequence[Any]) -> np.ndarray:
    first = np.asarray(samples[0])
    out = aligned_empty((len(samples), *first.shape), first.dtype)
    for i, sample in enumerate(samples):
        out[i] = sample
    return out


def _uniform(samples: Sequence[Any]) -> bool:
    first = samples[0]
    shape, dtype = np.shape(first), getattr(first, "dtype", None)
    return all(np.shape(s) == shape and getattr(s, "dtype", None) == dtype for s in samples)


class Batch(tuple):
    """The outputs of one batch (a tuple of ``TensorList``), with where it came from.

    Attributes:
        epoch: the epoch it belongs to.
        batch_index: its index within the epoch.
        sample_ids: identities of its samples.
        sources: the source file (or description) of each sample.
        dropped: ``(sample_id, SampleError)`` of samples that failed and could
            not be replaced (external sources under ``on_error="skip"``).
    """

    epoch: int
    batch_index: int
    sources: list[str | None]
    sample_ids: Any
    dropped: list[tuple[int, Any]]
