"""Calling an ``fn`` function on real data: the one generic path behind every dynamic operator.

``call(fn.resize, (images,), {"size": 224})``:

1. **Inputs.** The arguments the function types as data (``DataNode``) are
   wrapped into computed ``EagerNode``s: positional data inputs take anything
   array-like (a list is a batch of samples, anything else one sample);
   per-sample arguments take batches (a ``Batch`` or ``TensorList``), any
   other value stays the constant it is in a pipeline.
2. **Definition.** The ``fn`` function runs as in a pipeline definition:
   the same argument checks and error messages, the same operator object.
   ``graph.add_node`` hands each node it makes to ``DynamicHook``, which
   translates DALI's dynamic ``device="gpu"`` (``"mixed"`` for decoders)
   and collects the nodes.
3. **Evaluation.** The nodes run in order (``executor.run_node``), each
   taking the next position of the call's ``RNG`` as its random key. A node
   fed by a source (a reader) is not run: the call returns a ``SourceGraph``,
   which ``streamflow.dynamic`` turns into an iterable reader.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError
from ..graph import DataNode, OpNode, node_hook
from ..operator import Operator, Source
from ..tensor import TensorList
from ..types import Device, parse_device
from .cache import OperatorCache
from .data import BatchBase, Origin, TensorBase, to_sample
from .executor import EagerNode, Value, run_node, run_node_async
from .rng import RNG, get_default_rng

__all__ = ["CACHE", "DynamicHook", "SourceGraph", "call", "call_async", "given", "signature_of"]

DATA, ARG, ANY, CONST = "data", "arg", "any", "const"

#: Operators of recent calls, reused by calls with the same arguments (see ``cache.py``).
CACHE = OperatorCache()


@dataclass
class SourceGraph:
    """What a call that makes a source (a reader) returns: the nodes, to be run batch by batch."""

    nodes: list[OpNode]
    result: Any  # the fn function's result: DataNodes (or tuples of them)
    rng: RNG


class _Given(Operator):
    """The producer of user data in dynamic mode (never run: its node holds the data)."""

    name = "dynamic_input"

    def __init__(self, layout: str) -> None:
        super().__init__(device=Device.CPU)
        self._layout = layout

    def run(self, chunk: Any) -> list[list[Any]]:  # pragma: no cover - given data is never computed
        raise TypeError("dynamic input data is not an operator to run")

    def layout(self, index: int) -> str:
        return self._layout


def given(value: Value, name: str = "input") -> EagerNode:
    """An ``EagerNode`` holding ``value`` (user data for an ``fn`` function)."""
    producer = OpNode(op=_Given(value.layout), inputs=(), arg_inputs={}, name=name)
    channels = None
    if value.layout.endswith("C") and value.samples and np.ndim(value.samples[0]) == len(value.layout):
        counts = {int(np.shape(s)[-1]) for s in value.samples}
        channels = counts.pop() if len(counts) == 1 else None
    node = EagerNode(producer, 0, value.device, name, channels, value)
    producer.outputs = (node,)
    return node


# --- what each parameter of an fn function takes ----------------------------------------------


@dataclass(frozen=True)
class Signature:
    """Per parameter of an ``fn`` function: data input, per-sample argument, or constant."""

    positional: tuple[str, ...]
    variadic: str | None  # the *inputs kind, if any
    kinds: dict[str, str] = field(default_factory=dict)
    params: frozenset[str] = frozenset()


def _kind(hint: Any, returns_node: bool) -> str:
    if hint is DataNode:
        return DATA
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and DataNode in typing.get_args(hint):
        return ARG
    if hint is Any and returns_node:
        return ANY  # streamflow.math: x may be data or a number
    return CONST


@functools.cache
def signature_of(function: Callable[..., Any]) -> Signature:
    """Which parameters of ``function`` take data (read once from its annotations)."""
    target = inspect.unwrap(function)
    sig = inspect.signature(target)
    try:
        hints = typing.get_type_hints(target)
    except Exception:
        hints = {}
    returns_node = hints.get("return") is DataNode
    # An untyped positional parameter of a function of data (streamflow.math's x) takes data or numbers.
    kinds = {name: _kind(hints.get(name, Any), returns_node and p.kind is not p.KEYWORD_ONLY)
             for name, p in sig.parameters.items()}
    positional = tuple(n for n, p in sig.parameters.items()
                       if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    variadic = next((n for n, p in sig.parameters.items() if p.kind is p.VAR_POSITIONAL), None)
    return Signature(positional, variadic, kinds, frozenset(sig.parameters))


# --- inputs ----------------------------------------------------------------------------------


def _value_of(data: Any, what: str) -> Value:
    """User data as a ``Value``: a batch (Batch, TensorList, list) or one sample (anything else)."""
    if isinstance(data, BatchBase):
        return Value(data.samples(), data.layout, data.origin)
    if isinstance(data, TensorList):
        samples = [data.at(i) for i in range(len(data))]
        return Value(samples, data.layout, Origin.fresh(len(samples)))
    if isinstance(data, (list, tuple)):
        samples = [to_sample(s, what) for s in data]
        layouts = {s.layout for s in data if isinstance(s, TensorBase)}
        return Value(samples, layouts.pop() if len(layouts) == 1 else "", Origin.fresh(len(samples)))
    layout = data.layout if isinstance(data, TensorBase) else ""
    return Value([to_sample(data, what)], layout, Origin.fresh(1), single=True)


def _is_array(value: Any) -> bool:
    """Data for a parameter that also takes numbers: arrays, and lists of arrays or numpy scalars (a batch)."""
    if isinstance(value, (list, tuple)):
        return bool(value) and all((_is_array(v) or isinstance(v, np.generic)) and not isinstance(v, (list, tuple))
                                   for v in value)
    return (isinstance(value, (BatchBase, TensorBase, TensorList, np.ndarray))
            or hasattr(value, "__dlpack__") or hasattr(value, "__cuda_array_interface__"))


def _constant(value: TensorBase) -> Any:
    """A tensor given as a constant argument: its value (0-d: a Python scalar)."""
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array


def _wrap(value: Any, kind: str, what: str) -> Any:
    if value is None or isinstance(value, DataNode):
        return value
    if kind == DATA or (kind == ANY and _is_array(value)):
        return given(_value_of(value, what), what)
    if kind == ARG:
        if isinstance(value, (BatchBase, TensorList)):
            return given(_value_of(value, what), what)
        if isinstance(value, TensorBase):
            return _constant(value)
    if kind == CONST and isinstance(value, TensorBase):
        return _constant(value)
    return value


def _wrap_arguments(function: Callable[..., Any], label: str, args: Sequence[Any],
                    kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    sig = signature_of(function)
    wrapped: list[Any] = []
    for i, value in enumerate(args):
        name = sig.positional[i] if i < len(sig.positional) else sig.variadic
        kind = sig.kinds.get(name, CONST) if name else CONST
        if kind == ARG and not isinstance(value, TensorBase) and _is_array(value):
            kind = ANY  # arrays given in the place of data or per-sample data: data (constants stay constants)
        what = f"{label}: input {i}" if kind in (DATA, ANY) else f"{label}: argument {name}"
        wrapped.append(_wrap(value, kind, what))
    named = {k: _wrap(v, sig.kinds.get(k, CONST), f"{label}: argument {k}") for k, v in kwargs.items()}
    return wrapped, named


# --- the hook --------------------------------------------------------------------------------


class DynamicHook:
    """Collects the nodes an ``fn`` call makes, placing them as DALI's dynamic mode does.

    ``device="gpu"`` means the GPU: the mixed device for operators that take
    host data and give GPU data (decoders), which DALI's pipelines call "mixed".
    """

    def __init__(self, device: Any = None) -> None:
        self.requested = device
        self.nodes: list[OpNode] = []

    def device(self, op: Operator, device: str | Device | None) -> str | Device | None:
        if device is None:
            device = self.requested
        if device is None:
            return None
        try:
            parsed = parse_device(device)
        except ValueError:
            return device  # Operator.place names the bad value
        if parsed is Device.GPU and Device.GPU not in op.devices and Device.MIXED in op.devices:
            return Device.MIXED
        return parsed

    def added(self, node: OpNode) -> tuple[DataNode, ...]:
        node.outputs = tuple(EagerNode(node, i, d.device, d.name, d.channels) for i, d in enumerate(node.outputs))
        self.nodes.append(node)
        return node.outputs


# --- the call ----------------------------------------------------------------------------------


@dataclass
class _Prepared:
    hook: DynamicHook
    result: Any
    rng: RNG
    batch_size: int | None


def _prepare(function: Callable[..., Any], label: str, args: Sequence[Any], kwargs: dict[str, Any]) -> _Prepared:
    sig = signature_of(function)
    kwargs = dict(kwargs)
    # A function with a device argument passes it to add_node, where the hook translates it.
    device = None if "device" in sig.params else kwargs.pop("device", None)
    rng = kwargs.pop("rng", None)
    if "seed" not in sig.params and "seed" in kwargs:
        seed = kwargs.pop("seed")
        if rng is not None:
            raise PipelineDefinitionError(f"{label}: give rng or seed, not both")
        rng = RNG(seed)
    if rng is None:
        rng = get_default_rng()
    elif isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        rng = RNG(int(rng))
    elif not isinstance(rng, RNG):
        raise PipelineDefinitionError(f"{label}: rng must be a streamflow.dynamic.random.RNG or an int seed, "
                                      f"got {type(rng).__name__}")
    batch_size = kwargs.pop("batch_size", None) if "batch_size" not in sig.params else None
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                                   or batch_size < 1):
        raise PipelineDefinitionError(f"{label}: batch_size must be a positive int, got {batch_size!r}")
    wrapped, named = _wrap_arguments(function, label, args, kwargs)
    hook = DynamicHook(device)
    key, given_nodes = CACHE.key(function, tuple(wrapped), named, device)
    template = CACHE.get(key) if key is not None else None
    if template is not None:  # the same call before: the same operators, new nodes around them
        hook.nodes, result = template.instantiate(given_nodes)
    else:
        with node_hook(hook):
            result = function(*wrapped, **named)
        if key is not None:
            CACHE.record(key, given_nodes, hook.nodes, result)
    return _Prepared(hook, result, rng, None if batch_size is None else int(batch_size))


def _fed_by_source(node: OpNode, pending: set[int]) -> bool:
    return isinstance(node.op, Source) or any(id(d.producer) in pending for d in node.upstream)


def _results(result: Any) -> Any:
    if isinstance(result, EagerNode):
        return result.value
    if isinstance(result, (tuple, list)):
        return type(result)(_results(r) for r in result)
    return result


def _source_graph(prepared: _Prepared) -> SourceGraph | None:
    if not any(isinstance(node.op, Source) for node in prepared.hook.nodes):
        return None
    pending: set[int] = set()
    for node in prepared.hook.nodes:
        if _fed_by_source(node, pending):
            pending.add(id(node))
    if not pending:
        return None
    return SourceGraph(prepared.hook.nodes, prepared.result, prepared.rng)


def _store(node: OpNode, values: list[Value]) -> None:
    for data, value in zip(node.outputs, values):
        data.value = value  # type: ignore[attr-defined]  # outputs are EagerNodes (DynamicHook.added)


def call(function: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any], label: str = "") -> Any:
    """Run ``function`` (an ``fn`` function) on real data; its result with ``Value``s for data nodes.

    Dynamic-only keywords: ``device`` (for functions without one),
    ``rng`` (an ``RNG`` or an int seed), ``seed`` (for functions without one:
    the same as ``rng=RNG(seed)``) and ``batch_size`` (results of operators
    without inputs, e.g. random ones, are batches of this size).
    """
    prepared = _prepare(function, label or function.__name__, args, kwargs)
    graph = _source_graph(prepared)
    if graph is not None:
        return graph
    for node in prepared.hook.nodes:
        _store(node, run_node(node, prepared.rng.next_key(), prepared.batch_size))
    return _results(prepared.result)


async def call_async(function: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any],
                     label: str = "") -> Any:
    """``call`` with the computing awaited on the worker pool (the event loop never blocks on it)."""
    prepared = _prepare(function, label or function.__name__, args, kwargs)
    graph = _source_graph(prepared)
    if graph is not None:
        return graph
    for node in prepared.hook.nodes:
        _store(node, await run_node_async(node, prepared.rng.next_key(), prepared.batch_size))
    return _results(prepared.result)
