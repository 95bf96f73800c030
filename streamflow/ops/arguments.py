"""What every ``fn`` function does with its keyword arguments, in one place (``@fn_function``).

* **Types are checked when the pipeline is defined.** Each constant argument
  is checked against the function's annotations (``Number``, sequences of
  numbers, ``str``, ``bool``, enums, ``DataNode`` for per-sample arguments), so
  ``fn.resize(resize_x="abc")`` fails at the call, naming the operator and the
  argument, instead of failing later on every sample as if the files were bad.
* **DALI's tuning arguments are accepted.** Arguments DALI offers for its own
  memory management and scheduling (``device_memory_padding``,
  ``bytes_per_sample_hint``, ``read_ahead``, ...) are accepted and ignored;
  ``TUNING`` says why for each. A pipeline ported from DALI runs unchanged.
* **A wrong name is a ``TypeError``** naming the operator and the argument,
  with the closest valid names.
* **Input sets.** As in DALI, an input given as a list of ``DataNode``s runs
  the operator once per element (``fn.resize([a, b], ...)`` is
  ``[fn.resize(a, ...), fn.resize(b, ...)]``), with the same arguments.
"""

from __future__ import annotations

import difflib
import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode

__all__ = [
    "COMMON", "DECODER", "PIPELINE", "READER", "RESAMPLING", "TUNING", "check_pipeline_options", "fn_function",
    "shape_argument",
    "check_axis_names", "ints_argument", "layout_axes", "resolve_axes", "static_layout_axes",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Every operator: DALI scheduling hints.
COMMON = {
    "bytes_per_sample_hint": "ignored: outputs are allocated at their exact size",
    "preserve": "ignored: an operator whose output is not used is never run",
}
#: Image decoders: nvJPEG / hardware-decoder memory tuning of DALI's decoder.
DECODER = {
    "device_memory_padding": "ignored: nvImageCodec and cupy's pool size device buffers",
    "host_memory_padding": "ignored: nvImageCodec sizes its host buffers",
    "device_memory_padding_jpeg2k": "ignored: nvImageCodec sizes device buffers",
    "host_memory_padding_jpeg2k": "ignored: nvImageCodec sizes host buffers",
    "preallocate_width_hint": "ignored: no preallocation",
    "preallocate_height_hint": "ignored: no preallocation",
    "hw_decoder_load": "ignored: nvImageCodec sends every baseline JPEG to the hardware decoder when present",
    "affine": "ignored: decoding threads are not pinned to cores",
    "use_fast_idct": "ignored: nvImageCodec chooses the IDCT",
    "jpeg_fancy_upsampling": "ignored: nvImageCodec's chroma upsampling is used",
    "memory_stats": "ignored: see pipe.stats()",
    "split_stages": "ignored: the mixed stage always splits host and device work",
    "use_chunk_allocator": "ignored: cupy's pool allocates",
    "cache_size": "ignored: decoded images are not cached",
    "cache_type": "ignored: decoded images are not cached",
    "cache_threshold": "ignored: decoded images are not cached",
    "cache_debug": "ignored: decoded images are not cached",
    "cache_batch_copy": "ignored: decoded images are not cached",
}
#: Readers: DALI's I/O tuning.
READER = {
    "read_ahead": "ignored: the read stage always reads ahead (prefetch_queue_depth batches)",
    "dont_use_mmap": "ignored: files are read with pread (regions of .npy files use a map only when cached)",
    "lazy_init": "ignored: files are listed when the reader is created, opened when read",
    "prefetch_queue_depth": "ignored: the pipeline's prefetch_queue_depth bounds every queue",
    "skip_cached_images": "ignored: decoded images are not cached",
    "tensor_init_bytes": "ignored: outputs are allocated at their exact size",
    "use_o_direct": "ignored: reads go through the page cache",
}
#: Resampling operators (``resize``, ``resize_crop_mirror``, ``random_resized_crop``): DALI's GPU batching.
RESAMPLING = {
    "minibatch_size": "ignored: every sample is resampled in one call (CPU) or one launch per pass (GPU)",
    "temp_buffer_hint": "ignored: intermediate buffers are allocated at their exact size",
}
#: ``Pipeline`` / ``pipeline_def``: DALI's executor and memory settings.
PIPELINE = {
    "exec_async": "ignored: stages always run asynchronously (asyncio tasks)",
    "exec_pipelined": "ignored: stages always overlap (bounded channels)",
    "exec_dynamic": "ignored: one executor",
    "experimental_exec_dynamic": "ignored: one executor",
    "exec_separated": "ignored: one prefetch_queue_depth for every channel",
    "set_affinity": "ignored: threads are not pinned to cores",
    "max_streams": "ignored: one CUDA stream per GPU stage",
    "default_cuda_stream_priority": "ignored: stage streams have the default priority",
    "enable_memory_stats": "ignored: see pipe.stats()",
    "bytes_per_sample": "ignored: outputs are allocated at their exact size",
    "py_num_workers": "ignored: Python sources run on the pipeline's I/O threads",
    "py_start_method": "ignored: no worker processes",
    "py_callback_pickler": "ignored: no worker processes",
    "output_dtype": "ignored: outputs have the dtype their operator gives",
    "output_ndim": "ignored: outputs have the shape their operator gives",
    "enable_checkpointing": "always on: pipe.checkpoint() works on every pipeline",
}
#: Every accepted tuning argument and why it is ignored (for the docs).
TUNING = {**COMMON, **DECODER, **READER, **RESAMPLING, **PIPELINE}


def fn_function(*families: dict[str, str], label: str | None = None) -> Callable[[F], F]:
    """Decorate an ``fn`` function: check argument types, accept DALI's tuning arguments of ``families``.

    ``COMMON`` is always included. ``label`` names the function in errors
    (default: from its module, e.g. ``random.uniform``).
    """
    tuning = {k: v for family in (COMMON, *families) for k, v in family.items()}

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        params = signature.parameters
        hints = typing.get_type_hints(function)
        keyword = {p for p, v in params.items() if v.kind in (v.KEYWORD_ONLY, v.POSITIONAL_OR_KEYWORD)}
        variadic = {p for p, v in params.items() if v.kind in (v.VAR_POSITIONAL, v.VAR_KEYWORD)}
        positional = [p for p, v in params.items() if v.kind in (v.POSITIONAL_ONLY, v.POSITIONAL_OR_KEYWORD)]
        required = {p for p, v in params.items() if v.default is v.empty and p not in variadic}
        op_name = label

        def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            # The plain call (dynamic mode makes one per operator call) without inspect's binder,
            # which costs more than many operators; anything unusual goes to the binder.
            if not variadic and len(args) <= len(positional):
                arguments = dict(zip(positional, args))
                if not any(k in arguments for k in kwargs):
                    arguments.update(kwargs)
                    if required <= arguments.keys():
                        return arguments
            return dict(signature.bind(*args, **kwargs).arguments)

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            label = op_name or _op_label(function)
            sets = _input_sets(args, label)
            if sets is not None:  # DALI's input sets: fn.op([a, b]) is [fn.op(a), fn.op(b)]
                return [call(*one, **kwargs) for one in sets]
            for key in [k for k in kwargs if k not in keyword]:
                if key == "device":  # an operator that only runs on the CPU (readers, most sources)
                    if str(getattr(kwargs[key], "value", kwargs[key])).lower() != "cpu":
                        raise PipelineDefinitionError(
                            f"{label}: device={kwargs[key]!r} is not supported; it runs on 'cpu'")
                    del kwargs[key]
                    continue
                if key in tuning:
                    del kwargs[key]  # a DALI tuning argument: accepted, ignored (see TUNING)
                    continue
                close = difflib.get_close_matches(key, sorted(keyword | set(tuning)), n=3)
                suggestion = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
                raise TypeError(f"{label}() got an unexpected keyword argument {key!r}{suggestion}")
            try:
                arguments = bind(args, kwargs)
            except TypeError as err:
                raise TypeError(f"{label}(): {err}") from None
            for key, value in arguments.items():
                hint = hints.get(key)
                if hint is None or key in ("data", "name") or key in variadic or _matches(value, hint):
                    continue
                if isinstance(value, DataNode):
                    raise PipelineDefinitionError(
                        f"{label}: {key} must be constant: it cannot be per-sample data ({value.name}); "
                        f"give {_describe(hint)}"
                    )
                raise PipelineDefinitionError(
                    f"{label}: {key} must be {_describe(hint)}, got {value!r} ({type(value).__name__})"
                )
            return function(*args, **kwargs)

        return call  # type: ignore[return-value]

    return decorate


def _input_sets(args: Sequence[Any], label: str) -> list[tuple[Any, ...]] | None:
    """Positional inputs given as lists of DataNodes, split into one call's inputs each (else None)."""
    lengths = {len(a) for a in args if _is_node_list(a)}
    if not lengths:
        return None
    if len(lengths) > 1:
        raise PipelineDefinitionError(
            f"{label}: inputs given as lists of pipeline data must be equally long (one set of inputs per "
            f"call), got lists of {sorted(lengths)}"
        )
    (n,) = lengths
    return [tuple(a[i] if _is_node_list(a) else a for a in args) for i in range(n)]


def _is_node_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, DataNode) for v in value)


