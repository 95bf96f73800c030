"""``GpuContext``: what the GPU implementations of one stage share, over a kernel backend.

A GPU implementation (``gpu/ops/<name>.py``) works through its context only:
``ctx.xp`` (the array module), ``ctx.address(a)``, ``ctx.alloc``,
``ctx.to_device``, ``ctx.stage`` (small host tables to the device) and
``ctx.launch`` (one launch of a kernel over a batch). The backend behind the
context decides what those mean:

* ``DeviceBackend``: cupy arrays on a GPU, the stage's own non-blocking
  stream, pinned staging for host-to-device copies, kernels compiled with
  NVRTC. What pipelines use.
* ``HostBackend``: numpy arrays, and the same kernel sources compiled as host
  C++ (``_native/host_build.py``) and run on the CPU. What CI uses to check the
  kernels' arithmetic against the CPU operators; it knows no streams, events,
  decoding or hand-off, so it is never a GPU test.

The implementations contain no backend-specific branches: a test runs them
unchanged on either.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from ..errors import SampleError
from . import kernels as K

__all__ = [
    "BLOCK",
    "F32",
    "DeviceBackend",
    "GpuContext",
    "HostBackend",
    "KernelBackend",
    "element_bits",
    "float_bits",
    "group_by_dtype",
    "param_rows",
]

T = TypeVar("T")

F32 = np.float32
#: Threads per block of every launch.
BLOCK = 128
#: Blocks along x (output rows; the kernels stride over the rest).
MAX_ROW_BLOCKS = 4096
#: Samples per launch (gridDim.y).
MAX_SAMPLES = 65535
#: Staged tables are aligned to this many bytes.
_ALIGN = 256


class KernelBackend(Protocol):
    """Where a context's arrays live and how its kernels run."""

    xp: Any

    def address(self, array: Any) -> int: ...

    def is_array(self, value: Any) -> bool: ...

    def stage(self, host: np.ndarray) -> Any: ...

    def to_device(self, samples: Sequence[Any]) -> list[Any]: ...

    def launch(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int], params: Any) -> None: ...

    def launch_source(self, source: str, name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                      params: Any) -> None: ...

    def activate(self) -> contextlib.AbstractContextManager[Any]: ...

    def synchronize(self) -> None: ...

    def to_host(self, array: Any) -> np.ndarray: ...


class DeviceBackend:
    """cupy arrays on GPU ``device_id``, queued on one non-blocking stream.

    Args:
        device_id: the GPU.
    """

    def __init__(self, device_id: int) -> None:
        import cupy

        from .streams import PinnedRing, StageStream

        self.xp: Any = cupy
        self.device_id = device_id
        self.stream = StageStream(device_id)
        self.pinned = PinnedRing()
        self._module = K.device_module(device_id)

    def address(self, array: Any) -> int:
        return int(array.data.ptr)

    def is_array(self, value: Any) -> bool:
        return isinstance(value, self.xp.ndarray)

    def stage(self, host: np.ndarray) -> Any:
        """A device copy of a small host array: pinned staging, one async copy on the stream."""
        host = np.ascontiguousarray(host)
        dev = self.xp.empty(host.shape, dtype=host.dtype)
        if host.nbytes:
            self._copy_in(dev.data.ptr, [host], [0], host.nbytes)
        return dev

    def to_device(self, samples: Sequence[Any]) -> list[Any]:
        """Host samples to the device: one pinned staging buffer, one async copy."""
        cp = self.xp
        if all(isinstance(s, cp.ndarray) for s in samples):
            return list(samples)
        on_device = {i: s for i, s in enumerate(samples) if isinstance(s, cp.ndarray)}
        # asarray(order="C"), not ascontiguousarray: that one makes 0-d samples 1-d.
        host = [np.zeros(0, np.uint8) if i in on_device else np.asarray(s, order="C") for i, s in enumerate(samples)]
        offsets = _offsets([h.nbytes for h in host])
        total = int(offsets[-1])
        dev = cp.empty(max(total, 1), dtype=np.uint8)
        if total:
            self._copy_in(dev.data.ptr, host, offsets[:-1], total)
        out = []
        for i, (h, o) in enumerate(zip(host, offsets[:-1])):
            if i in on_device:
                out.append(on_device[i])
            else:
                out.append(dev[int(o): int(o) + h.nbytes].view(h.dtype).reshape(h.shape))
        return out

    def _copy_in(self, dst: int, parts: Sequence[np.ndarray], offsets: Sequence[int] | np.ndarray, total: int) -> None:
        buf = self.pinned.take(total)
        for part, offset in zip(parts, offsets):
            buf[int(offset): int(offset) + part.nbytes] = part.reshape(-1).view(np.uint8)
        rt = self.xp.cuda.runtime
        rt.memcpyAsync(dst, buf.ctypes.data, total, rt.memcpyHostToDevice, self.stream.ptr)
        self.pinned.give_back(buf, self.stream.record())

    def launch(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int], params: Any) -> None:
        self._module.get_function(name)(grid, block, (params,), stream=self.stream.stream)

    def launch_source(self, source: str, name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                      params: Any) -> None:
        """Launch kernel ``name`` of a generated ``source`` (compiled with NVRTC once, cached by cupy)."""
        module = self.xp.RawModule(code=source, options=K.COMPILE_OPTIONS)
        module.get_function(name)(grid, block, (params,), stream=self.stream.stream)

    def activate(self) -> contextlib.AbstractContextManager[Any]:
        """Make the device and the stream current on this thread (cupy allocations follow them)."""
        stack = contextlib.ExitStack()
        stack.enter_context(self.stream.device)
        stack.enter_context(self.stream.stream)
        return stack

    def synchronize(self) -> None:
        self.stream.stream.synchronize()

    def to_host(self, array: Any) -> np.ndarray:
        return self.xp.asnumpy(array, stream=self.stream.stream)


