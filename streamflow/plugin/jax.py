"""JAX iterator: the contract of ``streamflow.plugin.pytorch.GenericIterator`` with
``jax.Array`` outputs.

Each step yields a list with one dict per pipeline, keyed by ``output_map``.
Host outputs are imported through DLPack (zero-copy when XLA accepts the
buffer's alignment, otherwise one copy); GPU outputs stay on their device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError
from ..pipeline import pipeline_def
from ._iterator import BaseIterator, LastBatchPolicy, make_converter

try:
    import jax
    import jax.numpy as jnp
except ImportError as exc:  # pragma: no cover - exercised without jax
    raise ImportError("streamflow.plugin.jax needs JAX: pip install jax (or 'streamflow[jax]')") from exc

__all__ = ["ClassificationIterator", "DALIGenericIterator", "GenericIterator", "LastBatchPolicy", "data_iterator",
           "to_jax"]


def _array_to_jax(x: Any) -> jax.Array:
    if isinstance(x, jax.Array):
        return x
    try:
        return jax.dlpack.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError):
        # Read-only or unusual arrays: one copy.
        return jnp.asarray(np.asarray(x) if isinstance(x, np.ndarray) else x)


to_jax = make_converter(_array_to_jax)


class GenericIterator(BaseIterator):
    """Iterate streamflow pipelines as ``jax.Array`` (arguments as in
    ``streamflow.plugin.pytorch.GenericIterator``)."""

    def __init__(self, pipelines: Any, output_map: Sequence[str], size: int = -1, reader_name: str | None = None,
                 auto_reset: bool | str = False, last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL, prepare_first_batch: bool = True,
                 **kwargs: Any) -> None:
        # DALI's JAX iterator has its own positional order (no fill_last_batch / dynamic_shape).
        super().__init__(pipelines, output_map, size, reader_name, auto_reset, last_batch_padded=last_batch_padded,
                         last_batch_policy=last_batch_policy, prepare_first_batch=prepare_first_batch, **kwargs)

    def __next__(self) -> dict[str, Any]:  # type: ignore[override]
        """One dict per step, as DALI's JAX iterator: with several pipelines each name's arrays are
        joined along the batch axis (DALI makes one global array across devices)."""
        per_pipeline = super().__next__()
        if len(per_pipeline) == 1:
            return per_pipeline[0]
        return {name: jax.numpy.concatenate([step[name] for step in per_pipeline]) for name in self.output_map}

    next = __next__  # type: ignore[assignment]

    def _convert(self, value: Any) -> Any:
        return to_jax(value)


class ClassificationIterator(GenericIterator):
    """``GenericIterator`` with ``output_map=["data", "label"]``."""

    def __init__(self, pipelines: Any, size: int = -1, reader_name: str | None = None, *args: Any,
                 **kwargs: Any) -> None:
        # *args: DALI's positional order after reader_name (auto_reset, fill_last_batch, ...)
        super().__init__(pipelines, ["data", "label"], size, reader_name, *args, **kwargs)


#: DALI's name (``from nvidia.dali.plugin.jax import DALIGenericIterator``).
DALIGenericIterator = GenericIterator


def data_iterator(
    pipeline_fn: Callable[..., Any] | None = None,
    output_map: Sequence[str] = (),
    size: int = -1,
    reader_name: str | None = None,
    auto_reset: bool | str = False,
    last_batch_padded: bool = False,
    last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
    prepare_first_batch: bool = True,
    sharding: Any = None,
) -> Any:
    """DALI's ``plugin.jax.data_iterator``: turn a pipeline definition into a function returning an iterator.

    ``@data_iterator(output_map=[...], reader_name=...)`` over a function
    written as for ``pipeline_def``; calling the result with the pipeline's
    arguments (``batch_size``, ``num_threads``, ``seed``, ...) and the
    function's own builds the pipeline and returns a ``DALIGenericIterator``
    over it. Also usable as ``data_iterator(function, output_map=...)``.
    ``sharding`` (one pipeline per device of a ``jax.sharding``) is not
    supported: streamflow feeds JAX from one host pipeline.
    """
    if sharding is not None:
        raise PipelineDefinitionError(
            "data_iterator: sharding is not supported (one pipeline per JAX device); build one pipeline per "
            "process with shard_id/num_shards in its reader and put the arrays on devices with jax.device_put")

    def decorate(function: Callable[..., Any]) -> Callable[..., GenericIterator]:
        definition = pipeline_def(function)

        @functools.wraps(function)
        def create_iterator(*args: Any, **kwargs: Any) -> GenericIterator:
            pipe = definition(*args, **kwargs)
            return GenericIterator([pipe], list(output_map), size=size, reader_name=reader_name,
                                   auto_reset=auto_reset, last_batch_padded=last_batch_padded,
                                   last_batch_policy=last_batch_policy, prepare_first_batch=prepare_first_batch)

        return create_iterator

    return decorate(pipeline_fn) if pipeline_fn is not None else decorate


def _register_fn_module() -> None:
    """``streamflow.plugin.jax.fn`` (DALI's ``plugin.jax.fn.jax_function``) while this module is not a package."""
    import sys

    from . import jax_fn

    sys.modules[__name__ + ".fn"] = jax_fn


_register_fn_module()
