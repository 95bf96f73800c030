"""``streamflow.plugin.numba``: DALI's import path of ``numba_function`` (``nvidia.dali.plugin.numba``).

``from streamflow.plugin.numba.fn.experimental import numba_function`` is
``streamflow.fn.experimental.numba_function``; it needs Numba when a pipeline
uses it (``pip install 'streamflow[numba]'``).
"""