#: fn sub-namespaces whose functions are named with a prefix in errors: by package, then by module.
_PREFIXES = {"streamflow.ops.decoders": "decoders.", "streamflow.ops.readers": "readers.",
             "streamflow.ops.segmentation": "segmentation.", "streamflow.ops.random": "random.",
             "streamflow.ops.transforms": "transforms."}


def _op_label(function: Callable[..., Any]) -> str:
    """The name of ``function`` in errors: DALI's, e.g. ``random.uniform``, ``segmentation.select_masks``."""
    module = function.__module__
    prefix = _PREFIXES.get(module.rsplit(".", 1)[0]) or _PREFIXES.get(module, "")
    return prefix + function.__name__


_NUMBER_TYPES = (int, float, np.integer, np.floating)


@functools.lru_cache(maxsize=1024)
def _hint_parts(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """``typing.get_origin`` and ``get_args`` of ``hint``, once per hint (arguments are checked per call)."""
    return typing.get_origin(hint), typing.get_args(hint)


def _matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits the annotation ``hint`` (lenient where numpy and Python mix)."""
    if hint is Any or hint is object:
        return True
    try:
        origin, hint_args = _hint_parts(hint)
    except TypeError:  # an unhashable annotation
        origin, hint_args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, h) for h in hint_args)
    if hint is type(None):
        return value is None
    if isinstance(value, DataNode):
        return hint is DataNode
    if hint is DataNode:
        return False
    if hint is bool:
        return isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1))
    if hint is int:
        return isinstance(value, (int, np.integer))
    if hint is float:
        return isinstance(value, _NUMBER_TYPES) and not isinstance(value, (bool, np.bool_))
    if hint is str:
        return isinstance(value, str)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return isinstance(value, hint)
    if origin in (Sequence, list, tuple, typing.Sequence) or hint in (list, tuple):
        if isinstance(value, (str, bytes)):
            return False
        if isinstance(value, np.ndarray):
            return value.dtype != object
        if not isinstance(value, (list, tuple, range)):
            return False
        inner = hint_args
        if not inner or inner[-1] is Ellipsis and len(inner) == 2 and inner[0] is Any:
            return True
        item = inner[0]
        return all(_matches(v, item) for v in value)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # annotations this checker does not understand are not checked


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        members = typing.get_args(hint)
        if float in members and int in members:  # Number: "a number", not "a number or an integer"
            members = tuple(m for m in members if m is not int)
        parts: list[str] = []
        for h in members:
            d = _describe(h)
            if d not in parts:
                parts.append(d)
        return " or ".join(parts)
    if hint is type(None):
        return "None"
    if hint is DataNode:
        return "per-sample data (a DataNode)"
    if hint in (int, float):
        return "a number" if hint is float else "an integer"
    if hint is bool:
        return "True or False"
    if hint is str:
        return "a string"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return f"a {hint.__name__}"
    if origin in (Sequence, list, tuple, typing.Sequence):
        inner = typing.get_args(hint)
        return f"a sequence of {_plural(inner[0])}" if inner else "a sequence"
    return getattr(hint, "__name__", str(hint))


def _plural(hint: Any) -> str:
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and float in typing.get_args(hint):
        return "numbers"
    return {float: "numbers", int: "integers", str: "strings", bool: "booleans"}.get(hint, _describe(hint))


def check_pipeline_options(options: dict[str, Any], known: Sequence[str]) -> None:
    """Accept DALI's pipeline tuning arguments in ``options``; a wrong name is a ``TypeError``."""
    for key in options:
        if key in PIPELINE:
            continue
        close = difflib.get_close_matches(key, sorted({*known, *PIPELINE}), n=3)
        suggestion = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise TypeError(f"Pipeline() got an unexpected keyword argument {key!r}{suggestion}")


def shape_argument(value: Any, what: str) -> tuple[int, ...]:
    """A constant shape argument (an int or a list of ints, none negative) as a tuple.

    Raises:
        PipelineDefinitionError: naming ``what`` (e.g. ``"constant: shape"``).
    """
    try:
        shape = tuple(int(v) for v in np.asarray(value).reshape(-1))
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"{what} must be an int or a list of ints, got {value!r}") from None
    if any(s < 0 for s in shape):
        raise PipelineDefinitionError(f"{what} must not be negative, got {list(shape)}")
    return shape


