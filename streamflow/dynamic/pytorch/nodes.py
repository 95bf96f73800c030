"""torchdata nodes over dynamic-mode readers (DALI's ``ndd.pytorch.nodes``).

``Reader`` yields a dict per batch (output name -> ``Batch``), ``DictMapper``
applies a function (say, decoding and augmenting in dynamic mode) to one key,
``ToTorch`` turns the dict into a tuple of ``torch.Tensor`` (host data is
moved to the GPU when another entry is on it). Compose them with torchdata::

    import torchdata.nodes as tn
    reader = ndd.pytorch.nodes.Reader(ndd.readers.Caffe2, batch_size=64, path=root, random_shuffle=True)
    mapped = ndd.pytorch.nodes.DictMapper(reader, map_fn=lambda jpegs: ndd.decoders.image(jpegs))
    loader = tn.Loader(tn.Prefetcher(ndd.pytorch.nodes.ToTorch(mapped), prefetch_factor=2))
    for images, labels in loader: ...

Each ``reset()`` (torchdata calls it at the start of every epoch) starts the
reader's next epoch. As in DALI, the nodes keep no resumable state
(``reset(initial_state)`` with a state is refused).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...errors import MissingDependencyError, PipelineDefinitionError
from ...types import Device

try:
    import torchdata.nodes as tn
except ImportError as exc:  # pragma: no cover - exercised without torchdata
    raise MissingDependencyError("torchdata", "torchdata", "ndd.pytorch.nodes") from exc

__all__ = ["DictMapper", "Reader", "ToTorch"]


class Reader(tn.BaseNode):
    """A dynamic-mode reader as a node yielding ``{name: Batch}`` (DALI's ``nodes.Reader``).

    Args:
        reader_type: the reader class, e.g. ``ndd.readers.Caffe2``.
        batch_size: batches of this size (None: one sample at a time, as ``Tensor``s).
        output_names: the dict keys, one per reader output; a reader with two
            outputs defaults to ``("data", "label")``.
        **kwargs: the reader's arguments (``path=``, ``random_shuffle=``, ...).
    """

    def __init__(self, reader_type: Callable[..., Any], *, batch_size: int | None,
                 output_names: Iterable[str] | None = None, **kwargs: Any) -> None:
        super().__init__()
        kwargs.pop("max_batch_size", None)  # DALI's reader argument; the batch size is next_epoch's here
        self._reader = reader_type(**kwargs)
        self._batch_size = batch_size
        self._epoch: Iterator[Any] | None = None
        result = self._reader._graph.result
        count = len(result) if isinstance(result, (tuple, list, dict)) else 1
        if output_names is not None:
            self._names = tuple(output_names)
            if len(self._names) != count:
                raise PipelineDefinitionError(
                    f"output_names has {len(self._names)} names for the reader's {count} outputs"
                )
        elif isinstance(result, dict):
            self._names = tuple(result)
        elif count == 2:
            self._names = ("data", "label")
        else:
            raise PipelineDefinitionError(
                f"the reader has {count} outputs: give output_names (only two default to ('data', 'label'))"
            )

    def reset(self, initial_state: dict[str, Any] | None = None) -> None:
        if initial_state:
            raise PipelineDefinitionError("ndd.pytorch.nodes.Reader cannot resume from a state (as in DALI)")
        super().reset(initial_state)
        self._epoch = iter(self._reader.next_epoch(batch_size=self._batch_size))

    def next(self) -> dict[str, Any]:
        if self._epoch is None:
            raise RuntimeError("Reader.next() called before reset(); call reset() first")
        outputs = next(self._epoch)  # StopIteration ends the epoch
        if isinstance(outputs, dict):
            return {name: outputs[name] for name in self._names}
        if not isinstance(outputs, (tuple, list)):
            outputs = (outputs,)
        return dict(zip(self._names, outputs))

    def get_state(self) -> dict[str, Any]:
        return {}


class DictMapper(tn.BaseNode):
    """Applies ``map_fn`` to the ``key`` entry of each dict from ``source`` (DALI's ``nodes.DictMapper``)."""

    def __init__(self, source: Any, map_fn: Callable[[Any], Any], key: str = "data") -> None:
        super().__init__()
        self._source, self._map_fn, self._key = source, map_fn, key

    def reset(self, initial_state: dict[str, Any] | None = None) -> None:
        super().reset(initial_state)
        self._source.reset(initial_state)

    def next(self) -> dict[str, Any]:
        data = dict(self._source.next())
        data[self._key] = self._map_fn(data[self._key])
        return data

    def get_state(self) -> dict[str, Any]:
        return {}


class ToTorch(tn.BaseNode):
    """Turns each dict from ``source`` into a tuple of ``torch.Tensor`` (DALI's ``nodes.ToTorch``).

    Batches become one tensor each (their samples must have one shape). When
    some entries are on a GPU, the host ones are copied to it; entries on two
    different GPUs are an error.
    """

    def __init__(self, source: Any, output_stream: Any = None) -> None:
        super().__init__()
        self._source = source
        self._stream = output_stream

    def reset(self, initial_state: dict[str, Any] | None = None) -> None:
        super().reset(initial_state)
        self._source.reset(initial_state)

    def next(self) -> tuple[Any, ...]:
        data = dict(self._source.next())
        gpus = {getattr(v, "device_id", None) for v in data.values() if getattr(v, "device", None) is Device.GPU}
        if len(gpus) > 1:
            raise ValueError("ToTorch: all GPU tensors/batches must be on the same device")
        if gpus:
            gpu = gpus.pop()
            data = {k: (v.gpu(gpu) if getattr(v, "device", None) is not Device.GPU else v) for k, v in data.items()}
        return tuple(_torch(v) for v in data.values())

    def get_state(self) -> dict[str, Any]:
        return {}


def _torch(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if hasattr(value, "torch"):
        return value.torch()
    return torch.as_tensor(value)
