"""Rewrite a pipeline definition so that ``if`` can test per-sample pipeline data.

``@pipeline_def(enable_conditionals=True)`` passes the definition through
``convert``. The function's source is parsed and rewritten, then compiled
with the original file name and line numbers (so tracebacks point at the
user's lines) and run with the original globals and closure:

* ``if c: A else: B`` becomes two nested functions (the branches) and a call
  of ``ops.conditional.if_stmt`` when ``c`` is pipeline data, or a plain call
  of the chosen branch when it is a Python value (the same behaviour as the
  original ``if``). The variables the branches assign are passed in and out
  through ``nonlocal``.
* ``return`` inside an ``if`` is lifted first: the statements after the
  ``if`` move into the branch that does not return, and the returned value
  goes through a variable, so both branches can be traced.
* ``a if c else b``, ``and``, ``or`` and ``not`` become calls that act per
  sample on pipeline data and exactly like Python otherwise.
* Every call ``f(...)`` goes through ``converted(f)``: functions of the user's
  own code (not the standard library, installed packages or streamflow) are
  converted the same way on first use, so an ``if`` in a helper function
  works as it does in DALI.

Constructs that cannot be traced per sample (``while`` on pipeline data,
``break``/``continue``/``yield`` or a ``return`` inside a loop in a branch
whose condition is pipeline data) raise ``PipelineDefinitionError`` naming the
line; the same code with Python conditions still runs.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import os
import sys
import sysconfig
import textwrap
import types
from collections.abc import Callable, Iterable
from typing import Any

from .errors import PipelineDefinitionError
from .graph import conditionals_enabled
from .ops import conditional

__all__ = ["convert", "converted", "do_not_convert", "trace"]

_SF = "__sf_ag"  # the name of the runtime helpers inside converted code
_RET = "__sf_retval"


# --------------------------------------------------------------------------- runtime helpers


class _Runtime:
    """What converted code calls (bound to the name ``__sf_ag`` in its closure)."""

    UNBOUND = conditional.UNBOUND
    not_ = staticmethod(conditional.not_)
    and_ = staticmethod(conditional.and_)
    or_ = staticmethod(conditional.or_)
    if_exp = staticmethod(conditional.if_exp)

    @staticmethod
    def if_stmt(condition: Any, if_body: Callable[[], None], else_body: Callable[[], None],
                get_state: Callable[[], tuple[Any, ...]], set_state: Callable[[tuple[Any, ...]], None],
                names: tuple[str, ...], where: str) -> None:
        if conditional.is_data(condition):
            conditional.if_stmt(condition, if_body, else_body, get_state, set_state, names, where)
        elif condition:
            if_body()
        else:
            else_body()

    @staticmethod
    def python_condition(condition: Any, construct: str, where: str) -> Any:
        """The condition of an ``if`` that could not be converted: must be a Python value."""
        if conditional.is_data(condition):
            raise PipelineDefinitionError(
                f"the `if` at {where} tests pipeline data, but its branch uses {construct}, which "
                "cannot be traced per sample; restructure it so that the branch only assigns values"
            )
        return condition

    @staticmethod
    def call(function: Any) -> Any:
        return converted(function)


_RUNTIME = _Runtime()


# --------------------------------------------------------------------------- which functions


@functools.cache
def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.add(os.path.dirname(os.path.abspath(__file__)))  # streamflow itself
    return tuple(os.path.abspath(r) + os.sep for r in roots if r)


def _is_user_code(function: types.FunctionType) -> bool:
    module = getattr(function, "__module__", "") or ""
    if module.split(".")[0] in sys.stdlib_module_names or module.startswith("streamflow"):
        return False
    filename = os.path.abspath(function.__code__.co_filename)
    if filename.startswith("<") or "site-packages" in filename or "dist-packages" in filename:
        return False
    return not filename.startswith(_library_roots())


_CACHE: dict[types.CodeType, Callable[..., Any] | None] = {}


_NOT_CONVERTED = "__streamflow_do_not_convert__"


def do_not_convert(function: Callable[..., Any]) -> Callable[..., Any]:
    """Leave ``function`` as written when conditionals rewrite the code that calls it (DALI's
    ``nvidia.dali.pipeline.do_not_convert``), e.g. a factory of ``external_source`` sources."""
    setattr(function, _NOT_CONVERTED, True)
    return function


def converted(function: Any) -> Any:
    """``function`` rewritten for conditionals if it is the user's own code, else unchanged."""
    if getattr(function, _NOT_CONVERTED, False):
        return function
    if isinstance(function, types.MethodType):
        inner = converted(function.__func__)
        return function if inner is function.__func__ else types.MethodType(inner, function.__self__)
    if not isinstance(function, types.FunctionType) or not _is_user_code(function):
        return function
    code = function.__code__
    if code.co_name == "<lambda>" or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                                                      | inspect.CO_ASYNC_GENERATOR):
        return function
    if "__class__" in code.co_freevars:  # zero-argument super() needs the class cell
        return function
    if code not in _CACHE:
        try:
            _CACHE[code] = _make_factory(function)
        except (OSError, TypeError, SyntaxError):  # no source (REPL, compiled): leave it alone
            _CACHE[code] = None
    factory = _CACHE[code]
    if factory is None:
        return function
    return _instantiate(factory, function)


