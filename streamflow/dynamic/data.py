"""Dynamic mode's data: one sample (``TensorBase``) or a batch (``BatchBase``), on the host or a GPU.

These classes hold real arrays and speak every array protocol: ``__array__``
(numpy), ``__dlpack__`` (torch, JAX, cupy), ``__cuda_array_interface__``
(GPU data), ``.torch()``. ``streamflow.dynamic.tensors`` adds what runs
operators on them (arithmetic, per-sample slicing); this module only stores
and converts, so the operator machinery can read inputs without importing it.

Anything array-like becomes a sample through ``to_sample``: numpy arrays as
they are, ``bytes`` as uint8 (encoded images for the decoders), torch / JAX /
cupy arrays through DLPack (no copy), Python numbers and nested lists
through ``np.asarray``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, TypeVar

import numpy as np

from ..errors import MissingDependencyError, PipelineDefinitionError
from ..tensor import TensorList
from ..types import DataType, Device, parse_device

__all__ = [
    "BatchBase",
    "BatchLike",
    "Origin",
    "TensorBase",
    "TensorLike",
    "device_of",
    "is_device_array",
    "to_host",
    "to_sample",
]

_DLPACK_CPU = (1, 3)  # kDLCPU, kDLCUDAHost
_DLPACK_CUDA = (2, 13)  # kDLCUDA, kDLCUDAManaged

TB = TypeVar("TB", bound="TensorBase")
BB = TypeVar("BB", bound="BatchBase")


def _cupy() -> Any:
    try:
        import cupy
    except ImportError:
        raise MissingDependencyError("cupy", "gpu", "GPU data in dynamic mode") from None
    return cupy


def is_device_array(value: Any) -> bool:
    """Whether ``value`` is a cupy array (GPU data as operators hold it)."""
    return type(value).__module__.startswith("cupy")


def device_of(sample: Any) -> Device:
    """Where a sample (as ``to_sample`` returns it) lives."""
    return Device.GPU if is_device_array(sample) else Device.CPU


def to_host(sample: Any) -> np.ndarray:
    """A sample as a numpy array (copied from the GPU when needed)."""
    if is_device_array(sample):
        return sample.get()
    return np.asarray(sample)


def to_sample(value: Any, what: str = "input") -> Any:
    """One sample as an array operators take: numpy on the host, cupy on a GPU.

    Raises:
        PipelineDefinitionError: ``value`` is not array-like (naming ``what``).
    """
    if isinstance(value, TensorBase):
        return value.array
    if isinstance(value, np.ndarray) or is_device_array(value):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(value, dtype=np.uint8)
    dlpack_device = getattr(value, "__dlpack_device__", None)
    if dlpack_device is not None and hasattr(value, "__dlpack__"):
        kind = int(dlpack_device()[0])
        if getattr(value, "requires_grad", False):
            value = value.detach()  # torch exports no tensor that records gradients
        try:
            if kind in _DLPACK_CPU:
                return np.from_dlpack(value)
            if kind in _DLPACK_CUDA:
                return _cupy().from_dlpack(value)
        except (BufferError, TypeError, RuntimeError):
            pass  # an exporter numpy cannot read (e.g. a read-only or odd dtype): its __array__
    if hasattr(value, "__cuda_array_interface__"):
        return _cupy().asarray(value)
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = np.empty(0, dtype=object)
    if array.dtype == object:
        raise PipelineDefinitionError(
            f"{what}: a sample must be an array (numpy, torch, cupy, JAX...), bytes or a number, "
            f"got {type(value).__name__}"
        )
    return array


@dataclass(frozen=True)
class Origin:
    """Which samples a batch holds: their epoch, identities and files.

    Random operators key their values on these (see ``streamflow.rng``), so a
    batch read by a dynamic reader gets the values the pipeline gives the
    same samples. Data made by the user: epoch 0, samples 0..n-1.
    """

    epoch: int
    sample_ids: np.ndarray
    sources: tuple[str | None, ...]

    @staticmethod
    def fresh(n: int) -> Origin:
        return Origin(0, np.arange(n, dtype=np.int64), (None,) * n)

    def select(self, rows: Sequence[int]) -> Origin:
        return Origin(self.epoch, self.sample_ids[list(rows)], tuple(self.sources[r] for r in rows))


def _same_device(samples: Sequence[Any], what: str) -> Device:
    devices = {device_of(s) for s in samples}
    if len(devices) > 1:
        raise PipelineDefinitionError(f"{what}: the samples of a batch must all be on the CPU or all on the GPU")
    return devices.pop() if devices else Device.CPU


def _move(sample: Any, device: Device, device_id: int | None = None) -> Any:
    if device is Device.CPU:
        return to_host(sample)
    cp = _cupy()
    if device_id is None:
        return cp.asarray(sample)
    with cp.cuda.Device(device_id):
        return cp.asarray(sample)


def _parse_target(device: Any) -> tuple[Device, int | None]:
    """``"cpu"``, ``"gpu"``, ``"gpu:1"`` or a ``Device`` -> (device, GPU index or None)."""
    index = None
    if isinstance(device, str) and ":" in device:
        device, _, number = device.partition(":")
        index = int(number)
    parsed = parse_device(device)
    if parsed is Device.MIXED:
        parsed = Device.GPU
    return parsed, index


def _dtype_of(array: Any) -> DataType:
    return DataType.from_numpy(array.dtype)


class TensorBase:
    """One sample: an array with a layout name, on the host or a GPU.

    Attributes:
        array: the numpy (host) or cupy (GPU) array.
        layout: e.g. ``"HWC"`` (``""`` when unknown).
    """

    __slots__ = ("array", "layout")

    def __init__(self, array: Any, layout: str = "") -> None:
        self.array = array
        self.layout = layout or ""

    # --- description -----------------------------------------------------
    @property
    def device(self) -> Device:
        """``Device.CPU`` or ``Device.GPU``."""
        return device_of(self.array)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def dtype(self) -> DataType:
        return _dtype_of(self.array)

    @property
    def ndim(self) -> int:
        return int(self.array.ndim)

    @property
    def size(self) -> int:
        return int(self.array.size)

    @property
    def itemsize(self) -> int:
        return int(self.array.itemsize)

    @property
    def nbytes(self) -> int:
        return int(self.array.nbytes)

    def __len__(self) -> int:
        if not self.array.ndim:
            raise TypeError("len() of a 0-d tensor")
        return int(self.array.shape[0])

    # --- moving ----------------------------------------------------------
    def evaluate(self: TB) -> TB:
        """The tensor itself: dynamic mode computes when called (DALI's lazy API, for ported code)."""
        return self

    def cpu(self: TB) -> TB:
        """This tensor on the host (itself when already there)."""
        return self if self.device is Device.CPU else type(self)(to_host(self.array), self.layout)

    def gpu(self: TB, device_id: int | None = None) -> TB:
        """This tensor on a GPU (itself when already there)."""
        if self.device is Device.GPU and device_id in (None, self.array.device.id):
            return self
        return type(self)(_move(self.array, Device.GPU, device_id), self.layout)

    def to_device(self: TB, device: Any) -> TB:
        """This tensor on ``device`` (``"cpu"``, ``"gpu"``, ``"gpu:1"``)."""
        target, index = _parse_target(device)
        return self.cpu() if target is Device.CPU else self.gpu(index)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python scalar."""
        return to_host(self.array).item()

    # --- interoperability --------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = to_host(self.array)
        return array.astype(dtype) if dtype is not None else array

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self.array.__dlpack_device__()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.device is Device.CPU:
            raise AttributeError("a host tensor has no __cuda_array_interface__; use .gpu() first")
        return self.array.__cuda_array_interface__

    def torch(self, copy: bool = False) -> Any:
        """This tensor as a torch tensor (shares memory unless ``copy``)."""
        import torch

        out = torch.from_dlpack(self.array if self.array.flags.c_contiguous else self.array.copy())
        return out.clone() if copy else out

    def __repr__(self) -> str:
        body = np.array2string(to_host(self.array), threshold=40, edgeitems=2, prefix="    ")
        return (f"Tensor(\n    {body},\n    dtype={self.dtype.value}, layout={self.layout!r}, "
                f"device={self.device.value!r}, shape={self.shape})")


class BatchBase:
    """A batch of samples of one kind (same type, layout and rank; shapes may differ).

    Stored as a ``TensorList``: one dense array when the samples agree in
    shape, a list of arrays otherwise (stacked only when asked for one array).
    """

    __slots__ = ("origin", "storage")

    def __init__(self, storage: TensorList, origin: Origin | None = None) -> None:
        self.storage = storage
        self.origin = origin if origin is not None else Origin.fresh(len(storage))

    @classmethod
    def from_samples(cls: type[BB], samples: Sequence[Any], layout: str = "", origin: Origin | None = None) -> BB:
        """A batch over ``samples`` (arrays; not copied)."""
        device = _same_device(samples, "batch")
        return cls(TensorList(list(samples), layout or "", device), origin)

    # --- description -----------------------------------------------------
    @property
    def batch_size(self) -> int:
        return len(self.storage)

    def __len__(self) -> int:
        return len(self.storage)

    @property
    def layout(self) -> str:
        return self.storage.layout

    @property
    def device(self) -> Device:
        return self.storage.device

    @property
    def shape(self) -> list[tuple[int, ...]]:
        """The shape of every sample."""
        return self.storage.shape()

    @property
    def dtype(self) -> DataType:
        if not len(self.storage):
            raise ValueError("an empty batch has no dtype")
        return _dtype_of(self.storage.at(0))

    @property
    def ndim(self) -> int:
        """Dimensions of every sample."""
        return len(self.shape[0]) if len(self.storage) else 0

    def samples(self) -> list[Any]:
        """The samples' arrays (views of the dense array when there is one)."""
        return [self.storage.at(i) for i in range(len(self.storage))]

    def __getitem__(self, index: Any) -> Any:
        raise TypeError(
            "a Batch cannot be indexed: use batch.tensors[i] (or batch.select(i)) to take samples, "
            "and batch.slice[...] to index inside every sample"
        )

    # --- moving ----------------------------------------------------------
    def evaluate(self: BB) -> BB:
        """The batch itself: dynamic mode computes when called (DALI's lazy API, for ported code)."""
        return self

    def cpu(self: BB) -> BB:
        """This batch on the host (itself when already there)."""
        if self.device is Device.CPU:
            return self
        return type(self)(self.storage.as_cpu(), self.origin)

    def gpu(self: BB, device_id: int | None = None) -> BB:
        """This batch on a GPU (itself when already there)."""
        if self.device is Device.GPU and device_id is None:
            return self
        samples = [_move(s, Device.GPU, device_id) for s in self.samples()]
        return type(self)(TensorList(samples, self.layout, Device.GPU), self.origin)

    def to_device(self: BB, device: Any) -> BB:
        """This batch on ``device`` (``"cpu"``, ``"gpu"``, ``"gpu:1"``)."""
        target, index = _parse_target(device)
        return self.cpu() if target is Device.CPU else self.gpu(index)

    # --- interoperability --------------------------------------------------
    def dense(self, pad: bool = False, fill: float = 0) -> Any:
        """The batch as one ``(N, ...)`` array (numpy or cupy).

        Args:
            pad: samples of different shapes are padded with ``fill`` at the
                end of every axis to the largest shape (otherwise that is an error).

        Raises:
            ValueError: the samples differ in shape and ``pad`` is False.
        """
        if not pad or self.storage.is_dense_tensor():
            return self.storage.as_tensor()
        samples = self.samples()
        xp = _cupy() if self.device is Device.GPU else np
        shape = tuple(max(s) for s in zip(*(x.shape for x in samples)))
        out = xp.full((len(samples), *shape), fill, dtype=samples[0].dtype)
        for i, sample in enumerate(samples):
            out[(i, *(slice(0, n) for n in sample.shape))] = sample
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = to_host(self.dense())
        return array.astype(dtype) if dtype is not None else array

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.dense().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self.dense().__dlpack_device__()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.device is Device.CPU:
            raise AttributeError("a host batch has no __cuda_array_interface__; use .gpu() first")
        return self.dense().__cuda_array_interface__

    def torch(self, pad: bool = False, copy: bool = False) -> Any:
        """The batch as one torch tensor ``(N, ...)``; ``pad=True`` zero-pads samples of different shapes."""
        import torch

        out = torch.from_dlpack(self.dense(pad=pad))
        return out.clone() if copy else out

    def as_tensor_list(self) -> TensorList:
        """The batch as a pipeline ``TensorList`` (no copy)."""
        return self.storage

    def __repr__(self) -> str:
        shapes = self.shape
        shown = ", ".join(str(s) for s in shapes[:4]) + (", ..." if len(shapes) > 4 else "")
        dtype = self.dtype.value if len(self.storage) else "?"
        return (f"Batch({len(self)} samples, dtype={dtype}, layout={self.layout!r}, "
                f"device={self.device.value!r}, shape=[{shown}])")


class SupportsDLPack(Protocol):
    """Arrays that export DLPack (torch, JAX, cupy, numpy)."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...

    def __dlpack_device__(self) -> Any: ...


class SupportsArray(Protocol):
    """Objects numpy can read (``__array__``)."""

    def __array__(self, *args: Any, **kwargs: Any) -> Any: ...


#: One sample, as dynamic functions take it (for type checkers; see ``to_sample``).
TensorLike: TypeAlias = (
    TensorBase | np.ndarray | bytes | bytearray | memoryview | SupportsDLPack | SupportsArray | int | float
)
#: A batch: a ``Batch``, a ``TensorList`` or a list of samples.
BatchLike: TypeAlias = BatchBase | TensorList | Sequence[Any]
