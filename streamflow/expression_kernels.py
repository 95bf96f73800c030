"""One CUDA kernel per element-wise expression, generated from its tree (``expressions.py``).

``kernel_source(expr, input_dtypes)`` writes a kernel that evaluates the whole
expression per element with the same types and semantics as the numpy
evaluation (DALI's promotion; C division; wrapping integers; NaN-propagating
``min``/``max``), so an expression is one pass on the GPU. The source needs no
headers: NVRTC compiles it on a GPU, and the host build
(``_native/host_build.py``) compiles the same text in CI to check it.

Parameters per sample (``2 + 2 * inputs`` int64 slots): element count, output
pointer, then per input its pointer and its stride (1: one value per element,
0: a scalar broadcast to every element).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._native.host_build import HostBuildError, HostModule
from .expressions import BINARY, Const, Expr, Input, promote, result_type

__all__ = ["C_TYPES", "PRELUDE", "CompiledExpression", "kernel_source", "slots"]

#: numpy dtype -> C type of the kernels.
C_TYPES = {
    np.dtype(np.bool_): "unsigned char",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int8): "signed char",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.int16): "short",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.int32): "int",
    np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.int64): "long long",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}

#: Helpers every generated kernel uses (C semantics made safe, numpy's NaN rules).
PRELUDE = r"""
typedef long long i64;
template <typename T> __device__ __forceinline__ T sf_idiv(T a, T b) {
    if (b == 0) return (T)0;
    if ((T)(b + 1) == (T)0 && (T)-1 < (T)0) return (T)((unsigned long long)0 - (unsigned long long)a);
    return (T)(a / b);
}
template <typename T> __device__ __forceinline__ T sf_imod(T a, T b) {
    if (b == 0 || ((T)(b + 1) == (T)0 && (T)-1 < (T)0)) return (T)0;
    return (T)(a % b);
}
template <typename T> __device__ __forceinline__ T sf_ipow(T a, T b) {
    unsigned long long base = (unsigned long long)a, acc = 1;
    if (!(b > (T)0)) return (T)1;
    unsigned long long e = (unsigned long long)b;
    while (e) { if (e & 1ull) acc *= base; base *= base; e >>= 1; }
    return (T)acc;
}
template <typename T> __device__ __forceinline__ T sf_iabs(T a) { return a < (T)0 ? (T)((T)0 - a) : a; }
template <typename T> __device__ __forceinline__ T sf_min(T a, T b) {
    if (a != a) return a;
    if (b != b) return b;
    return a < b ? a : b;
}
template <typename T> __device__ __forceinline__ T sf_max(T a, T b) {
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
}
"""

_ARITH = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_FLOAT_FN = {
    "fabs": "fabs", "floor": "floor", "ceil": "ceil", "sqrt": "sqrt", "cbrt": "cbrt", "exp": "exp", "log": "log",
    "log2": "log2", "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
    "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh",
    "atanh": "atanh",
}


def slots(num_inputs: int) -> int:
    """int64 parameter slots per sample of a kernel with ``num_inputs`` inputs."""
    return 2 + 2 * num_inputs


def _const(c: Const) -> str:
    t = C_TYPES[c.dtype]
    if c.dtype == np.float32:
        bits = int(np.asarray(c.value, np.float32).view(np.int32))
        return f"__int_as_float({bits})"
    if c.dtype == np.float64:
        bits = int(np.asarray(c.value, np.float64).view(np.int64))
        return f"__longlong_as_double({bits}ll)"
    return f"(({t}){int(c.value)}ll)"


def _float_name(fn: str, dtype: np.dtype) -> str:
    return fn + ("f" if dtype == np.float32 else "")


def _code(expr: Expr, dtypes: Sequence[np.dtype]) -> str:
    """C code of ``expr`` whose value has the type ``result_type(expr, dtypes)``."""
    if isinstance(expr, Input):
        return f"(({C_TYPES[dtypes[expr.index]]})x{expr.index}[i * s{expr.index}])"
    if isinstance(expr, Const):
        if np.ndim(expr.value) != 0:
            raise NotImplementedError("array constants are evaluated with numpy")
        return _const(expr)
    out = result_type(expr, dtypes)
    t_out = C_TYPES[out]
    if len(expr.args) == 1:
        a = _code(expr.args[0], dtypes)
        if expr.op == "neg":
            return f"(({t_out})(0 - {a}))" if out.kind in "iub" else f"(-{a})"
        if expr.op == "pos":
            return a
        if expr.op == "abs":
            return f"sf_iabs<{t_out}>({a})" if out.kind in "iub" else f"{_float_name('fabs', out)}({a})"
        arg = f"(({t_out}){a})"
        if expr.op == "rsqrt":
            return f"(({t_out})1 / {_float_name('sqrt', out)}({arg}))"
        return f"{_float_name(_FLOAT_FN[expr.op], out)}({arg})"
    ta, tb = (result_type(a, dtypes) for a in expr.args)
    _, kind = BINARY[expr.op]
    work = out if kind != "bool" else promote(ta, tb)
    t_work = C_TYPES[work]
    a = f"(({t_work}){_code(expr.args[0], dtypes)})"
    b = f"(({t_work}){_code(expr.args[1], dtypes)})"
    op = expr.op
    if op in _ARITH:
        return f"(({t_out})({a} {_ARITH[op]} {b}))"
    if op in _COMPARE:
        return f"((unsigned char)({a} {_COMPARE[op]} {b}))"
    if op == "truediv":
        return f"({a} / {b})"
    if op == "floordiv":
        return f"sf_idiv<{t_work}>({a}, {b})" if work.kind in "iu" else f"({a} / {b})"  # DALI: float // is /
    if op == "mod":
        return f"sf_imod<{t_work}>({a}, {b})" if work.kind in "iu" else f"{_float_name('fmod', work)}({a}, {b})"
    if op == "pow":
        return f"sf_ipow<{t_work}>({a}, {b})" if work.kind in "iu" else f"{_float_name('pow', work)}({a}, {b})"
    if op == "fpow":
        return f"{_float_name('pow', work)}({a}, {b})"
    if op == "atan2":
        return f"{_float_name('atan2', work)}({a}, {b})"
    if op in ("min", "max"):
        return f"sf_{op}<{t_work}>({a}, {b})"
    raise NotImplementedError(op)


def kernel_source(expr: Expr, dtypes: Sequence[np.dtype]) -> tuple[str, str]:
    """(kernel name, CUDA source) evaluating ``expr`` for inputs of ``dtypes``.

    Raises:
        NotImplementedError: a type or constant the generator does not handle
            (float16, array constants): evaluate with numpy instead.
    """
    dtypes = [np.dtype(d) for d in dtypes]
    if any(d not in C_TYPES for d in dtypes):
        raise NotImplementedError(f"types {dtypes} are evaluated with numpy")
    out = result_type(expr, dtypes)
    if out not in C_TYPES:
        raise NotImplementedError(f"result type {out} is evaluated with numpy")
    body = _code(expr, dtypes)
    n = len(dtypes)
    params = "\n".join(
        f"    const {C_TYPES[d]}* x{k} = (const {C_TYPES[d]}*)P[{2 + 2 * k}]; const i64 s{k} = P[{3 + 2 * k}];"
        for k, d in enumerate(dtypes)
    )
    signature = f"{dtypes}|{body}"
    name = "sf_expr_" + hashlib.sha256(signature.encode()).hexdigest()[:16]
    source = f"""{PRELUDE}
