"""``if``/``else`` on pipeline data: the operations a converted definition calls.

With ``@pipeline_def(enable_conditionals=True)`` the definition is rewritten
(``streamflow.autograph``) so that an ``if`` whose condition is pipeline data
becomes a call of ``if_stmt``: both branches are traced, each under a
``graph.branch`` (its operators run only for the samples whose condition
selects that branch), and every variable a branch assigns is joined
afterwards by a ``Merge`` operator that takes, per sample, the value of the
branch that sample went through. Conditions are per-sample scalars on the CPU
(any number: non-zero is true), as in DALI. Nothing is computed for a sample
in a branch it does not take.

``if_exp`` (``a if c else b``), ``not_``, ``and_`` and ``or_`` do the same for
expressions; on Python values they behave exactly like Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, PipelineError
from ..graph import DataNode, Undefined, add_node, branch, expression
from ..operator import Chunk, Operator
from ..types import Device

__all__ = ["UNBOUND", "Merge", "and_", "if_exp", "if_stmt", "is_data", "not_", "or_"]


#: Stands for a variable not bound before the ``if`` (the converted code passes it in).
UNBOUND = Undefined("a variable used before it was assigned")


def is_data(value: Any) -> bool:
    """Whether ``value`` is pipeline data (a ``DataNode``), i.e. the ``if`` is per sample."""
    return isinstance(value, DataNode)


class Merge(Operator):
    """Per sample, the value of the branch the sample took: ``if_true`` where the condition holds.

    Each side is a positional input or, where a branch set a Python constant,
    that constant (``true_value``/``false_value``).
    """

    name: ClassVar[str] = "_conditional.merge"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"predicate"})
    merges_branches = True
    # One chunk per batch: the branches' rows must share a type, which only the whole batch shows
    # (and the pick is a list of references, nothing to share out).
    whole_batch = True

    def __init__(self, sides: tuple[int | None, int | None], constants: tuple[Any, Any], layout: str) -> None:
        super().__init__()
        self.sides = sides  # input index of the true / false value, None: the constant
        self.constants = tuple(None if c is None else _constant_array(c) for c in constants)
        self._layout = layout

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [self.pick(chunk, lambda value: value)]

    def pick(self, chunk: Chunk, to_device: Callable[[np.ndarray], Any]) -> list[Any]:
        """Per row, the chosen side (constants passed through ``to_device``)."""
        out: list[Any] = []
        for row, predicate in enumerate(chunk.args["predicate"]):
            side = 0 if _truth(predicate) else 1
            index, constant = self.sides[side], self.constants[side]
            if index is not None:
                out.append(chunk.inputs[index][row])
            else:
                assert constant is not None  # a side is an input or a constant
                out.append(to_device(constant))
        types = {value.dtype for value in out if hasattr(value, "dtype")}
        if len(types) > 1:
            raise PipelineError(
                f"the branches of an `if` on pipeline data give different types "
                f"({', '.join(sorted(map(str, types)))}); every branch must give the same type, as in DALI "
                "(cast one, e.g. fn.cast)",
                operator=self.name,
            )
        return out

    def layout(self, index: int) -> str:
        return self._layout


def _constant_array(value: Any) -> np.ndarray:
    """A Python constant as DALI types it: bool, int32 for ints, float32 for floats."""
    array = np.asarray(value)
    if array.dtype.kind in "iu" and not isinstance(value, np.ndarray | np.number):
        return array.astype(np.int32)
    if array.dtype == np.float64 and not isinstance(value, np.ndarray | np.number):
        return array.astype(np.float32)
    return array


def _truth(value: Any) -> bool:
    return bool(value.item() if hasattr(value, "item") else value)


def _check_predicate(predicate: DataNode, what: str) -> None:
    if predicate.device is not Device.CPU:
        raise PipelineDefinitionError(
            f"the condition of {what} ({predicate.name}) is GPU data; conditions must be CPU data "
            "(per-sample scalars such as fn.random.coin_flip() or a comparison of CPU values)"
        )


def merge(predicate: DataNode, if_true: Any, if_false: Any, what: str) -> Any:
    """One value from the branches' values ``if_true``/``if_false`` (see ``Merge``)."""
    if if_true is if_false:
        return if_true
    true_is_data, false_is_data = isinstance(if_true, DataNode), isinstance(if_false, DataNode)
    if not true_is_data and not false_is_data:
        if isinstance(if_true, Undefined) or isinstance(if_false, Undefined):
            return if_true if isinstance(if_true, Undefined) else if_false
        if _same_constant(if_true, if_false):
            return if_true
    for side in (if_true, if_false):
        if isinstance(side, Undefined):
            return side
        if not isinstance(side, DataNode) and not _is_constant(side):
            raise PipelineDefinitionError(
                f"{what}: the branches give different Python objects ({type(if_true).__name__} and "
                f"{type(if_false).__name__}); only pipeline data and numbers can differ between the "
                "branches of an `if` on pipeline data"
            )
    values = [v for v in (if_true, if_false) if isinstance(v, DataNode)]
    if len({v.device for v in values}) > 1:
        raise PipelineDefinitionError(
            f"{what}: one branch gives CPU data and the other GPU data; move both to the same "
            "device (e.g. .gpu()) inside the branches"
        )
    sides = (0 if true_is_data else None, (1 if true_is_data else 0) if false_is_data else None)
    constants = (None if true_is_data else if_true, None if false_is_data else if_false)
    # Two constants (a Python value the branches set differently) become a per-sample choice.
    layout = values[0].producer.op.layout(values[0].index) if values else ""
    device = values[0].device if values else Device.CPU
    return add_node(Merge(sides, constants, layout), values, {"predicate": predicate}, device=device)[0]


