"""``streamflow.experimental.dynamic``: the same module as ``streamflow.dynamic`` (DALI's import path).

``import streamflow.experimental.dynamic as ndd`` gives ``streamflow.dynamic``
itself, sub-namespaces included (``ndd.random.RNG``, ``ndd.readers.File``).
"""

import sys
import types

from .. import dynamic as _dynamic
from ..dynamic import *  # noqa: F403  # (for type checkers; the module is replaced below)

for _name in _dynamic.__all__:
    _value = getattr(_dynamic, _name)
    if isinstance(_value, types.ModuleType):
        sys.modules[f"{__name__}.{_name}"] = _value
sys.modules[__name__] = _dynamic
