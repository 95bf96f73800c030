"""``streamflow.math``: DALI's element-wise functions on pipeline data (``nvidia.dali.math``).

Each call extends an element-wise expression (see ``streamflow/expressions.py``
for the types): ``math.sqrt(x) * 2 + 1`` is one operator, one pass per sample.
"""

from __future__ import annotations

from typing import Any

from .graph import DataNode, expression

__all__ = [
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "clamp", "cos", "cosh",
    "exp", "fabs", "floor", "fpow", "log", "log2", "log10", "max", "min", "pow", "rsqrt", "sin", "sinh", "sqrt",
    "tan", "tanh",
]


def abs(x: Any) -> DataNode:
    """``|x|``, same type."""
    return expression("abs", x)


def fabs(x: Any) -> DataNode:
    """``|x|`` as a float."""
    return expression("fabs", x)


def floor(x: Any) -> DataNode:
    """Rounded down, as a float."""
    return expression("floor", x)


def ceil(x: Any) -> DataNode:
    """Rounded up, as a float."""
    return expression("ceil", x)


def pow(base: Any, exponent: Any) -> DataNode:
    """``base ** exponent`` in the promoted type (integers stay integers)."""
    return expression("pow", base, exponent)


def fpow(base: Any, exponent: Any) -> DataNode:
    """``base ** exponent`` as a float."""
    return expression("fpow", base, exponent)


def min(a: Any, b: Any) -> DataNode:
    """Element-wise minimum, promoted type."""
    return expression("min", a, b)


def max(a: Any, b: Any) -> DataNode:
    """Element-wise maximum, promoted type."""
    return expression("max", a, b)


def clamp(x: Any, lo: Any, hi: Any) -> DataNode:
    """``min(max(x, lo), hi)``."""
    return expression("min", expression("max", x, lo), hi)


def atan2(y: Any, x: Any) -> DataNode:
    """The angle of ``(x, y)`` [rad], as a float."""
    return expression("atan2", y, x)


def sqrt(x: Any) -> DataNode:
    """Square root, as a float."""
    return expression("sqrt", x)


def rsqrt(x: Any) -> DataNode:
    """``1 / sqrt(x)``, as a float."""
    return expression("rsqrt", x)


def cbrt(x: Any) -> DataNode:
    """Cube root, as a float."""
    return expression("cbrt", x)


def exp(x: Any) -> DataNode:
    """``e ** x``, as a float."""
    return expression("exp", x)


def log(x: Any) -> DataNode:
    """Natural logarithm, as a float."""
    return expression("log", x)


def log2(x: Any) -> DataNode:
    """Base-2 logarithm, as a float."""
    return expression("log2", x)


def log10(x: Any) -> DataNode:
    """Base-10 logarithm, as a float."""
    return expression("log10", x)


def sin(x: Any) -> DataNode:
    """Sine of radians, as a float."""
    return expression("sin", x)


def cos(x: Any) -> DataNode:
    """Cosine of radians, as a float."""
    return expression("cos", x)


def tan(x: Any) -> DataNode:
    """Tangent of radians, as a float."""
    return expression("tan", x)


def asin(x: Any) -> DataNode:
    """Arc sine [rad], as a float."""
    return expression("asin", x)


def acos(x: Any) -> DataNode:
    """Arc cosine [rad], as a float."""
    return expression("acos", x)


def atan(x: Any) -> DataNode:
    """Arc tangent [rad], as a float."""
    return expression("atan", x)


def sinh(x: Any) -> DataNode:
    """Hyperbolic sine, as a float."""
    return expression("sinh", x)


def cosh(x: Any) -> DataNode:
    """Hyperbolic cosine, as a float."""
    return expression("cosh", x)


def tanh(x: Any) -> DataNode:
    """Hyperbolic tangent, as a float."""
    return expression("tanh", x)


def asinh(x: Any) -> DataNode:
    """Inverse hyperbolic sine, as a float."""
    return expression("asinh", x)


def acosh(x: Any) -> DataNode:
    """Inverse hyperbolic cosine, as a float."""
    return expression("acosh", x)


def atanh(x: Any) -> DataNode:
    """Inverse hyperbolic tangent, as a float."""
    return expression("atanh", x)