def _is_constant(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.number, np.ndarray)) or (
        isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, np.number)) for v in value)
    )


def _same_constant(a: Any, b: Any) -> bool:
    if not (_is_constant(a) and _is_constant(b)):
        return a is b
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    return a_arr.dtype == b_arr.dtype and a_arr.shape == b_arr.shape and bool(np.all(a_arr == b_arr))


def if_stmt(
    condition: DataNode,
    if_body: Callable[[], None],
    else_body: Callable[[], None],
    get_state: Callable[[], tuple[Any, ...]],
    set_state: Callable[[tuple[Any, ...]], None],
    names: Sequence[str],
    where: str,
) -> None:
    """Trace both branches of ``if condition:`` and merge the variables they assign.

    ``get_state``/``set_state`` read and write the branch-assigned variables
    ``names`` of the converted function; ``where`` names the ``if`` (file:line)
    for messages.
    """
    what = f"the `if` at {where}"
    _check_predicate(condition, what)
    before = get_state()
    with branch(condition, True):
        if_body()
        after_true = get_state()
    set_state(before)
    with branch(condition, False):
        else_body()
        after_false = get_state()
    merged = []
    for name, t, f in zip(names, after_true, after_false):
        if (t is UNBOUND) != (f is UNBOUND):
            taken = "true" if f is UNBOUND else "false (else)"
            merged.append(Undefined(
                f"variable {name!r} is set only in the {taken} branch of {what}, so it has no value "
                "for the samples that take the other branch; set it in both branches or before the `if`"
            ))
            continue
        merged.append(merge(condition, t, f, f"{what}, variable {name!r}"))
    set_state(tuple(merged))


def if_exp(condition: Any, if_true: Callable[[], Any], if_false: Callable[[], Any], where: str) -> Any:
    """``if_true() if condition else if_false()``, per sample when the condition is pipeline data."""
    if not isinstance(condition, DataNode):
        return if_true() if condition else if_false()
    what = f"the conditional expression at {where}"
    _check_predicate(condition, what)
    with branch(condition, True):
        t = if_true()
    with branch(condition, False):
        f = if_false()
    return merge(condition, t, f, what)


def _as_bool(value: DataNode) -> DataNode:
    return expression("ne", value, 0)


def not_(value: Any) -> Any:
    """``not value``: per-sample logical not of pipeline data (bool), else Python's ``not``."""
    if isinstance(value, DataNode):
        return expression("eq", value, 0)
    return not value


def and_(*operands: Callable[[], Any]) -> Any:
    """``a and b and ...`` with Python's short-circuit; on pipeline data a per-sample logical and.

    Like DALI, once an operand is pipeline data the result is a per-sample
    bool, and the later operands are evaluated only for the samples where the
    earlier ones are true.
    """
    return _logical(operands, want=False)


def or_(*operands: Callable[[], Any]) -> Any:
    """``a or b or ...`` (see ``and_``); the later operands only where the earlier are false."""
    return _logical(operands, want=True)


def _logical(operands: Sequence[Callable[[], Any]], want: bool) -> Any:
    value = operands[0]()
    rest = operands[1:]
    if not rest:
        return value
    if not isinstance(value, DataNode):
        if bool(value) is want:  # Python short-circuit: `a and b` is a when a is false
            return value
        return _logical(rest, want)
    condition = _as_bool(value)
    with branch(condition, not want):
        later = _logical(rest, want)
        later = _as_bool(later) if isinstance(later, DataNode) else bool(later)
    if want:
        return merge(condition, True, later, "`or`")
    return merge(condition, later, False, "`and`")
