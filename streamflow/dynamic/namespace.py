"""The dynamic namespaces, made from ``fn`` (and ``streamflow.math``) by one generic function.

Every function of ``fn`` and of its sub-namespaces (``decoders``, ``readers``,
``random``, and any added later) gets a dynamic twin of the same name,
arguments and docstring, made by ``dynamic_function``; ``aio`` holds the
``async`` twins. Readers also get DALI's class-style names
(``readers.File``). Nothing is written per operator: a new ``fn`` function is
in dynamic mode as soon as it is in ``fn.__all__``. ``streamflow/dynamic/*.pyi``
(``python -m streamflow.dynamic.stubs``) shows the same functions to IDEs and
type checkers.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from .invoke import ANY, ARG, DATA, SourceGraph, call, call_async, signature_of
from .reader import Reader
from .tensors import wrap_result

__all__ = [
    "DYNAMIC_KEYWORDS",
    "camel_case",
    "dynamic_function",
    "dynamic_signature",
    "new_namespace",
    "populate",
    "populate_namespace",
    "walk",
]

#: Keywords every dynamic function takes on top of its ``fn`` arguments (when it has none of that name).
DYNAMIC_KEYWORDS = {
    "device": "str | None",
    "rng": "RNG | int | None",
    "batch_size": "int | None",
}


#: DALI's class names that are not the plain capitalisation of the function's name.
DALI_CLASS_NAMES = {"tfrecord": "TFRecord", "mxnet": "MXNet", "coco": "COCO"}


def camel_case(name: str) -> str:
    """DALI's class-style name of a reader: ``file`` -> ``File``, ``numpy`` -> ``Numpy``, ``coco`` -> ``COCO``."""
    if name in DALI_CLASS_NAMES:
        return DALI_CLASS_NAMES[name]
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def dynamic_signature(function: Callable[..., Any], returns: str = "Tensor | Batch") -> inspect.Signature:
    """``function``'s signature as its dynamic twin takes it (annotations as strings)."""
    sig = inspect.signature(inspect.unwrap(function))
    kinds = signature_of(function).kinds
    params = []
    for name, p in sig.parameters.items():
        kind = kinds.get(name)
        annotation: Any = p.annotation
        if kind == DATA:
            annotation = "DataLike"
        elif kind == ANY:
            annotation = "DataLike | Any"
        elif kind == ARG:
            text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
            annotation = text.replace("DataNode", "BatchLike")
        params.append(p.replace(annotation=annotation))
    keyword_at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    extra = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=v)
             for k, v in DYNAMIC_KEYWORDS.items() if k not in sig.parameters]
    params[keyword_at:keyword_at] = extra
    return sig.replace(parameters=params, return_annotation=returns)


def _finish(twin: Callable[..., Any], function: Callable[..., Any], module: str, name: str, returns: str) -> None:
    functools.update_wrapper(twin, function)
    twin.__module__ = module
    twin.__name__ = twin.__qualname__ = name
    twin.__signature__ = dynamic_signature(function, returns)  # type: ignore[attr-defined]


def dynamic_function(function: Callable[..., Any], module: str, name: str, label: str,
                     asynchronous: bool = False) -> Callable[..., Any]:
    """The dynamic twin of ``fn`` function ``function``: runs at once on the data it is given.

    Returns ``Tensor``s (one sample in) or ``Batch``es, or a ``Reader`` for
    functions that make a source. ``asynchronous``: an ``async def`` twin whose
    computing runs on the worker pool while the event loop goes on.
    """

    def result_of(result: Any, kwargs: dict[str, Any]) -> Any:
        if isinstance(result, SourceGraph):
            return Reader(result, label, batch_size=kwargs.get("batch_size"))
        return wrap_result(result)

    if asynchronous:
        async def twin_async(*args: Any, **kwargs: Any) -> Any:
            return result_of(await call_async(function, args, kwargs, label), kwargs)

        _finish(twin_async, function, module, name, "Tensor | Batch | Reader")
        return twin_async

    def twin(*args: Any, **kwargs: Any) -> Any:
        return result_of(call(function, args, kwargs, label), kwargs)

    _finish(twin, function, module, name, "Tensor | Batch | Reader")
    return twin


def walk(namespace: types.ModuleType, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted name, object) of every public function and sub-namespace of ``namespace``, in order."""
    for name in getattr(namespace, "__all__", ()):
        obj = getattr(namespace, name)
        if isinstance(obj, types.ModuleType):
            yield prefix + name, obj
            yield from walk(obj, prefix + name + ".")
        elif callable(obj):
            yield prefix + name, obj


def new_namespace(parent: types.ModuleType, name: str, doc: str) -> types.ModuleType:
    """The sub-namespace ``parent.name`` (a module, importable by its dotted name), made if needed."""
    full = f"{parent.__name__}.{name}"
    module = sys.modules.get(full)
    if module is None:
        module = types.ModuleType(full, doc)
        module.__all__ = []  # type: ignore[attr-defined]
        sys.modules[full] = module
    setattr(parent, name, module)
    if name not in parent.__all__:
        parent.__all__.append(name)
    return module


def populate(target: types.ModuleType, source: types.ModuleType, asynchronous: bool = False,
             label_prefix: str = "") -> None:
    """Give ``target`` a dynamic twin of every function of ``source``, sub-namespaces included."""
    for name in getattr(source, "__all__", ()):
        obj = getattr(source, name)
        if isinstance(obj, types.ModuleType):
            doc = f"Dynamic mode of ``{obj.__name__}``: {(obj.__doc__ or '').strip().splitlines()[0]}"
            sub = new_namespace(target, name, doc)
            populate(sub, obj, asynchronous, f"{label_prefix}{name}.")
            if name == "readers":  # DALI's dynamic readers are classes: readers.File(...)
                for reader in list(sub.__all__):
                    alias = camel_case(reader)
                    if alias != reader and not hasattr(sub, alias):
                        setattr(sub, alias, getattr(sub, reader))
                        sub.__all__.append(alias)
            continue
        if not callable(obj):
            continue
        twin = dynamic_function(obj, target.__name__, name, label_prefix + name, asynchronous)
        setattr(target, name, twin)
        if name not in target.__all__:
            target.__all__.append(name)


def populate_namespace(parent: types.ModuleType, name: str, source: types.ModuleType) -> types.ModuleType:
    """``parent.name``: a new namespace with the dynamic twins of ``source``'s functions."""
    first = (source.__doc__ or "").strip().splitlines()[0] if source.__doc__ else ""
    module = new_namespace(parent, name, f"Dynamic mode of ``{source.__name__}``: {first}")
    populate(module, source, label_prefix=f"{name}.")
    return module
