"""DALI's legacy operator classes: ``ops.Normalize(axes=[0])(images)`` is ``fn.normalize(images, axes=[0])``.

``import streamflow.ops as ops`` then gives ``ops.<CamelCase>`` for every ``fn``
function (``ops.WarpAffine``, ``ops.FileReader``, ``ops.readers.Caffe``,
``ops.decoders.Image``): the constructor takes the arguments, a call takes the
inputs (and more arguments), as in DALI's ``nvidia.dali.ops``.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from .. import ops as _ops

__all__ = ["legacy_class"]


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def legacy_class(namespace: str, name: str) -> type:
    """The class ``ops.<namespace>.<name>`` over ``fn.<namespace>.<snake_case(name)>``."""
    module: Any = sys.modules[__name__.rsplit(".", 1)[0]]  # streamflow.fn
    for part in filter(None, namespace.split(".")):
        module = getattr(module, part)
    function = getattr(module, _snake(name), None)
    label = ".".join(filter(None, ["ops", namespace, name]))
    if not callable(function):
        raise AttributeError(f"{label}: streamflow has no fn.{'.'.join(filter(None, [namespace, _snake(name)]))}")

    def __init__(self: Any, **arguments: Any) -> None:
        self.arguments = arguments

    def __call__(self: Any, *inputs: Any, **arguments: Any) -> Any:
        return function(*inputs, **{**self.arguments, **arguments})

    doc = f"DALI's legacy ``{label}``: ``{label}(**args)(*inputs)`` calls ``fn`` with the same arguments."
    return type(name, (), {"__init__": __init__, "__call__": __call__, "__doc__": doc})


_ops.register_legacy_ops(legacy_class)
