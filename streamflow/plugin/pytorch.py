"""PyTorch iterators: ``GenericIterator`` and ``ClassificationIterator``, DALI-style.

Replace ``from nvidia.dali.plugin.pytorch import DALIGenericIterator`` with
``from streamflow.plugin.pytorch import GenericIterator``; the arguments are
DALI's. Each step yields a list with one dict per pipeline, keyed by
``output_map``, of ``torch.Tensor`` that share memory with the pipeline's
batch (DLPack, no copy): on the CPU for host outputs, on the pipeline's GPU
for device outputs, ordered on torch's current CUDA stream.

Only the last batch of an epoch may be copied (``FILL`` pads it by repeating
its last sample). Ragged outputs (samples of different shapes) become a list
of per-sample tensors.
"""

from __future__ import annotations

import warnings
from typing import Any

from ._iterator import BaseIterator, LastBatchPolicy, make_converter

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised without torch
    raise ImportError(
        "streamflow.plugin.pytorch needs PyTorch: pip install torch (or 'streamflow[torch]')"
    ) from exc

__all__ = [
    "ClassificationIterator",
    "DALIClassificationIterator",
    "DALIGenericIterator",
    "GenericIterator",
    "LastBatchPolicy",
    "to_torch",
]


def _array_to_torch(x: Any) -> torch.Tensor:
    """Zero-copy conversion of a numpy or cupy array (or a TensorList) to torch."""
    if isinstance(x, torch.Tensor):
        return x
    try:
        # For CUDA producers torch passes its current stream, so the tensor is
        # ordered after the pipeline's work without blocking the host.
        return torch.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError):
        # Read-only numpy arrays cannot be exported through DLPack < 1.0, and a
        # few dtypes are not representable; as_tensor still shares the buffer.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "array is not writable"
            return torch.as_tensor(x)


to_torch = make_converter(_array_to_torch)


class GenericIterator(BaseIterator):
    """Iterate streamflow pipelines as PyTorch tensors (DALI's ``DALIGenericIterator``).

    Args:
        pipelines: one pipeline, or a list (e.g. one per GPU), iterated together.
        output_map: a name for each pipeline output; each step yields
            ``[{name: tensor, ...} for each pipeline]``.
        size: samples per epoch when there is no ``reader_name``, of all the
            pipelines together as in DALI (step k takes batch k*N + i of the
            stream from pipeline i); -1: until the pipelines' epoch ends.
        reader_name: the reader whose metadata (size, shards, padding) defines
            the epoch (recommended).
        auto_reset: start the next epoch by itself after ``StopIteration``
            (otherwise call ``reset()``).
        fill_last_batch: DALI's deprecated form of ``last_batch_policy`` (True:
            FILL, False: PARTIAL), with a warning as in DALI.
        dynamic_shape: accepted for DALI compatibility (DALI keeps it for old
            code only; the tensors always have the batch's shape).
        last_batch_policy: ``LastBatchPolicy.FILL`` (every batch full, the last
            padded by repeating samples), ``DROP`` (no incomplete batch) or
            ``PARTIAL`` (the last batch holds only what is left).
        last_batch_padded: accepted for DALI compatibility; streamflow readers
            never wrap into the next epoch, and with ``reader_name`` the padding
            is known from the reader.
        prepare_first_batch: start the pipelines and fetch the first batch now.
        checkpoint: ``it.checkpoint()`` of an earlier iterator (or its
            ``checkpoints()`` list): resume right after its last batch. The
            pipelines must not have run yet.

    ``len(it)`` is the number of batches per epoch (known with ``reader_name``
    or ``size``), the same on every rank of a distributed job.
    """

    def _convert(self, value: Any) -> Any:
        return to_torch(value)

    def _consumer_stream(self) -> Any:
        # A GPU batch is released once torch's current stream is past the step
        # that used it (see streamflow/gpu/handoff.py); CPU-only torch: no stream.
        if not torch.cuda.is_available():
            return None
        return lambda: int(torch.cuda.current_stream().cuda_stream)


class ClassificationIterator(GenericIterator):
    """``GenericIterator`` with ``output_map=["data", "label"]`` (DALI's
    ``DALIClassificationIterator``): for pipelines that return (images, labels)."""

    def __init__(self, pipelines: Any, size: int = -1, reader_name: str | None = None, *args: Any,
                 **kwargs: Any) -> None:
        # *args: DALI's positional order after reader_name (auto_reset, fill_last_batch, ...)
        super().__init__(pipelines, ["data", "label"], size, reader_name, *args, **kwargs)


#: DALI's names (``from nvidia.dali.plugin.pytorch import DALIGenericIterator``).
DALIGenericIterator = GenericIterator
DALIClassificationIterator = ClassificationIterator
