"""``fn.external_source``: feed a pipeline from Python."""

from __future__ import annotations

from typing import Any

from ..graph import add_node
from ..ops.external_source import ExternalSource

__all__ = ["external_source"]


def external_source(
    source: Any = None,
    *,
    num_outputs: int | None = None,
    batch: bool = True,
    cycle: bool | str | None = None,
    batch_info: bool = False,
    dtype: Any = None,
    layout: str | None = None,
    name: str | None = None,
) -> Any:
    """Data from a Python callable, iterable, async callable or async iterable.

    Args:
        source: where data comes from. Batch mode: each call / item is a batch
            (a list of samples, or an array whose first axis is the batch).
            Per-sample mode (``batch=False``): each is one sample; a callable is
            passed a ``SampleInfo``.
        num_outputs: if set, each call / item is a tuple of that many outputs
            and a tuple of ``DataNode``s is returned.
        batch: batch mode (default) or per-sample mode.
        cycle: ``True``/``"quiet"``: restart an exhausted iterable at once;
            otherwise its end ends the epoch and the next epoch restarts it.
        batch_info: pass a ``BatchInfo`` to a batch-mode callable.
        dtype: the dtype every sample must have (checked).
        layout: layout name of the samples, e.g. ``"HWC"``.
        name: a name for errors, statistics and ``pipe.epoch_size``.
    """
    op = ExternalSource(
        source, num_outputs=num_outputs, batch=batch, cycle=cycle, batch_info=batch_info,
        dtype=dtype, layout=layout, name=name,
    )
    outputs = add_node(op, [])
    return outputs if num_outputs is not None else outputs[0]
