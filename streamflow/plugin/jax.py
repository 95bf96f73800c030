"""JAX iterator: the contract of ``streamflow.plugin.pytorch.GenericIterator`` with
``jax.Array`` outputs.

Each step yields a list with one dict per pipeline, keyed by ``output_map``.
Host outputs are imported through DLPack (zero-copy when XLA accepts the
buffer's alignment, otherwise one copy); GPU outputs stay on their device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._iterator import BaseIterator, LastBatchPolicy, make_converter

try:
    import jax
    import jax.numpy as jnp
except ImportError as exc:  # pragma: no cover - exercised without jax
    raise ImportError("streamflow.plugin.jax needs JAX: pip install jax (or 'streamflow[jax]')") from exc

__all__ = ["ClassificationIterator", "DALIGenericIterator", "GenericIterator", "LastBatchPolicy", "to_jax"]


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


def _register_fn_module() -> None:
    """``streamflow.plugin.jax.fn`` (DALI's ``plugin.jax.fn.jax_function``) while this module is not a package."""
    import sys

    from . import jax_fn

    sys.modules[__name__ + ".fn"] = jax_fn


_register_fn_module()
