"""``numba_function`` under DALI's plugin path (``nvidia.dali.plugin.numba.fn``)."""

from ....ops.numba_function import numba_function

__all__ = ["numba_function"]
