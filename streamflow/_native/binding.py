"""What the Python bindings of the C extensions share (``filters.py``, ``imgproc.py``, ``warp.py``):
loading an extension that may not be built, and taking a caller's output array."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

__all__ = ["load_extension", "out_array", "require_extension"]


def load_extension(name: str) -> tuple[Any, ImportError | None]:
    """The C extension ``streamflow._native.<name>`` and ``None``, or ``None`` and the ``ImportError``
    when it is not built (the binding then fails on use, not on import)."""
    try:
        return importlib.import_module(f"{__package__}.{name}"), None
    except ImportError as exc:  # pragma: no cover - only when the extension is not built
        return None, exc


def require_extension(module: Any, name: str, error: ImportError | None) -> Any:
    """``module`` (from ``load_extension(name)``), or an ``ImportError`` that says how to build it."""
    if module is None:
        raise ImportError(
            f"streamflow's C extension streamflow._native.{name} is not built; reinstall the package "
            "(pip install -e .)"
        ) from error
    return module


def out_array(out: np.ndarray | None, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``out`` when it is a C-contiguous array of ``shape`` and ``dtype`` (e.g. a row of the batch),
    else a new one."""
    if out is not None and out.shape == shape and out.dtype == dtype and out.flags.c_contiguous:
        return out
    return np.empty(shape, dtype=dtype)
