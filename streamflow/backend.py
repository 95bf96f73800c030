"""What this machine can run: GPUs, the CUDA driver, GPUDirect Storage.

Every probe imports its optional package lazily and answers "no" rather
than raising when the package or the driver is missing.
"""

from __future__ import annotations

import functools
from typing import Any

from .tensor import TensorList
from .types import Device

__all__ = ["TensorListCPU", "TensorListGPU", "gds_available", "gpu_count", "gpu_info"]


class _OnDevice(type):
    """``isinstance(batch, TensorListGPU)``: a ``TensorList`` whose data is on that device."""

    device: Device

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, TensorList) and instance.device is cls.device


class TensorListCPU(metaclass=_OnDevice):
    """DALI's ``backend.TensorListCPU`` for ``isinstance`` checks: a pipeline output in host memory."""

    device = Device.CPU


class TensorListGPU(metaclass=_OnDevice):
    """DALI's ``backend.TensorListGPU`` for ``isinstance`` checks: a pipeline output in GPU memory
    (``out.as_cpu()`` copies it to the host)."""

    device = Device.GPU


@functools.lru_cache(maxsize=1)
def gpu_count() -> int:
    """Number of CUDA devices cupy can use (0 without cupy, driver or GPU)."""
    try:
        import cupy
    except Exception:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def gpu_info() -> list[dict[str, Any]]:
    """Name, memory and compute capability of each GPU (empty when none)."""
    if gpu_count() == 0:
        return []
    import cupy

    info = []
    for index in range(gpu_count()):
        props = cupy.cuda.runtime.getDeviceProperties(index)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        info.append({
            "index": index,
            "name": name,
            "memory_gib": round(props["totalGlobalMem"] / 2**30, 1),
            "compute_capability": f"{props['major']}.{props['minor']}",
        })
    return info


def driver_version() -> str | None:
    """The CUDA driver version as ``major.minor``, or None."""
    if gpu_count() == 0:
        return None
    import cupy

    version = int(cupy.cuda.runtime.driverGetVersion())
    return f"{version // 1000}.{(version % 1000) // 10}"


def gds_available() -> tuple[bool, str]:
    """(usable, why): whether kvikio can use GPUDirect Storage (cuFile)."""
    try:
        import kvikio
        import kvikio.defaults
    except Exception as exc:
        return False, f"kvikio not installed ({type(exc).__name__})"
    if gpu_count() == 0:
        return False, "no GPU / CUDA driver"
    try:
        compat = kvikio.defaults.is_compat_mode_preferred()
    except Exception as exc:
        return False, f"kvikio cannot query cuFile: {exc}"
    if compat:
        return False, "kvikio runs in compat mode (POSIX reads, no cuFile)"
    return True, "cuFile available"
