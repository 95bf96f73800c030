"""Arithmetic on pipeline data: ``images * 2 + 1``, comparisons, ``streamflow.math`` functions.

``DataNode`` operators (``+ - * / // % **``, unary ``-``, comparisons,
``& | ^``) and the ``streamflow.math`` functions build an expression tree.
A whole expression is **one operator** (``ArithmeticOp``): an operand that is
itself an expression is inlined, so ``(a * 2 + b) / 3`` is evaluated in one
pass over each sample, not one pass per operator: on the CPU by the
expression's generated kernel built as host C++ (``expression_kernels.
CompiledExpression``: one loop, no temporaries, the GIL released), or, where
that cannot be used, by numpy block by block (``BLOCK`` elements at a time, so
the intermediate values stay in cache). Both give the same bits.

Types follow DALI 2.4 (measured on its CPU operators):

* tensor with tensor: integers promote as numpy does (``uint8 + int16 ->
  int16``), any float gives ``float32`` (``float64`` only with a ``float64``
  operand); a Python ``int`` constant is ``int32``, a ``float`` constant
  ``float32``, a ``bool`` constant ``bool``;
* ``/`` always gives a float (``float32``); ``//`` and ``%`` on integers
  truncate toward zero like C (``-7 // 2 == -3``, ``-7 % 3 == -1``); integer
  results wrap around (``-uint8`` stays ``uint8``);
* comparisons give ``bool``; ``& | ^`` take integers or booleans;
* ``math``: ``abs``, ``min``, ``max``, ``clamp``, ``pow`` keep the (promoted)
  type; every other function (``sqrt``, ``floor``, ``exp``, ``fpow``,
  ``atan2``...) gives a float (``float32`` for integer inputs).

Operands broadcast as numpy does (DALI: a per-sample scalar with an image).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .errors import PipelineDefinitionError, SampleError
from .operator import Chunk, Operator
from .types import Device, ScalarConstant

__all__ = ["BINARY", "FUNCTIONS", "UNARY", "ArithmeticOp", "Const", "Expr", "Input", "Node", "promote", "result_type"]

#: Elements evaluated at a time (keeps the intermediates of a block in cache).
BLOCK = 16384


@dataclass(frozen=True)
class Input:
    """Operand ``index`` of the operator (one of its input DataNodes)."""

    index: int


@dataclass(frozen=True)
class Const:
    """A constant, with the type DALI gives it."""

    value: Any
    dtype: np.dtype


@dataclass(frozen=True)
class Node:
    """``op`` applied to ``args``."""

    op: str
    args: tuple[Expr, ...]


Expr = Input | Const | Node


def constant(value: Any) -> Const:
    """A Python or numpy constant with DALI's type: ``int`` -> int32, ``float`` -> float32."""
    if isinstance(value, ScalarConstant):  # types.Constant(10).uint8(): the type it was given
        return Const(value.value.item(), value.dtype.numpy)
    if isinstance(value, (bool, np.bool_)):
        return Const(bool(value), np.dtype(np.bool_))
    if isinstance(value, int):
        return Const(value, np.dtype(np.int32))
    if isinstance(value, float):
        return Const(float(value), np.dtype(np.float32))
    if isinstance(value, (np.integer, np.floating)):
        return Const(value.item(), value.dtype)
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise PipelineDefinitionError(f"arithmetic: a constant must be a number or an array of numbers, got {value!r}")
    dtype = np.dtype(np.int32) if arr.dtype.kind == "i" and arr.dtype.itemsize == 8 else arr.dtype
    dtype = np.dtype(np.float32) if arr.dtype == np.float64 else dtype
    return Const(arr.astype(dtype), dtype)


def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """DALI's type promotion of two operands."""
    if a.kind == "f" or b.kind == "f":
        return np.dtype(np.float64) if np.dtype(np.float64) in (a, b) else np.dtype(np.float32)
    if a.kind == "b":
        return b
    if b.kind == "b":
        return a
    return np.promote_types(a, b)