def ints_argument(value: Any, what: str) -> tuple[int, ...] | None:
    """A constant argument of integers (an int or a list of ints, e.g. ``axes``) as a tuple; ``None`` stays ``None``.

    Raises:
        PipelineDefinitionError: naming ``what`` (e.g. ``"pad: axes"``).
    """
    if value is None:
        return None
    try:
        return tuple(int(v) for v in np.asarray(value).reshape(-1))
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"{what} must be an int or a list of ints, got {value!r}") from None


def resolve_axes(axes: Iterable[Any], ndim: int, what: str) -> list[int]:
    """Axis indices ``axes`` (negative ones count from the back) of a ``ndim``-D sample, in their order.

    Raises:
        SampleError: naming ``what`` (the operator and argument, e.g. ``"erase: axes"``),
            the axis out of range and the valid range.
    """
    given = [int(a) for a in axes]
    for a in given:
        if not -ndim <= a < ndim:
            raise SampleError(f"{what}={given}: axis {a} is out of range for a {ndim}-D sample "
                              f"(valid: {-ndim}..{ndim - 1})")
    return [a % ndim for a in given]


def _missing_names(names: str, layout: str, what: str) -> str | None:
    missing = "".join(c for c in names if c not in layout)
    return f"{what}={names!r}: {missing!r} is not in the input layout {layout!r}" if missing else None