def convert(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` rewritten for conditionals (the pipeline definition itself).

    Raises:
        PipelineDefinitionError: the source cannot be read (needed to convert).
    """
    target = function.__func__ if isinstance(function, types.MethodType) else function
    if not isinstance(target, types.FunctionType):
        raise PipelineDefinitionError(
            f"enable_conditionals=True needs a Python function as the definition, got {type(function).__name__}"
        )
    code = target.__code__
    if code not in _CACHE or _CACHE[code] is None:
        try:
            _CACHE[code] = _make_factory(target)
        except (OSError, TypeError, SyntaxError) as err:
            raise PipelineDefinitionError(
                f"enable_conditionals=True: the source of {target.__qualname__} cannot be read ({err}); "
                "define the pipeline in a file"
            ) from None
    factory = _CACHE[code]
    assert factory is not None
    result = _instantiate(factory, target)
    if isinstance(function, types.MethodType):
        return types.MethodType(result, function.__self__)
    return result


def trace(definition: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the converted ``definition`` with conditionals enabled (for error messages)."""
    with conditionals_enabled():
        return convert(definition)(*args, **kwargs)


def _instantiate(factory: Callable[..., Any], original: types.FunctionType) -> Callable[..., Any]:
    cells = original.__closure__ or ()
    values = []
    for name, cell in zip(original.__code__.co_freevars, cells):
        try:
            values.append(cell.cell_contents)
        except ValueError:  # an empty cell: a name assigned later in the enclosing function
            values.append(conditional.Undefined(f"{name!r} is used before it is assigned"))
    new = factory(_RUNTIME, *values)
    new.__defaults__ = original.__defaults__
    new.__kwdefaults__ = original.__kwdefaults__
    new.__dict__.update(original.__dict__)
    functools.update_wrapper(new, original, updated=())
    return new


def _make_factory(function: types.FunctionType) -> Callable[..., Any]:
    """Parse, rewrite and compile ``function`` inside a factory taking its free variables."""
    lines, first_line = inspect.getsourcelines(function)
    source = textwrap.dedent("".join(lines))
    module = ast.parse(source)
    definition = module.body[0]
    if not isinstance(definition, ast.FunctionDef):
        raise TypeError("not a plain function definition")
    definition.decorator_list = []
    filename = function.__code__.co_filename
    ast.increment_lineno(module, first_line - 1)
    definition = _Converter(filename).convert_function(definition)
    freevars = list(function.__code__.co_freevars)
    factory = ast.FunctionDef(
        name="__sf_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in [_SF, *freevars]],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[definition, ast.Return(value=ast.Name(id=definition.name, ctx=ast.Load()))],
        decorator_list=[],
    )
    wrapper = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(wrapper)
    namespace: dict[str, Any] = {}
    exec(compile(wrapper, filename, "exec"), function.__globals__, namespace)
    made: Callable[..., Any] = namespace["__sf_factory"]
    return made


# --------------------------------------------------------------------------- the rewrite


def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _helper(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name(_SF), attr=attr, ctx=ast.Load())


def _walk_scope(nodes: Iterable[ast.AST]) -> Iterable[ast.AST]:
    """Every node under ``nodes`` without entering nested functions, classes or lambdas."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                yield child  # its name is bound here, its body is another scope
                continue
            if isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue  # a scope of its own
            stack.append(child)


def _assigned_names(body: list[ast.stmt]) -> list[str]:
    """Names bound by ``body`` in the enclosing function's scope, in first-seen order."""
    names: dict[str, None] = {}
    for node in _walk_scope(body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names[node.id] = None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = None
    return [n for n in names if n == _RET or not n.startswith("__sf")]


def _contains(body: list[ast.stmt], kinds: tuple[type, ...], loops_break: bool = False) -> ast.AST | None:
    """The first node of ``kinds`` in ``body``'s scope (break/continue: only those not in an inner loop)."""
    stack: list[tuple[ast.AST, bool]] = [(s, False) for s in body]
    while stack:
        node, in_loop = stack.pop()
        if isinstance(node, kinds) and not (loops_break and in_loop):
            return node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            inner = in_loop or isinstance(node, (ast.For, ast.While, ast.AsyncFor))
            stack.append((child, inner))
    return None


def _always_returns(body: list[ast.stmt]) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def _has_return_in_if(body: list[ast.stmt]) -> bool:
    return any(isinstance(s, ast.If) and _contains([s], (ast.Return,)) is not None for s in body)


def _lift_returns(body: list[ast.stmt]) -> list[ast.stmt]:
    """Move what follows an ``if`` with a ``return`` into the branch that falls through."""
    out: list[ast.stmt] = []
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.If) and _contains([stmt], (ast.Return,)) is not None:
            if any(_contains([s], (ast.Return,)) for s in _loops_and_blocks(stmt)):
                out.append(stmt)  # a return inside a loop/with/try: left alone (python_condition)
                continue
            rest = body[i + 1:]
            then = _lift_returns(stmt.body)
            orelse = _lift_returns(stmt.orelse)
            if not _always_returns(then):
                then = _lift_returns(then + _copy(rest))
            if not _always_returns(orelse):
                orelse = _lift_returns(orelse + _copy(rest))
            out.append(ast.If(test=stmt.test, body=then or [ast.Pass()], orelse=orelse))
            ast.copy_location(out[-1], stmt)
            return out
        out.append(stmt)
    return out


def _loops_and_blocks(stmt: ast.If) -> list[ast.stmt]:
    """Loops, with- and try-blocks inside the branches of ``stmt`` (returns there cannot be lifted)."""
    found: list[ast.stmt] = []
    for node in _walk_scope([*stmt.body, *stmt.orelse]):
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try)):
            found.append(node)
    return found


def _copy(stmts: list[ast.stmt]) -> list[ast.stmt]:
    return [copy.deepcopy(s) for s in stmts]


def _returns_to_assignments(body: list[ast.stmt]) -> None:
    """In the tail ``if`` chain of a lifted body, each branch's ``return x`` -> ``__sf_retval = x``."""
    last = body[-1] if body else None
    if not isinstance(last, ast.If):
        return
    for branch in (last.body, last.orelse):
        if branch and isinstance(branch[-1], ast.Return):
            ret = branch[-1]
            branch[-1] = ast.copy_location(
                ast.Assign(targets=[_name(_RET, store=True)], value=ret.value or ast.Constant(None)), ret)
        else:
            _returns_to_assignments(branch)


class _Converter(ast.NodeTransformer):
    """Rewrites one function (and the functions nested in it)."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.counter = 0

    def where(self, node: ast.AST) -> str:
        return f"{self.filename}:{getattr(node, 'lineno', '?')}"

    def convert_function(self, node: ast.FunctionDef) -> ast.FunctionDef:
        return self.visit_FunctionDef(node)  # type: ignore[return-value]

    # -- functions: lift returns out of ifs first
    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if _has_return_in_if(node.body):
            node.body = _lift_returns(node.body)
            tail = node.body[-1] if node.body else None
            if isinstance(tail, ast.If) and _contains([tail], (ast.Return,)) is not None and not any(
                _contains([s], (ast.Return,)) for s in _loops_and_blocks(tail)
            ):
                _returns_to_assignments(node.body)
                init = ast.Assign(targets=[_name(_RET, store=True)], value=ast.Constant(None))
                node.body = [ast.copy_location(init, node.body[0]), *node.body,
                             ast.copy_location(ast.Return(value=_name(_RET)), tail)]
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node  # a class body is not a function scope: nonlocal cannot reach it

    # -- if statements
    def visit_If(self, node: ast.If) -> Any:
        where = self.where(node)
        blocker = self._blocker([*node.body, *node.orelse])
        if blocker is not None:
            self.generic_visit(node)
            node.test = ast.Call(func=_helper("python_condition"),
                                 args=[node.test, ast.Constant(blocker), ast.Constant(where)], keywords=[])
            return node
        names = _assigned_names([*node.body, *node.orelse])
        self.generic_visit(node)  # converts nested ifs and expressions first
        k = self.counter = self.counter + 1
        cond, true_fn, false_fn, get_fn, set_fn = (f"__sf_cond_{k}", f"__sf_if_true_{k}", f"__sf_if_false_{k}",
                                                   f"__sf_get_{k}", f"__sf_set_{k}")
        out: list[ast.stmt] = [ast.Assign(targets=[_name(cond, store=True)], value=node.test)]
        for n in names:  # bind every branch-assigned name here, so nonlocal finds it
            out.append(ast.Try(
                body=[ast.Expr(value=_name(n))],
                handlers=[ast.ExceptHandler(type=_name("NameError"), name=None,
                                            body=[ast.Assign(targets=[_name(n, store=True)], value=_helper("UNBOUND"))])],
                orelse=[], finalbody=[],
            ))
        nonlocal_ = [ast.Nonlocal(names=list(names))] if names else []
        out.append(_def(true_fn, [], [*nonlocal_, *(node.body or [ast.Pass()])]))
        out.append(_def(false_fn, [], [*nonlocal_, *(node.orelse or [ast.Pass()])]))
        out.append(_def(get_fn, [], [ast.Return(value=ast.Tuple(elts=[_name(n) for n in names], ctx=ast.Load()))]))
        setter_body: list[ast.stmt] = [*nonlocal_]
        if names:
            setter_body.append(ast.Assign(
                targets=[ast.Tuple(elts=[_name(n, store=True) for n in names], ctx=ast.Store())],
                value=_name("__sf_values")))
        else:
            setter_body.append(ast.Pass())
        out.append(_def(set_fn, ["__sf_values"], setter_body))
        out.append(ast.Expr(value=ast.Call(
            func=_helper("if_stmt"),
            args=[_name(cond), _name(true_fn), _name(false_fn), _name(get_fn), _name(set_fn),
                  ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load()), ast.Constant(where)],
            keywords=[])))
        return [ast.copy_location(s, node) for s in out]

    @staticmethod
    def _blocker(body: list[ast.stmt]) -> str | None:
        """What stops ``body`` from becoming a nested function, if anything."""
        checks: list[tuple[tuple[type, ...], str, bool]] = [
            ((ast.Break,), "`break`", True), ((ast.Continue,), "`continue`", True),
            ((ast.Yield, ast.YieldFrom), "`yield`", False), ((ast.Return,), "`return` inside a loop, `with` or `try`", False),
            ((ast.Global,), "`global`", False), ((ast.Nonlocal,), "`nonlocal`", False),
        ]
        for kinds, label, loops in checks:
            if _contains(body, kinds, loops_break=loops) is not None:
                return label
        return None

    # -- expressions
    def visit_IfExp(self, node: ast.IfExp) -> Any:
        self.generic_visit(node)
        return ast.copy_location(ast.Call(
            func=_helper("if_exp"),
            args=[node.test, _lambda(node.body), _lambda(node.orelse), ast.Constant(self.where(node))],
            keywords=[]), node)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        self.generic_visit(node)
        helper = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(
            ast.Call(func=_helper(helper), args=[_lambda(v) for v in node.values], keywords=[]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(ast.Call(func=_helper("not_"), args=[node.operand], keywords=[]), node)
        return node

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        node.func = ast.copy_location(ast.Call(func=_helper("call"), args=[node.func], keywords=[]), node.func)
        return node


def _def(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    return ast.FunctionDef(
        name=name,
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], kwonlyargs=[],
                           kw_defaults=[], defaults=[]),
        body=body, decorator_list=[],
    )


def _lambda(expr: ast.expr) -> ast.Lambda:
    return ast.Lambda(
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=expr)
