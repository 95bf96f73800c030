"""``jax_function`` (DALI's ``nvidia.dali.plugin.jax.fn.jax_function``): a JAX function as a pipeline step.

``@jax_function`` turns a function of ``jax.Array`` batches (the leftmost
extent is the batch, so the samples must share one shape) into a function of
DataNodes. It runs as a whole-batch Python step on the worker threads: the
batch is stacked into one host array, handed to JAX (CPU, or the default JAX
device), and the results are split back into samples. Importable as
``streamflow.plugin.jax.fn`` (DALI's path).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import fn
from ..errors import PipelineDefinitionError, SampleError

try:
    import jax.numpy as jnp
except ImportError as exc:  # pragma: no cover - exercised without jax
    raise ImportError("streamflow.plugin.jax.fn needs JAX: pip install jax (or 'streamflow[jax]')") from exc

__all__ = ["jax_function"]


def _batched(function: Callable[..., Any], num_outputs: int) -> Callable[..., Any]:
    label = getattr(function, "__qualname__", repr(function))

    def run(*columns: list[np.ndarray]) -> Any:
        arrays = []
        for i, samples in enumerate(columns):
            shapes = {np.shape(s) for s in samples}
            if len(shapes) > 1:
                raise SampleError(f"jax_function {label}: input {i} has samples of different shapes "
                                  f"{sorted(shapes)}; JAX takes the batch as one array")
            arrays.append(jnp.asarray(np.stack(samples)))
        result = function(*arrays)
        outputs = [] if num_outputs == 0 else [result] if num_outputs == 1 else list(result)
        if len(outputs) != num_outputs:
            raise SampleError(f"jax_function {label} returned {len(outputs)} outputs, num_outputs is {num_outputs}")
        split = [list(np.asarray(out)) for out in outputs]
        return split[0] if num_outputs == 1 else tuple(split)

    return run


def jax_function(function: Callable[..., Any] | None = None, num_outputs: int = 1,
                 output_layouts: str | Sequence[str] | None = None, sharding: Any = None,
                 device: str | None = None, preserve: bool = True) -> Any:
    """Turn ``function`` (``jax.Array`` batches in and out) into a step on DataNodes (usable as a decorator).

    Args:
        function: takes and returns ``jax.Array`` batches (``num_outputs`` of them; a tuple when > 1).
        num_outputs: how many arrays ``function`` returns (0: none).
        output_layouts: layout of each output (one string for all).
        sharding: JAX sharding of the arrays: not supported (one process, one device).
        device: ``"cpu"`` or ``None``; with ``"gpu"`` the step runs on the CPU copies of the data.
        preserve: accepted (the step always runs).
    """
    if sharding is not None:
        raise PipelineDefinitionError("jax_function: sharding is not supported")
    if device not in (None, "cpu", "gpu"):
        raise PipelineDefinitionError(f"jax_function: device must be 'cpu', 'gpu' or None, got {device!r}")

    def decorator(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def step(*inputs: Any) -> Any:
            out = fn.python_function(*inputs, function=_batched(f, num_outputs), num_outputs=max(num_outputs, 1),
                                     batch_processing=True, output_layouts=output_layouts)
            return None if num_outputs == 0 else out

        return step

    return decorator if function is None else decorator(function)
