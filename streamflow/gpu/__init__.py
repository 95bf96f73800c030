"""GPU execution: the ``mixed`` and ``gpu`` stages, their kernels and streams.

Modules (cupy is imported only when a GPU stage runs, never by importing this
package):

* ``streams.py``: per-stage non-blocking streams, events, awaiting an event
  without blocking the event loop, pinned staging, deferred release of memory.
* ``kernels.py``: the CUDA C sources (NVRTC, no headers) and their loader.
* ``ops.py``: the GPU implementation of each operator (batched launches) and
  the registry that maps operator classes to them.
* ``stage.py``: ``GpuStage``, what the engine runs for ``mixed``/``gpu`` stages.

See ``docs/gpu.md``.
"""

from __future__ import annotations

from .ops import find_impl, supports, unsupported_reason

__all__ = ["find_impl", "supports", "unsupported_reason"]
