"""The traced graph: operator nodes and the data nodes they produce.

Calling an ``fn.*`` function does not compute anything: it validates the
constant arguments, wraps them in an ``Operator`` and returns ``DataNode``s,
the symbolic outputs of that operator. There is no "current pipeline": the
graph is recovered by walking backwards from the outputs that the pipeline
definition returns, so tracing needs no global state.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import PipelineDefinitionError
from .expression_kernels import CompiledExpression
from .expressions import ArithmeticOp, Expr, Input, Node, constant
from .operator import CopyToGpu, Operator, Source
from .subscript import ShapesOp, SubscriptOp, parse_key
from .types import Device

__all__ = [
    "DataNode",
    "Guard",
    "Undefined",
    "OpNode",
    "NodeHook",
    "add_node",
    "branch",
    "conditionals_enabled",
    "current_guard",
    "expression",
    "input_layout",
    "node_hook",
    "require_node",
    "split_arguments",
    "topological_order",
]

# Only used to give nodes stable, readable names in error messages; the order
# of random streams is taken from the graph, not from this counter.
_node_names = itertools.count()

#: The conditions a node added now runs under: ((predicate, value), ...),
#: outermost first. Set by ``branch`` while a data-dependent ``if`` is traced;
#: a context variable, so concurrent definitions in other threads or tasks
#: never see each other's branches.
Guard = tuple[tuple["DataNode", bool], ...]
_GUARD: contextvars.ContextVar[Guard] = contextvars.ContextVar("streamflow_guard", default=())
#: Whether the definition being traced was converted for conditionals (error messages).
_CONDITIONALS: contextvars.ContextVar[bool] = contextvars.ContextVar("streamflow_conditionals", default=False)


class Undefined:
    """The value of a variable that one branch of an ``if`` on pipeline data does not set.

    Any use of it is an error that names the variable and the ``if``.
    """

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def _fail(self, *_: Any, **__: Any) -> Any:
        raise PipelineDefinitionError(self.reason)

    __bool__ = __call__ = __getattr__ = __getitem__ = __iter__ = __len__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __pow__ = _fail
    __neg__ = __and__ = __or__ = __xor__ = __lt__ = __le__ = __gt__ = __ge__ = _fail

    def __repr__(self) -> str:
        return f"<undefined: {self.reason}>"


def current_guard() -> Guard:
    """The branch conditions of the ``if`` being traced (empty outside any)."""
    return _GUARD.get()


@contextlib.contextmanager
def branch(predicate: DataNode, value: bool) -> Iterator[None]:
    """Nodes added inside run only for the samples where ``bool(predicate) == value``."""
    token = _GUARD.set((*_GUARD.get(), (predicate, value)))
    try:
        yield
    finally:
        _GUARD.reset(token)


@contextlib.contextmanager
def conditionals_enabled() -> Iterator[None]:
    """Marks a trace of a definition converted for ``if`` on pipeline data."""
    token = _CONDITIONALS.set(True)
    try:
        yield
    finally:
        _CONDITIONALS.reset(token)


class DataNode:
    """A symbolic batch of data: output ``index`` of operator node ``producer``.

    Pass it to other ``fn.*`` functions as an input or as a keyword argument
    (a per-sample argument, e.g. ``mirror=fn.random.coin_flip()``), or return
    it from the pipeline definition as an output.
    """

    __slots__ = ("channels", "device", "index", "name", "producer")

    # numpy scalars on the left (``np.uint8(255) - x``) defer to our reflected operators, which
    # keep their type, instead of numpy converting this node to an object array
    __array_ufunc__ = None

    def __init__(self, producer: OpNode, index: int, device: Device, name: str, channels: int | None = None) -> None:
        self.producer = producer
        self.index = index
        self.device = device
        self.name = name
        #: Channels of every sample when known where the pipeline is defined
        #: (decoded images: 3, or 1 for GRAY), else None; lets operators check
        #: per-channel arguments at the call.
        self.channels = channels

    def gpu(self) -> DataNode:
        """This data copied to the GPU (pinned host memory, copy stream)."""
        if self.device is Device.GPU:
            return self
        return add_node(CopyToGpu(), [self], device=Device.MIXED)[0]

    def cpu(self) -> DataNode:
        """This data on the host (only host data can be returned to the host in-graph)."""
        if self.device is Device.CPU:
            return self
        raise PipelineDefinitionError(
            f"{self.name} is GPU data; a pipeline cannot move GPU data back to the CPU "
            "inside the graph. Return it as an output and call .as_cpu() on the batch."
        )

    def __repr__(self) -> str:
        return f"DataNode({self.name!r}, device={self.device.value})"

    # --- arithmetic: each builds (or extends) one element-wise expression (expressions.py) ---
    def __add__(self, other: Any) -> DataNode:
        return expression("add", self, other)

    def __radd__(self, other: Any) -> DataNode:
        return expression("add", other, self)

    def __sub__(self, other: Any) -> DataNode:
        return expression("sub", self, other)

    def __rsub__(self, other: Any) -> DataNode:
        return expression("sub", other, self)

    def __mul__(self, other: Any) -> DataNode:
        return expression("mul", self, other)

    def __rmul__(self, other: Any) -> DataNode:
        return expression("mul", other, self)

    def __truediv__(self, other: Any) -> DataNode:
        return expression("truediv", self, other)

    def __rtruediv__(self, other: Any) -> DataNode:
        return expression("truediv", other, self)

    def __floordiv__(self, other: Any) -> DataNode:
        return expression("floordiv", self, other)

    def __rfloordiv__(self, other: Any) -> DataNode:
        return expression("floordiv", other, self)

    def __mod__(self, other: Any) -> DataNode:
        return expression("mod", self, other)

    def __rmod__(self, other: Any) -> DataNode:
        return expression("mod", other, self)

    def __pow__(self, other: Any) -> DataNode:
        return expression("pow", self, other)

    def __rpow__(self, other: Any) -> DataNode:
        return expression("pow", other, self)

    def __neg__(self) -> DataNode:
        return expression("neg", self)

    def __pos__(self) -> DataNode:
        return expression("pos", self)

    def __and__(self, other: Any) -> DataNode:
        return expression("and", self, other)

    def __rand__(self, other: Any) -> DataNode:
        return expression("and", other, self)

    def __or__(self, other: Any) -> DataNode:
        return expression("or", self, other)

    def __ror__(self, other: Any) -> DataNode:
        return expression("or", other, self)

    def __xor__(self, other: Any) -> DataNode:
        return expression("xor", self, other)

    def __rxor__(self, other: Any) -> DataNode:
        return expression("xor", other, self)

    def __lt__(self, other: Any) -> DataNode:
        return expression("lt", self, other)

    def __le__(self, other: Any) -> DataNode:
        return expression("le", self, other)

    def __gt__(self, other: Any) -> DataNode:
        return expression("gt", self, other)

    def __ge__(self, other: Any) -> DataNode:
        return expression("ge", self, other)

    def __eq__(self, other: Any) -> DataNode:  # type: ignore[override]
        return expression("eq", self, other)

    def __ne__(self, other: Any) -> DataNode:  # type: ignore[override]
        return expression("ne", self, other)

    # Identity, not value: DataNodes are dictionary keys inside the engine.
    __hash__ = object.__hash__

    def __getitem__(self, key: Any) -> DataNode:
        """``x[1, 2:5, ::2]`` of every sample (numpy indexing; bounds may be per-sample data)."""
        entries, args = parse_key(key, lambda v: "arg" if isinstance(v, DataNode) else None)
        layout = self.producer.op.layout(self.index)
        op = SubscriptOp(entries, frozenset(args), layout)
        return add_node(op, [self], args)[0]

    def shape(self, dtype: Any = None) -> DataNode:
        """Each sample's shape, as pipeline data (DALI's ``DataNode.shape()``; int64)."""
        return add_node(ShapesOp(dtype or "int64"), [self])[0]

    def __bool__(self) -> bool:
        if _CONDITIONALS.get():
            raise PipelineDefinitionError(
                f"{self.name} is per-sample pipeline data: it has no single truth value. With "
                "enable_conditionals=True an `if`/`elif`, a conditional expression (`a if c else b`), "
                "`and`/`or`/`not` may test it, in the pipeline function and the functions it calls; "
                "`while` loops, `assert` and comprehension conditions on pipeline data are not supported"
            )
        raise PipelineDefinitionError(
            f"{self.name} is symbolic data inside a pipeline definition; it has no truth "
            "value. To branch per sample, use @pipeline_def(enable_conditionals=True), or "
            "per-sample arguments (e.g. mirror=fn.random.coin_flip())."
        )


@dataclass(eq=False)
class OpNode:
    """One operator instance in the graph, with its inputs and outputs."""

    op: Operator
    inputs: tuple[DataNode, ...]
    arg_inputs: Mapping[str, DataNode]
    outputs: tuple[DataNode, ...] = field(default=())
    name: str = ""
    #: The node runs only for samples meeting these branch conditions (see ``branch``).
    guard: Guard = ()

    @property
    def upstream(self) -> Iterable[DataNode]:
        """Every data node this node reads: inputs, argument inputs, then branch predicates."""
        yield from self.inputs
        yield from self.arg_inputs.values()
        for predicate, _ in self.guard:
            yield predicate


class NodeHook(Protocol):
    """What ``streamflow.dynamic`` plugs into ``add_node`` to run operators at once (dynamic and debug mode)."""

    def device(self, op: Operator, device: str | Device | None) -> str | Device | None:
        """The device to place ``op`` on, given the one the ``fn`` call asked for."""

    def added(self, node: OpNode) -> tuple[DataNode, ...]:
        """What the ``fn`` call gets for the new node (its outputs, holding data when evaluated)."""


# The hook of the innermost ``node_hook`` block of this thread / task; None while tracing a graph.
_NODE_HOOK: contextvars.ContextVar[NodeHook | None] = contextvars.ContextVar("streamflow_node_hook", default=None)


@contextlib.contextmanager
def node_hook(hook: NodeHook | None) -> Iterator[None]:
    """Hand every node that ``add_node`` makes in this block to ``hook`` (``None``: plain tracing)."""
    token = _NODE_HOOK.set(hook)
    try:
        yield
    finally:
        _NODE_HOOK.reset(token)


def require_node(value: Any, op_name: str, index: int = 0) -> DataNode:
    """``value`` if it is a ``DataNode``; otherwise a clear error (arrays outside a pipeline, typos)."""
    if isinstance(value, DataNode):
        return value
    if isinstance(value, Undefined):
        raise PipelineDefinitionError(f"{op_name}: input {index}: {value.reason}")
    kind = f"{type(value).__module__}.{type(value).__name__}" if type(value).__module__ != "builtins" else type(value).__name__
    if hasattr(value, "__array__") or hasattr(value, "__cuda_array_interface__") or hasattr(value, "__dlpack__"):
        raise PipelineDefinitionError(
            f"{op_name}: input {index} is an array ({kind}), not pipeline data. fn.* functions build a "
            "pipeline graph inside a @pipeline_def function, where their inputs are the outputs of other "
            "fn.* calls; to run operators on your own arrays, feed them with fn.external_source, or call "
            f"streamflow.dynamic.{op_name} on them (dynamic mode)"
        )
    raise PipelineDefinitionError(
        f"{op_name}: input {index} must be the output of another operator (a DataNode), got {kind}"
    )


def input_layout(data: Any, op_name: str) -> str:
    """The layout name of ``data`` (``""`` when unknown), checking it is pipeline data."""
    node = require_node(data, op_name)
    return node.producer.op.layout(node.index)


def add_node(
    op: Operator,
    inputs: Sequence[DataNode],
    arg_inputs: Mapping[str, DataNode] | None = None,
    *,
    device: str | Device | None = None,
) -> tuple[DataNode, ...]:
    """Place ``op`` on ``device``, create its node fed by ``inputs`` and return its outputs.

    This is the one place where an operator's device is chosen and its
    inputs checked against it (``Operator.place``, ``Operator.accepts_input``);
    ``device=None`` infers the device from the inputs as DALI does.
    """
    for i, node in enumerate(inputs):
        require_node(node, op.name, i)
    arg_inputs = dict(arg_inputs or {})
    unknown = set(arg_inputs) - op.per_sample_args
    if unknown:
        allowed = ", ".join(sorted(op.per_sample_args)) or "none"
        raise PipelineDefinitionError(
            f"{op.name}: argument(s) {sorted(unknown)} cannot be per-sample data "
            f"(DataNodes); per-sample arguments of this operator: {allowed}"
        )
    hook = _NODE_HOOK.get()
    if hook is not None:
        device = hook.device(op, device)
    op.place(device, [d.device for d in inputs])
    for data in inputs:
        if not op.accepts_input(data.device):
            raise PipelineDefinitionError(
                f"{op.name} runs on the {op.device.value.upper()} but its input {data.name} is "
                f"{data.device.value.upper()} data; use device='gpu' for {op.name}, or leave "
                "device unset to follow the input"
            )
    for key, data in arg_inputs.items():
        if data.device is not Device.CPU:
            raise PipelineDefinitionError(
                f"{op.name}: argument {key}={data.name} is GPU data; per-sample arguments "
                "must be CPU data"
            )
    guard = _GUARD.get()
    _check_branch_use(op, [*inputs, *arg_inputs.values()], guard)
    node_name = op.instance_name or f"{op.name}#{next(_node_names)}"
    opnode = OpNode(op=op, inputs=tuple(inputs), arg_inputs=arg_inputs, name=node_name, guard=guard)
    out_device = op.output_device
    channels = op.output_channels([d.channels for d in inputs])
    outputs = tuple(
        DataNode(opnode, i, out_device, node_name if op.num_outputs == 1 else f"{node_name}[{i}]", channels)
        for i in range(op.num_outputs)
    )
    opnode.outputs = outputs
    return outputs if hook is None else hook.added(opnode)


def _check_branch_use(op: Operator, used: Sequence[DataNode], guard: Guard) -> None:
    """Refuse sources inside a branch, and data from a branch the node is not in."""
    if guard and isinstance(op, Source):
        raise PipelineDefinitionError(
            f"{op.name} is a source (reader or external source): it cannot be inside an `if` on "
            "pipeline data; read the data before the `if` and use it inside"
        )
    if op.merges_branches:
        return
    # By identity: DataNode's == builds an expression, it does not compare.
    conditions = {(id(p), v) for p, v in guard}
    for data in used:
        if data.producer.guard and not {(id(p), v) for p, v in data.producer.guard} <= conditions:
            raise PipelineDefinitionError(
                f"{op.name} uses {data.name}, computed inside an `if` branch on pipeline data that "
                "this use is not in; assign it to a variable in that branch and use the variable "
                "after the `if` (both branches must set it)"
            )


def expression(op: str, *operands: Any) -> DataNode:
    """The DataNode of ``op`` applied to ``operands`` (DataNodes or constants), as one expression.

    An operand made by another expression is inlined (its own operands become
    this node's inputs), so a chain of element-wise operations is one
    operator, evaluated in one pass.
    """
    inputs: list[DataNode] = []

    def slot(node: DataNode) -> int:
        for k, known in enumerate(inputs):
            if known is node:
                return k
        inputs.append(node)
        return len(inputs) - 1

    guard = [(id(p), v) for p, v in _GUARD.get()]

    def lift(value: Any) -> Expr:
        if isinstance(value, DataNode):
            producer = value.producer.op
            # Inlined only from the same branch of an `if`: the node must keep its inputs' conditions.
            same_branch = [(id(p), v) for p, v in value.producer.guard] == guard
            if isinstance(producer, ArithmeticOp) and same_branch:
                mapping = [slot(d) for d in value.producer.inputs]
                return _remap(producer.expr, mapping)
            return Input(slot(value))
        if isinstance(value, (list, tuple)) or hasattr(value, "__array__") or isinstance(value, (int, float, bool)):
            return constant(value)
        raise PipelineDefinitionError(
            f"arithmetic: an operand must be pipeline data (a DataNode) or a number, got {type(value).__name__}"
        )

    tree = Node(op, tuple(lift(v) for v in operands))
    if not inputs:
        raise PipelineDefinitionError(f"arithmetic {op}: at least one operand must be pipeline data (a DataNode)")
    layout = inputs[0].producer.op.layout(inputs[0].index)
    arithmetic = ArithmeticOp(tree, len(inputs), layout=layout, compiled=CompiledExpression(tree))
    return add_node(arithmetic, inputs)[0]


def _remap(expr: Expr, mapping: Sequence[int]) -> Expr:
    if isinstance(expr, Input):
        return Input(mapping[expr.index])
    if isinstance(expr, Node):
        return Node(expr.op, tuple(_remap(a, mapping) for a in expr.args))
    return expr


def topological_order(outputs: Sequence[DataNode]) -> list[OpNode]:
    """Every node the outputs depend on, inputs before users, in a stable order.

    The order depends only on the graph's structure (depth-first from the
    outputs, inputs visited in argument order), so it is the same on every
    run of the same definition; operators' random streams are keyed on it.
    """
    order: list[OpNode] = []
    state: dict[int, int] = {}  # id -> 1 visiting, 2 done

    def visit(node: OpNode) -> None:
        key = id(node)
        if state.get(key) == 2:
            return
        if state.get(key) == 1:
            raise PipelineDefinitionError(f"the graph has a cycle through {node.name}")
        state[key] = 1
        for data in node.upstream:
            visit(data.producer)
        state[key] = 2
        order.append(node)

    for out in outputs:
        visit(out.producer)
    return order


def split_arguments(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, DataNode]]:
    """Separate constant keyword arguments from per-sample ``DataNode`` ones."""
    constants: dict[str, Any] = {}
    per_sample: dict[str, DataNode] = {}
    for key, value in kwargs.items():
        if isinstance(value, DataNode):
            per_sample[key] = value
        else:
            constants[key] = value
    return constants, per_sample
