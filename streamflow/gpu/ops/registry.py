"""Which GPU implementation runs which operator class.

A GPU implementation is a function ``impl(op, chunk, ctx) -> outputs`` that a
GPU stage runs once per batch, in one worker-thread call, inside ``with
device, stream:`` (cupy allocations and kernel launches land on the stage's
stream). ``chunk`` is the whole batch; per-sample arguments are host values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...operator import Chunk, Operator
from ..context import GpuContext

__all__ = ["IMPLS", "GpuImpl", "find_impl", "register"]


GpuImpl = Callable[[Any, Chunk, GpuContext], list[list[Any]]]


IMPLS: dict[type, GpuImpl] = {}


def register(*types: type) -> Callable[[GpuImpl], GpuImpl]:
    """Decorator: ``impl`` runs operators of ``types`` (and their subclasses) on the GPU."""

    def wrap(fn: GpuImpl) -> GpuImpl:
        for t in types:
            IMPLS[t] = fn
        return fn

    return wrap


def find_impl(op: Operator) -> GpuImpl | None:
    """The GPU implementation of ``op``'s class (most specific first), or None."""
    for klass in type(op).__mro__:
        impl = IMPLS.get(klass)
        if impl is not None:
            return impl
    return None