class HostBackend:
    """numpy arrays and the kernels built as host C++ (arithmetic checks in CI, not a GPU).

    Args:
        sanitize: use the AddressSanitizer build (the process must run with
            libasan preloaded; see ``_native/host_build.py``).
    """

    def __init__(self, sanitize: bool = False) -> None:
        from .._native.host_build import HostModule

        self.xp: Any = np
        self._sanitize = sanitize
        self._module = HostModule(K.module_source(), K.KERNEL_NAMES, sanitize=sanitize)
        self._generated: dict[str, Any] = {}

    def address(self, array: Any) -> int:
        return int(array.ctypes.data)

    def is_array(self, value: Any) -> bool:
        return isinstance(value, np.ndarray)

    def stage(self, host: np.ndarray) -> Any:
        return np.array(host, copy=True, order="C")

    def to_device(self, samples: Sequence[Any]) -> list[Any]:
        return [np.asarray(s, order="C") for s in samples]

    def launch(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int], params: Any) -> None:
        self._module.launch(name, grid, block, int(params.ctypes.data))

    def launch_source(self, source: str, name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                      params: Any) -> None:
        module = self._generated.get(source)
        if module is None:
            from .._native.host_build import HostModule

            module = self._generated[source] = HostModule(source, [name], sanitize=self._sanitize)
        module.launch(name, grid, block, int(params.ctypes.data))

    def activate(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def synchronize(self) -> None:
        pass

    def to_host(self, array: Any) -> np.ndarray:
        return np.asarray(array)


class GpuContext:
    """What the GPU implementations of one stage share: a backend, its staging and launches.

    Args:
        backend: where arrays live and kernels run.
        cpu_threads: CPU threads the stage's decoder may use.
    """

    def __init__(self, backend: KernelBackend, cpu_threads: int = 4) -> None:
        self.backend = backend
        self.xp = backend.xp
        self.cpu_threads = cpu_threads
        self._shared: dict[Any, Any] = {}
        self._shared_lock = threading.Lock()

    @classmethod
    def on_device(cls, device_id: int, cpu_threads: int = 4) -> GpuContext:
        """A context on GPU ``device_id`` with its own stream."""
        return cls(DeviceBackend(device_id), cpu_threads)

    @classmethod
    def on_host(cls, sanitize: bool = False) -> GpuContext:
        """A context that runs the kernels' host build on numpy arrays."""
        return cls(HostBackend(sanitize))

    @property
    def device(self) -> DeviceBackend:
        """The device backend (stream, device id); only GPU stages ask for it."""
        if not isinstance(self.backend, DeviceBackend):
            raise TypeError("this GpuContext runs on the host; it has no device stream")
        return self.backend

    def shared(self, key: Any, make: Callable[[], T]) -> T:
        """The stage's one object for ``key`` (``make()`` on first use): e.g. its GPU decoder."""
        with self._shared_lock:
            if key not in self._shared:
                self._shared[key] = make()
            return self._shared[key]

    # --- arrays ------------------------------------------------------------------------
    def address(self, array: Any) -> int:
        """The address of an array's first element (what a parameter slot holds)."""
        return self.backend.address(array)

    def is_array(self, value: Any) -> bool:
        return self.backend.is_array(value)

    def alloc(self, shapes: Sequence[tuple[int, ...]], dtype: Any) -> list[Any]:
        """Per-sample output arrays; views of one dense (N, ...) array when shapes agree."""
        xp = self.xp
        if not shapes:
            return []
        if all(s == shapes[0] for s in shapes):
            dense = xp.empty((len(shapes), *shapes[0]), dtype=dtype)
            return [dense[i] for i in range(len(shapes))]
        sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
        offsets = np.concatenate([[0], np.cumsum([(z + 63) // 64 * 64 for z in sizes])])
        flat = xp.empty(int(offsets[-1]) or 1, dtype=dtype)
        return [flat[int(o): int(o) + z].reshape(s) for o, z, s in zip(offsets[:-1], sizes, shapes)]

    def to_device(self, samples: Sequence[Any]) -> list[Any]:
        """Host samples as the backend's arrays (one copy for the batch)."""
        return self.backend.to_device(samples)

    def stage(self, tables: Sequence[np.ndarray]) -> tuple[Any, list[int]]:
        """Small host tables (taps, weights, per-channel values) to the device in one copy.

        Returns:
            (the buffer to keep referenced until the launches that read it
            are queued, the address of each table)
        """
        offsets = _offsets([t.nbytes for t in tables])
        packed = np.zeros(max(int(offsets[-1]), 1), dtype=np.uint8)
        for table, offset in zip(tables, offsets[:-1]):
            packed[int(offset): int(offset) + table.nbytes] = np.ascontiguousarray(table).reshape(-1).view(np.uint8)
        buffer = self.backend.stage(packed)
        base = self.address(buffer)
        return buffer, [base + int(o) for o in offsets[:-1]]

    def as_hwc(self, image: Any) -> Any:
        """An image of this backend as 3-D HWC with contiguous pixels (copied only when needed)."""
        if not self.is_array(image):
            raise SampleError(f"expected an image on the {'GPU' if self.xp is not np else 'host'}, got {type(image).__name__}")
        if image.ndim == 2:
            image = image[:, :, None]
        if image.ndim != 3 or 0 in image.shape:
            raise SampleError(f"expected a non-empty HWC or HW image, got shape {tuple(image.shape)}")
        item = image.itemsize
        if image.strides[2] != item or image.strides[1] != item * image.shape[2] or image.strides[0] < 0:
            image = self.xp.ascontiguousarray(image)
        return image

    # --- launches ----------------------------------------------------------------------
    def launch_generated(self, source: str, name: str, params: np.ndarray, blocks: int) -> None:
        """One launch of a generated kernel (``expression_kernels``) over a batch: ``blocks`` along x."""
        n = params.shape[0]
        if n == 0 or blocks <= 0:
            return
        if n > MAX_SAMPLES:
            raise ValueError(f"a GPU batch holds at most {MAX_SAMPLES} samples, got {n}")
        device_params = self.backend.stage(np.ascontiguousarray(params, dtype=np.int64))
        self.backend.launch_source(source, name, (min(blocks, MAX_ROW_BLOCKS), n, 1), (BLOCK, 1, 1), device_params)

    def launch(self, name: str, params: np.ndarray, rows: int) -> None:
        """One launch of kernel ``name`` over a batch: ``params`` has one row per sample.

        Args:
            rows: the most output rows of any sample (blocks stride over them).
        """
        n = params.shape[0]
        if n == 0 or rows <= 0:
            return
        if n > MAX_SAMPLES:
            raise ValueError(f"a GPU batch holds at most {MAX_SAMPLES} samples, got {n}")
        device_params = self.backend.stage(np.ascontiguousarray(params, dtype=np.int64))
        grid = (min(rows, MAX_ROW_BLOCKS), n, 1)
        self.backend.launch(name, grid, (BLOCK, 1, 1), device_params)

    def activate(self) -> contextlib.AbstractContextManager[Any]:
        """Make this context current on the calling thread (device and stream)."""
        return self.backend.activate()

    def synchronize(self) -> None:
        self.backend.synchronize()

    def to_host(self, array: Any) -> np.ndarray:
        return self.backend.to_host(array)


def _offsets(sizes: Sequence[int]) -> np.ndarray:
    """Start of each part in a packed buffer (aligned), and the total at the end."""
    return np.concatenate([[0], np.cumsum([(z + _ALIGN - 1) // _ALIGN * _ALIGN for z in sizes])]).astype(np.int64)


def float_bits(value: Any) -> int:
    """A float32's bits as a signed int (what the kernels read with ``__int_as_float``)."""
    return int(np.asarray(value, dtype=np.float32).reshape(()).view(np.int32))


def element_bits(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` converted to ``dtype`` (the raw element bits a crop fill needs)."""
    return np.ascontiguousarray(np.asarray(values).astype(dtype))


def param_rows(n: int) -> np.ndarray:
    """A zeroed parameter array for ``n`` samples."""
    return np.zeros((n, K.NP), dtype=np.int64)


def group_by_dtype(arrays: Sequence[Any]) -> dict[np.dtype, list[int]]:
    """The positions of ``arrays`` by element type, in first-seen order: one launch per group."""
    groups: dict[np.dtype, list[int]] = {}
    for i, array in enumerate(arrays):
        groups.setdefault(np.dtype(array.dtype), []).append(i)
    return groups
