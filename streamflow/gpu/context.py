"""``GpuContext``: what the GPU implementations of one stage share.

Its stream, pinned staging for host-to-device copies, the device copies of
the resampling filter tables, per-sample output allocation and one kernel
launch per operator per batch. Also the small helpers every GPU
implementation uses to pack per-sample parameters. cupy is imported when a
context is created, never at import time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import imgproc
from ..errors import SampleError
from . import kernels as K
from .streams import PinnedRing, StageStream

__all__ = ["BLOCK", "F32", "GpuContext", "as_hwc", "element_bits", "float_bits", "param_rows"]


F32 = np.float32


BLOCK = 256


class GpuContext:
    """What the implementations of one stage share: its stream, staging, filter tables."""

    def __init__(self, device_id: int, cpu_threads: int = 4) -> None:
        import cupy

        self.cp = cupy
        self.device_id = device_id
        self.stream = StageStream(device_id)
        self.pinned = PinnedRing()
        self.cpu_threads = cpu_threads
        self._tables: dict[int, Any] = {}

    # All methods below run inside ``with device, stream:`` (the stage sees to it).

    def table(self, code: int) -> tuple[Any, int]:
        """The device copy of a filter table (imgproc.c's, value for value)."""
        key = {2: 2, 3: 3, 4: 4}.get(code, 1)
        tab = self._tables.get(key)
        if tab is None:
            tab = self.cp.asarray(np.asarray(imgproc.filter_table(key), dtype=np.float32))
            self._tables[key] = tab
        return tab, int(tab.size)

    def upload(self, host: np.ndarray) -> Any:
        """Copy a small host array to the device from pinned memory, on the stage's stream."""
        host = np.ascontiguousarray(host)
        nbytes = host.nbytes
        dev = self.cp.empty(host.shape, dtype=host.dtype)
        if nbytes == 0:
            return dev
        buf = self.pinned.take(nbytes)
        buf[:nbytes] = host.reshape(-1).view(np.uint8)
        rt = self.cp.cuda.runtime
        rt.memcpyAsync(dev.data.ptr, buf.ctypes.data, nbytes, rt.memcpyHostToDevice, self.stream.ptr)
        self.pinned.give_back(buf, self.stream.record())
        return dev

    def launch(self, name: str, params: np.ndarray, max_items: int) -> None:
        """One launch of kernel ``name`` over the batch: sample = blockIdx.y."""
        n = params.shape[0]
        if n == 0 or max_items <= 0:
            return
        if n > 65535:
            raise ValueError(f"a GPU batch holds at most 65535 samples, got {n}")
        dev = self.upload(params)
        bx = min(max(1, -(-max_items // (BLOCK * 4))), 4096)
        K.get_kernel(name)((bx, n, 1), (BLOCK, 1, 1), (dev,))

    def alloc(self, shapes: Sequence[tuple[int, ...]], dtype: Any) -> list[Any]:
        """Per-sample output arrays; views of one dense (N, ...) array when shapes agree."""
        cp = self.cp
        if not shapes:
            return []
        if all(s == shapes[0] for s in shapes):
            dense = cp.empty((len(shapes), *shapes[0]), dtype=dtype)
            return [dense[i] for i in range(len(shapes))]
        sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
        offsets = np.concatenate([[0], np.cumsum([(z + 63) // 64 * 64 for z in sizes])])
        flat = cp.empty(int(offsets[-1]) or 1, dtype=dtype)
        return [flat[int(o): int(o) + z].reshape(s) for o, z, s in zip(offsets[:-1], sizes, shapes)]

    def to_device(self, samples: Sequence[Any]) -> list[Any]:
        """Host samples to the device: one pinned staging buffer, one async copy."""
        cp = self.cp
        if all(isinstance(s, cp.ndarray) for s in samples):
            return list(samples)
        on_device = {i: s for i, s in enumerate(samples) if isinstance(s, cp.ndarray)}
        host = [np.zeros(0, np.uint8) if i in on_device else np.ascontiguousarray(s) for i, s in enumerate(samples)]
        sizes = [h.nbytes for h in host]
        offsets = np.concatenate([[0], np.cumsum([(z + 255) // 256 * 256 for z in sizes])]).astype(np.int64)
        total = int(offsets[-1])
        dev = cp.empty(max(total, 1), dtype=np.uint8)
        if total:
            buf = self.pinned.take(total)
            for h, o in zip(host, offsets[:-1]):
                buf[int(o): int(o) + h.nbytes] = h.reshape(-1).view(np.uint8)
            rt = cp.cuda.runtime
            rt.memcpyAsync(dev.data.ptr, buf.ctypes.data, total, rt.memcpyHostToDevice, self.stream.ptr)
            self.pinned.give_back(buf, self.stream.record())
        out = []
        for i, (h, o) in enumerate(zip(host, offsets[:-1])):
            if i in on_device:
                out.append(on_device[i])
                continue
            part = dev[int(o): int(o) + h.nbytes]
            out.append(part.view(h.dtype).reshape(h.shape))
        return out


def float_bits(v: Any) -> int:
    """A float32's bits as a signed int (what the kernels read with __int_as_float)."""
    return int(np.asarray(v, dtype=np.float32).reshape(()).view(np.int32))


def param_rows(n: int) -> np.ndarray:
    return np.zeros((n, K.NP), dtype=np.int64)


def as_hwc(cp: Any, img: Any) -> Any:
    """A device image as 3-D HWC with contiguous pixels (copied only when needed)."""
    if not isinstance(img, cp.ndarray):
        raise SampleError(f"expected a GPU image, got {type(img).__name__}")
    if img.ndim == 2:
        img = img[:, :, None]
    if img.ndim != 3:
        raise SampleError(f"expected an HWC or HW image, got shape {tuple(img.shape)}")
    item = img.itemsize
    if img.strides[2] != item or img.strides[1] != item * img.shape[2] or img.strides[0] < 0:
        img = cp.ascontiguousarray(img)
    return img


def element_bits(values: np.ndarray, dtype: np.dtype) -> list[int]:
    cast = np.asarray(values).astype(dtype)
    unsigned = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    return [int(v) for v in cast.view(unsigned).reshape(-1)]
