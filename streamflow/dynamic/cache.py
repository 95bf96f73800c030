"""Operators made once per distinct call: dynamic mode's answer to per-call construction costs.

A dynamic call runs its ``fn`` function, which checks the arguments and
builds the operator: in a loop (``resize(image, size=224)`` per image) that
costs more than many operators' work. A pipeline builds each operator once
and runs it on every batch; this does the same per distinct call. The first
call with given constant arguments and inputs of given kinds (layout,
device, channels) runs the ``fn`` function and keeps the nodes it made as a
template (the operator objects, and which input feeds what); later calls
with the same ones make new nodes around the same operators, without running
the function again. Operators are built to be run on many batches (and on
several threads at once) by a pipeline, so sharing them across calls is what
they are made for; a call that makes a source (a reader), or whose arguments
cannot be compared (a large array, say), is not kept.
"""

from __future__ import annotations

import collections
import enum
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..graph import DataNode, OpNode
from ..operator import Operator, Source
from .executor import EagerNode

__all__ = ["OperatorCache", "Template"]

#: Arrays up to this many elements are compared by value; larger ones make the call not kept.
MAX_ARRAY_ELEMENTS = 4096


class _NotKept(Exception):
    """The call's arguments cannot be compared: it is not kept."""


class _Same:
    """An object compared by identity (a user function, say); holds it so its id stays its own."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj


def _freeze(value: Any, nodes: list[EagerNode]) -> Hashable:
    """A hashable, type-exact description of an argument; data nodes become numbered slots."""
    if isinstance(value, EagerNode):
        nodes.append(value)
        v = value.value
        single = v.single if v is not None else None
        return ("data", value.producer.op.layout(value.index), value.device.value, value.channels, single)
    if isinstance(value, enum.Enum):  # by name: an enum's own hash is slow Python code
        return (type(value), value.name)
    if value is None or isinstance(value, (bool, int, float, str, bytes, complex)):
        return (type(value), value)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_freeze(v, nodes) for v in value))
    if isinstance(value, slice):
        return (slice, _freeze(value.start, nodes), _freeze(value.stop, nodes), _freeze(value.step, nodes))
    if isinstance(value, np.generic):
        return (type(value), value.item())
    if isinstance(value, np.ndarray):
        if value.dtype == object or value.size > MAX_ARRAY_ELEMENTS:
            raise _NotKept
        return (np.ndarray, value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return (dict, tuple(sorted((k, _freeze(v, nodes)) for k, v in value.items())))
    if isinstance(value, DataNode):
        raise _NotKept  # a symbolic node: not a dynamic call
    return _Same(value)  # functions, and any other object: the same object, the same operator


@dataclass(frozen=True)
class _NodePlan:
    op: Operator
    inputs: tuple[tuple[int, int], ...]  # (node, output) pairs; node -1 means given slot `output`
    arg_inputs: tuple[tuple[str, tuple[int, int]], ...]
    outputs: tuple[tuple[Any, str, int | None], ...]  # (device, name, channels) per output


@dataclass(frozen=True)
class Template:
    """The nodes one call made, to be made again around the same operators."""

    nodes: tuple[_NodePlan, ...]
    result: Any  # the result's structure: (node, output) pairs in tuples/lists

    def instantiate(self, given: list[EagerNode]) -> tuple[list[OpNode], Any]:
        """New nodes for a call whose data nodes are ``given`` (in the order ``key`` found them)."""
        made: list[OpNode] = []

        def ref(r: tuple[int, int]) -> DataNode:
            node, out = r
            return given[out] if node < 0 else made[node].outputs[out]

        for plan in self.nodes:
            opnode = OpNode(op=plan.op, inputs=tuple(ref(r) for r in plan.inputs),
                            arg_inputs={k: ref(r) for k, r in plan.arg_inputs}, name=plan.op.name)
            opnode.outputs = tuple(EagerNode(opnode, i, dev, name, ch) for i, (dev, name, ch) in enumerate(plan.outputs))
            made.append(opnode)

        def result(r: Any) -> Any:
            if isinstance(r, _Ref):
                return ref(r.at)
            if isinstance(r, (tuple, list)):
                return type(r)(result(x) for x in r)
            return r

        return made, result(self.result)


@dataclass(frozen=True)
class _Ref:
    at: tuple[int, int]


class OperatorCache:
    """Templates of recent calls, by function and arguments (least recently used dropped first)."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._entries: collections.OrderedDict[Hashable, Template] = collections.OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
            device: Any) -> tuple[Hashable | None, list[EagerNode]]:
        """(the call's key, or None when it cannot be kept; its data nodes in a fixed order)."""
        nodes: list[EagerNode] = []
        try:
            frozen = (_Same(function), _freeze(args, nodes), _freeze(kwargs, nodes), _freeze(device, nodes))
            hash(frozen)
        except (_NotKept, TypeError):
            return None, nodes
        return frozen, nodes

    def get(self, key: Hashable) -> Template | None:
        with self._lock:
            template = self._entries.get(key)
            if template is not None:
                self._entries.move_to_end(key)
            return template

    def record(self, key: Hashable, given: list[EagerNode], nodes: list[OpNode], result: Any) -> None:
        """Keep the template of a call that made ``nodes`` from ``given`` (unless it cannot be replayed)."""
        slots = {id(n): i for i, n in enumerate(given)}
        made: dict[int, int] = {}
        plans = []

        def ref(data: DataNode) -> tuple[int, int]:
            if id(data) in slots:
                return (-1, slots[id(data)])
            producer = made.get(id(data.producer))
            if producer is None:
                raise _NotKept
            return (producer, data.index)

        try:
            for k, node in enumerate(nodes):
                if isinstance(node.op, Source):
                    raise _NotKept
                plans.append(_NodePlan(
                    op=node.op,
                    inputs=tuple(ref(d) for d in node.inputs),
                    arg_inputs=tuple((name, ref(d)) for name, d in node.arg_inputs.items()),
                    outputs=tuple((d.device, d.name, d.channels) for d in node.outputs),
                ))
                made[id(node)] = k

            def shape(r: Any) -> Any:
                if isinstance(r, DataNode):
                    return _Ref(ref(r))
                if isinstance(r, (tuple, list)):
                    return type(r)(shape(x) for x in r)
                if r is None or isinstance(r, (bool, int, float, str)):
                    return r
                raise _NotKept

            template = Template(tuple(plans), shape(result))
        except _NotKept:
            return
        with self._lock:
            self._entries[key] = template
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
