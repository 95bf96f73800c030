"""``numba_function`` under DALI's older plugin path (``nvidia.dali.plugin.numba.fn.experimental``)."""

from .....ops.numba_function import numba_function

__all__ = ["numba_function"]