def check_axis_names(names: str, layout: str, what: str) -> None:
    """When the pipeline is defined: every letter of ``names`` is in the input ``layout`` (if known).

    Raises:
        PipelineDefinitionError: naming ``what`` (e.g. ``"pad: axis_names"``) and the missing letters.
    """
    problem = _missing_names(names, layout, what) if layout else None
    if problem:
        raise PipelineDefinitionError(problem)


def static_layout_axes(names: str, layout: str, what: str) -> list[int]:
    """When the pipeline is defined: the indices of the letters ``names`` in the input ``layout``, in their order.

    Raises:
        PipelineDefinitionError: naming ``what`` (e.g. ``"squeeze: axis_names"``) when
            the layout is unknown or lacks a letter.
    """
    if not layout:
        raise PipelineDefinitionError(
            f"{what}={names!r} needs the input's layout, which is unknown; give axes (indices) instead, "
            "or set the layout of the input (e.g. external_source(layout='HWC'))")
    check_axis_names(names, layout, what)
    return [layout.index(c) for c in names]


def layout_axes(names: str, layout: str, ndim: int, what: str) -> list[int]:
    """The indices of the letters ``names`` in ``layout``, the layout of a ``ndim``-D sample, in their order.

    Raises:
        SampleError: naming ``what`` (e.g. ``"pad: axis_names"``) when ``layout``
            does not describe the sample or lacks a letter.
    """
    if len(layout) != ndim:
        raise SampleError(f"{what}={names!r} needs the input layout; {layout!r} does not describe a {ndim}-D sample")
    problem = _missing_names(names, layout, what)
    if problem:
        raise SampleError(problem)
    return [layout.index(c) for c in names]