extern "C" __global__ void {name}(const i64* params) {{
    const i64* P = params + (i64)blockIdx.y * {slots(n)};
    const i64 n = P[0];
    {C_TYPES[out]}* out = ({C_TYPES[out]}*)P[1];
{params}
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {{
        out[i] = ({C_TYPES[out]})({body});
    }}
}}
"""
    return name, source


#: Operations whose C library result may differ from numpy's in the last bit (both are within an
#: ulp or two): expressions using them are evaluated with numpy on the CPU, so CPU results stay
#: numpy's exactly. Everything else (arithmetic, comparisons, sqrt, floor, fmod...) is exact in both.
_INEXACT = frozenset({"exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
                      "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "cbrt", "pow", "fpow"})


def _exact_in_c(expr: Expr, dtypes: Sequence[np.dtype]) -> bool:
    if isinstance(expr, (Input, Const)):
        return True
    if expr.op in _INEXACT:  # integer pow is exact (sf_ipow), the float one is libm's
        if expr.op != "pow" or result_type(expr, dtypes).kind not in "iub":
            return False
    return all(_exact_in_c(a, dtypes) for a in expr.args)


class CompiledExpression:
    """The CPU path of an expression: its generated kernel built as host C++, one pass per sample.

    The same source as the GPU kernel, compiled once per input types with the
    host build (``_native/host_build.py``, cached on disk) and called through
    ctypes, which releases the GIL: the whole chain of operations runs in one
    loop over the elements, with no temporaries. It gives exactly what the
    numpy evaluation gives (a test holds the two together). ``evaluate``
    returns ``None`` where numpy is used instead: samples under
    ``MIN_ELEMENTS`` (compiling would cost more than it saves), operands that
    broadcast other than as scalars, types the generator does not handle,
    transcendental functions (libm and numpy may differ in the last bit), no
    C++ compiler on the machine, or ``STREAMFLOW_COMPILED_EXPRESSIONS=0``.
    """

    MIN_ELEMENTS = 4096
    _unavailable: str | None = None  # why the host build cannot be used here (process-wide)
    _modules: dict[str, Any] = {}  # source -> HostModule, shared by every expression
    _lock = threading.Lock()

    def __init__(self, expr: Expr) -> None:
        self.expr = expr
        self._kernels: dict[tuple[np.dtype, ...], tuple[str, Any] | None] = {}

    @classmethod
    def enabled(cls) -> bool:
        return cls._unavailable is None and os.environ.get("STREAMFLOW_COMPILED_EXPRESSIONS", "1") != "0"

    def evaluate(self, operands: Sequence[np.ndarray],
                 buffer: Callable[[tuple[int, ...], np.dtype], np.ndarray | None] | None = None) -> np.ndarray | None:
        """The expression on one sample's operands, or None: use numpy.

        ``buffer(shape, dtype)`` may give the array to write into (a row of the batch array).
        """
        if not self.enabled():
            return None
        try:
            shape = np.broadcast_shapes(*(o.shape for o in operands))
        except ValueError:
            return None
        size = int(np.prod(shape, dtype=np.int64))
        if size < self.MIN_ELEMENTS or any(o.size not in (1, size) for o in operands):
            return None
        dtypes = tuple(np.dtype(o.dtype) for o in operands)
        kernel = self._kernel(dtypes)
        if kernel is None:
            return None
        name, module = kernel
        result_dtype = result_type(self.expr, dtypes)
        out = buffer(tuple(shape), result_dtype) if buffer is not None else None
        if out is None or out.shape != shape or out.dtype != result_dtype or not out.flags.c_contiguous:
            out = np.empty(shape, dtype=result_dtype)
        flat = [np.ascontiguousarray(o) for o in operands]
        params = np.zeros(slots(len(flat)), dtype=np.int64)
        params[0], params[1] = size, out.ctypes.data
        for k, o in enumerate(flat):
            params[2 + 2 * k], params[3 + 2 * k] = o.ctypes.data, int(o.size != 1)
        module.launch(name, (1, 1, 1), (1, 1, 1), params.ctypes.data)  # one thread: a plain loop
        return out

    def _kernel(self, dtypes: tuple[np.dtype, ...]) -> tuple[str, Any] | None:
        if dtypes in self._kernels:
            return self._kernels[dtypes]
        kernel: tuple[str, Any] | None = None
        try:
            if not _exact_in_c(self.expr, dtypes):
                raise NotImplementedError("libm's transcendentals: numpy's results are kept")
            name, source = kernel_source(self.expr, dtypes)
            with self._lock:
                module = self._modules.get(source)
                if module is None:
                    module = self._modules[source] = HostModule(source, [name])
            kernel = (name, module)
        except NotImplementedError:
            kernel = None
        except HostBuildError as err:  # no compiler here: numpy for every expression from now on
            type(self)._unavailable = str(err)
            kernel = None
        self._kernels[dtypes] = kernel
        return kernel
