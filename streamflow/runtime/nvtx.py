"""NVTX ranges, so Nsight Systems shows the pipeline next to the CUDA work.

When on, the engine marks:

* each operator call on a worker thread with a pushed range named after the
  operator node (``decoders.image#0``); pushed ranges nest per thread, and an
  operator call is synchronous, so they always nest correctly;
* each batch of each stage (``cpu batch``) with a start/end range. Batches of
  several stages interleave on the one event-loop thread, so these ranges
  cannot be pushed/popped; they use ``nvtx.start_range``/``end_range`` of the
  ``nvtx`` package or ``torch.cuda.nvtx.range_start``/``range_end`` when one
  of those is importable, and otherwise become two NVTX marks
  (``cpu batch begin``/``end``), since cupy exposes only push/pop and marks.

When is it on? ``STREAMFLOW_NVTX=1`` turns it on, ``STREAMFLOW_NVTX=0`` off;
unset, it is on for pipelines with GPU stages (``mixed``/``gpu``) when cupy is
installed. cupy (``cupy.cuda.nvtx``) is imported only then, on the first
pipeline that wants it. Without cupy every call is a no-op.

Usage with Nsight Systems::

    STREAMFLOW_NVTX=1 nsys profile -t cuda,nvtx,osrt python train.py
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from typing import Any

__all__ = ["ENV", "NvtxBackend", "backend", "wanted"]

ENV = "STREAMFLOW_NVTX"

_lock = threading.Lock()
_backend: NvtxBackend | None = None
_resolved = False


class NvtxBackend:
    """Thin wrapper over ``cupy.cuda.nvtx`` (plus a start/end range provider)."""

    def __init__(self, cupy_nvtx: Any, start_end: tuple[Any, Any] | None) -> None:
        self._nvtx = cupy_nvtx
        self._start_end = start_end

    def push(self, message: str) -> None:
        self._nvtx.RangePush(message)

    def pop(self) -> None:
        self._nvtx.RangePop()

    def mark(self, message: str) -> None:
        self._nvtx.Mark(message)

    def range_start(self, message: str) -> Any:
        """Open a range that may end on any thread, in any order; returns its handle."""
        if self._start_end is not None:
            return ("range", self._start_end[0](message))
        self._nvtx.Mark(f"{message} begin")
        return ("mark", message)

    def range_end(self, handle: Any) -> None:
        kind, value = handle
        if kind == "range" and self._start_end is not None:
            self._start_end[1](value)
        else:
            self._nvtx.Mark(f"{value} end")


def _start_end_provider() -> tuple[Any, Any] | None:
    """``(start(message) -> handle, end(handle))`` from the nvtx package or torch, if present."""
    if importlib.util.find_spec("nvtx") is not None:
        try:
            nvtx = importlib.import_module("nvtx")
            return (lambda m: nvtx.start_range(message=m, domain="streamflow")), nvtx.end_range
        except Exception:
            pass
    torch_nvtx = None
    import sys

    if "torch" in sys.modules:  # only if the user's program already imported it
        torch_nvtx = getattr(getattr(sys.modules["torch"], "cuda", None), "nvtx", None)
    if torch_nvtx is not None and hasattr(torch_nvtx, "range_start"):
        return torch_nvtx.range_start, torch_nvtx.range_end
    return None


def backend() -> NvtxBackend | None:
    """The NVTX backend (imports cupy on the first call), or None without cupy."""
    global _backend, _resolved
    if _resolved:
        return _backend
    with _lock:
        if not _resolved:
            try:
                cupy_nvtx = importlib.import_module("cupy.cuda.nvtx")
                _backend = NvtxBackend(cupy_nvtx, _start_end_provider())
            except Exception:
                _backend = None
            _resolved = True
    return _backend


def wanted(plan: Any = None) -> bool:
    """Whether a pipeline with ``plan`` should emit NVTX ranges (see the module docstring).

    Does not import cupy; ``backend()`` does, when this is true.
    """
    setting = os.environ.get(ENV, "").strip().lower()
    if setting in ("0", "false", "no", "off"):
        return False
    if setting in ("1", "true", "yes", "on"):
        return True
    stages = getattr(plan, "stages", ()) or ()
    has_gpu = any(getattr(getattr(s, "kind", None), "label", "") in ("mixed", "gpu") for s in stages)
    return has_gpu and importlib.util.find_spec("cupy") is not None
