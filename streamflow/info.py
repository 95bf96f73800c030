"""``streamflow info``: versions and what this machine can run."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from typing import Any

from .backend import driver_version, gds_available, gpu_info

__all__ = ["collect_info", "format_info"]

# (name shown, distribution names that provide it)
PACKAGES = (
    ("numpy", ("numpy",)),
    ("aiofiles", ("aiofiles",)),
    ("nvidia.nvimgcodec", ("nvidia-nvimgcodec-cu13", "nvidia-nvimgcodec-cu12")),
    ("cupy", ("cupy-cuda13x", "cupy-cuda12x", "cupy")),
    ("kvikio", ("kvikio-cu13", "kvikio-cu12", "kvikio")),
    ("torch", ("torch",)),
    ("jax", ("jax",)),
)


def _version(distributions: tuple[str, ...]) -> str:
    """The installed version, read from package metadata (nothing is imported)."""
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


def collect_info() -> dict[str, Any]:
    """Everything ``streamflow info`` prints, as a dict."""
    from . import __version__
    from ._native.imgproc import native_available

    os.environ.setdefault("PYNVIMGCODEC_VERBOSITY", "0")
    usable, why = gds_available()
    return {
        "streamflow": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "native_kernels": native_available(),
        "packages": {name: _version(dists) for name, dists in PACKAGES},
        "gpus": gpu_info(),
        "cuda_driver": driver_version(),
        "gpudirect_storage": {"usable": usable, "detail": why},
    }


def format_info(info: dict[str, Any]) -> str:
    lines = [
        f"streamflow {info['streamflow']}  (python {info['python']}, {info['platform']}, {info['cpu_count']} CPUs)",
        f"native CPU kernels: {'yes' if info['native_kernels'] else 'NO (reinstall: pip install -e .)'}",
        "packages:",
        *(f"  {name:18} {version}" for name, version in info["packages"].items()),
    ]
    if info["gpus"]:
        lines.append(f"GPUs (driver {info['cuda_driver']}):")
        lines += [f"  [{g['index']}] {g['name']}, {g['memory_gib']} GiB, sm {g['compute_capability']}" for g in info["gpus"]]
    else:
        lines.append("GPUs: none usable (CPU pipelines only; device_id='auto' falls back to the CPU)")
    gds = info["gpudirect_storage"]
    lines.append(f"GPUDirect Storage: {'usable' if gds['usable'] else 'not usable'} ({gds['detail']})")
    return "\n".join(lines)
