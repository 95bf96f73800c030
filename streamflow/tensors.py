"""DALI's ``nvidia.dali.tensors`` for ``isinstance`` checks: ``TensorCPU``, ``TensorGPU``, ``TensorListCPU``...

A sample of a pipeline output (``out[i]``, ``out.at(i)``, iterating over
``out``) is a numpy array in host memory or a cupy array in GPU memory, so
DALI code such as ``img if isinstance(img, tensors.TensorCPU) else
img.as_cpu()`` runs unchanged: a numpy array is a ``TensorCPU``, an array
exposing ``__cuda_array_interface__`` a ``TensorGPU``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backend import TensorListCPU, TensorListGPU

__all__ = ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"]


class _HostArray(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, np.ndarray)


class _DeviceArray(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return not isinstance(instance, np.ndarray) and hasattr(instance, "__cuda_array_interface__")


class TensorCPU(metaclass=_HostArray):
    """DALI's ``tensors.TensorCPU`` for ``isinstance``: one sample in host memory (a numpy array)."""


class TensorGPU(metaclass=_DeviceArray):
    """DALI's ``tensors.TensorGPU`` for ``isinstance``: one sample in GPU memory (a cupy array)."""