def _float(t: np.dtype) -> np.dtype:
    return t if t.kind == "f" and t.itemsize >= 4 else np.dtype(np.float32)


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C), division by zero gives 0."""
    safe = np.where(b == 0, 1, b)
    q = np.floor_divide(a, safe)
    fix = (np.remainder(a, safe) != 0) & ((a < 0) != (safe < 0))
    q = q + fix.astype(q.dtype)
    return np.where(b == 0, 0, q).astype(q.dtype)


def _int_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.fmod(a, safe)).astype(np.result_type(a, b))


def _true_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.true_divide(a, b)


def _floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # DALI 2.4: `//` of floating-point operands is a plain division (42.0 // 9.0 == 4.666...)
    return _int_div(a, b) if a.dtype.kind in "iub" else np.true_divide(a, b).astype(a.dtype)


def _mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _int_mod(a, b) if a.dtype.kind in "iub" else np.fmod(a, b)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return np.power(a, np.maximum(b, 0)).astype(a.dtype)  # negative integer powers: 0 or 1 in C; keep it defined
    return np.power(a, b)


def _bitwise(fn: Callable[[Any, Any], Any]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def apply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind not in "biu":
            raise SampleError(f"bitwise operators take integers or booleans, got {a.dtype}")
        return fn(a, b)

    return apply


#: name -> (numpy function on operands already cast to the computation type, result kind)
#: result kind: "same" (the promoted type), "float", "bool".
BINARY: dict[str, tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], str]] = {
    "add": (np.add, "same"),
    "sub": (np.subtract, "same"),
    "mul": (np.multiply, "same"),
    "truediv": (_true_div, "float"),
    "floordiv": (_floor_div, "same"),
    "mod": (_mod, "same"),
    "pow": (_power, "same"),
    "eq": (np.equal, "bool"),
    "ne": (np.not_equal, "bool"),
    "lt": (np.less, "bool"),
    "le": (np.less_equal, "bool"),
    "gt": (np.greater, "bool"),
    "ge": (np.greater_equal, "bool"),
    "and": (_bitwise(np.bitwise_and), "same"),
    "or": (_bitwise(np.bitwise_or), "same"),
    "xor": (_bitwise(np.bitwise_xor), "same"),
    "min": (np.minimum, "same"),
    "max": (np.maximum, "same"),
    "fpow": (np.power, "float"),
    "atan2": (np.arctan2, "float"),
}

#: name -> (numpy function, result kind: "same" or "float")
UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "neg": (np.negative, "same"),
    "pos": (np.positive, "same"),
    "abs": (np.abs, "same"),
    "fabs": (np.fabs, "float"),
    "floor": (np.floor, "float"),
    "ceil": (np.ceil, "float"),
    "sqrt": (np.sqrt, "float"),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "float"),
    "cbrt": (np.cbrt, "float"),
    "exp": (np.exp, "float"),
    "log": (np.log, "float"),
    "log2": (np.log2, "float"),
    "log10": (np.log10, "float"),
    "sin": (np.sin, "float"),
    "cos": (np.cos, "float"),
    "tan": (np.tan, "float"),
    "asin": (np.arcsin, "float"),
    "acos": (np.arccos, "float"),
    "atan": (np.arctan, "float"),
    "sinh": (np.sinh, "float"),
    "cosh": (np.cosh, "float"),
    "tanh": (np.tanh, "float"),
    "asinh": (np.arcsinh, "float"),
    "acosh": (np.arccosh, "float"),
    "atanh": (np.arctanh, "float"),
}

#: The functions of ``streamflow.math`` (``clamp`` is ``min(max(x, lo), hi)``).
FUNCTIONS = ("abs", "fabs", "floor", "ceil", "pow", "fpow", "min", "max", "clamp", "sqrt", "rsqrt", "cbrt", "exp",
             "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
             "asinh", "acosh", "atanh")


def result_type(expr: Expr, inputs: Sequence[np.dtype]) -> np.dtype:
    """The element type ``expr`` gives for inputs of ``inputs`` types."""
    if isinstance(expr, Input):
        return inputs[expr.index]
    if isinstance(expr, Const):
        return expr.dtype
    types = [result_type(a, inputs) for a in expr.args]
    if expr.op in UNARY:
        kind = UNARY[expr.op][1]
        return _float(types[0]) if kind == "float" else types[0]
    _, kind = BINARY[expr.op]
    t = promote(types[0], types[1])
    if kind == "bool":
        return np.dtype(np.bool_)
    return _float(t) if kind == "float" else t


def _evaluate(expr: Expr, values: Sequence[np.ndarray]) -> np.ndarray:
    if isinstance(expr, Input):
        return values[expr.index]
    if isinstance(expr, Const):
        return np.asarray(expr.value, dtype=expr.dtype)
    args = [_evaluate(a, values) for a in expr.args]
    if expr.op in UNARY:
        unary, kind = UNARY[expr.op]
        x = args[0]
        if kind == "float":
            x = x.astype(_float(x.dtype), copy=False)
        return unary(x)
    binary, kind = BINARY[expr.op]
    t = promote(args[0].dtype, args[1].dtype)
    work = _float(t) if kind == "float" else t
    return binary(args[0].astype(work, copy=False), args[1].astype(work, copy=False))


class ArithmeticOp(Operator):
    """One whole element-wise expression over the operator's inputs (see the module docstring)."""

    name: ClassVar[str] = "arithmetic"
    devices = frozenset({Device.CPU, Device.GPU})
    keeps_channels = True

    def __init__(self, expr: Expr, num_inputs: int, layout: str = "", compiled: Any = None) -> None:
        super().__init__()
        self.expr = expr
        self.num_inputs = num_inputs
        self._layout = layout
        #: The CPU kernel (``expression_kernels.CompiledExpression``), or None: numpy only.
        self.compiled = compiled
        #: shapes of the array constants: they broadcast with the inputs (``[a, 0] * x`` is 2 values per sample)
        self._const_shapes = tuple(_const_shapes(expr))

    def describe_expression(self) -> str:
        return _text(self.expr)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row in range(len(chunk)):
            values = [np.asarray(col[row]) for col in chunk.inputs]
            try:
                result = None
                if self.compiled is not None:
                    result = self.compiled.evaluate(
                        values, lambda shape, dtype, row=row: chunk.output_buffer(row, shape, dtype))
                out.append(result if result is not None else self.evaluate(values))
            except (ValueError, TypeError, SampleError) as err:  # shapes that do not broadcast, bad types
                chunk.fail(row, SampleError(f"arithmetic {_text(self.expr)}: {err}"))
                out.append(None)
        return [out]

    def evaluate(self, values: Sequence[np.ndarray]) -> np.ndarray:
        """The expression on one sample's operands, block by block."""
        dtype = result_type(self.expr, [v.dtype for v in values])
        shape = np.broadcast_shapes(*(v.shape for v in values), *self._const_shapes) if values else ()
        with np.errstate(all="ignore"):
            size = int(np.prod(shape, dtype=np.int64))
            if size <= BLOCK or not values or self._const_shapes:  # array constants do not split in blocks
                return np.asarray(_evaluate(self.expr, values), dtype=dtype).reshape(shape)
            flat = [np.broadcast_to(v, shape).reshape(-1) for v in values]
            out = np.empty(size, dtype=dtype)
            for start in range(0, size, BLOCK):
                part = [f[start:start + BLOCK] for f in flat]
                out[start:start + BLOCK] = _evaluate(self.expr, part)
            return out.reshape(shape)

    def layout(self, index: int) -> str:
        return self._layout


def _const_shapes(expr: Expr) -> list[tuple[int, ...]]:
    """The shapes of the expression's non-scalar constants."""
    if isinstance(expr, Const):
        return [np.shape(expr.value)] if np.ndim(expr.value) else []
    if isinstance(expr, Node):
        return [s for a in expr.args for s in _const_shapes(a)]
    return []


def _text(expr: Expr) -> str:
    if isinstance(expr, Input):
        return f"x{expr.index}"
    if isinstance(expr, Const):
        return repr(expr.value) if np.ndim(expr.value) == 0 else "const"
    return f"{expr.op}({', '.join(_text(a) for a in expr.args)})"
