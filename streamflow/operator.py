"""The operator contract: what every operator implements, and the unit of work it is handed.

Two kinds of operators:

* ``Operator``: a transform. The engine hands it a ``Chunk`` (some rows of a
  batch, with their inputs and per-sample arguments) on a worker thread and
  gets back one list of per-sample values per output. A sample that cannot be
  processed is reported with ``chunk.fail(i, error)``, never by raising, so
  one bad image does not take the rest of the chunk with it.
* ``Source``: a reader or external source. It produces batches of samples
  asynchronously, epoch by epoch, and can produce a replacement for a sample
  that failed (the ``on_error="skip"`` policy).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, overload

import numpy as np

from .errors import PipelineDefinitionError, SampleError
from .io.pools import IOPool
from .rng import RandomKey
from .sharding import EpochInfo
from .types import Device, parse_device

__all__ = [
    "Chunk",
    "CopyToGpu",
    "EpochInfo",
    "Operator",
    "RandomKey",
    "Source",
    "SourceBatch",
    "float_seq",
]


@dataclass
class Chunk:
    """Rows of one batch, as handed to ``Operator.run`` on a worker thread.

    Attributes:
        inputs: per positional input, the list of per-sample values.
        args: per-sample argument inputs by name (only the ``DataNode`` ones;
            constant arguments live on the operator).
        sample_ids: the rows' sample identities (unique within an epoch).
        sources: the rows' source descriptions (file paths), for errors.
        epoch: the epoch the rows belong to.
        key: the operator's random stream, set by the engine before ``run``.
        failures: row position -> error, filled through ``fail``.
        output_slots: set by the engine when the operator's outputs are
            pipeline outputs; see ``output_buffer``.
        counts: operator-defined event counts (``count``), summed per
            operator into ``pipe.stats()`` (``OperatorStats.counts``).
    """

    inputs: list[list[Any]]
    args: dict[str, list[Any]]
    sample_ids: np.ndarray
    sources: list[str | None]
    epoch: int
    key: RandomKey = RandomKey(0, 0)
    failures: dict[int, SampleError] = field(default_factory=dict)
    output_slots: Callable[[int, int, tuple[int, ...], Any], np.ndarray | None] | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.sample_ids)

    def output_buffer(self, row: int, shape: tuple[int, ...], dtype: Any, output: int = 0) -> np.ndarray | None:
        """Where to write ``row``'s value of output ``output`` in place, or ``None``.

        When the output is a host pipeline output, this is the row's slice of
        the batch array (C-contiguous, uninitialised), so the batch needs no
        final copy; an operator that knows its output shape beforehand writes
        there and returns that array. ``None``: allocate as usual.
        """
        if self.output_slots is None:
            return None
        return self.output_slots(output, row, shape, dtype)

    def arg(self, name: str, row: int, default: Any) -> Any:
        """The per-sample argument ``name`` of ``row``, or ``default`` if constant."""
        values = self.args.get(name)
        return default if values is None else values[row]

    @overload
    def each_sample(self, compute: Callable[[int, Any], Any]) -> list[Any]: ...

    @overload
    def each_sample(self, compute: Callable[[int, Any], Sequence[Any]], outputs: int) -> list[list[Any]]: ...

    def each_sample(self, compute: Callable[[int, Any], Any], outputs: int | None = None) -> list[Any]:
        """``compute(row, sample)`` for each row, ``sample`` being the row's value of the first input.

        An operator without inputs gets ``None`` as ``sample`` for each of its
        ``len(chunk)`` rows. A ``SampleError`` fails only that row (its output
        is ``None``), so an operator with per-sample checks needs no error
        handling of its own.

        Args:
            compute: the row's output; with ``outputs``, a sequence of that many values.
            outputs: the number of outputs: the result is then one list per
                output (a failed row is ``None`` in each), not one list of values.
        """
        rows = self.inputs[0] if self.inputs else [None] * len(self)
        if outputs is None:
            out: list[Any] = []
            for row, sample in enumerate(rows):
                try:
                    out.append(compute(row, sample))
                except SampleError as err:
                    self.fail(row, err)
                    out.append(None)
            return out
        outs: list[list[Any]] = [[] for _ in range(outputs)]
        for row, sample in enumerate(rows):
            try:
                values = compute(row, sample)
            except SampleError as err:
                self.fail(row, err)
                values = [None] * outputs
            for column, value in zip(outs, values, strict=True):
                column.append(value)
        return outs

    def count(self, key: str, n: int = 1) -> None:
        """Count ``n`` events of ``key`` (e.g. ``"decoded_by:pillow"``) for ``pipe.stats()``."""
        self.counts[key] = self.counts.get(key, 0) + n

    def fail(self, row: int, error: BaseException) -> None:
        """Mark ``row`` as failed; its outputs are ignored by the engine."""
        if not isinstance(error, SampleError):
            reason = f"{type(error).__name__}: {error}"
            error = SampleError(reason, self.sources[row])
        elif error.source is None:
            error.source = self.sources[row]
        self.failures[row] = error


class Operator(abc.ABC):
    """A configured operator: constant arguments validated at construction.

    Subclasses set ``name`` (the DALI-style name, e.g. ``"decoders.image"``)
    and implement ``run`` (the CPU implementation). ``per_sample_args`` names
    the keyword arguments that may be ``DataNode``s.

    Devices: ``devices`` lists where the operator can run; the graph places
    it once, when the ``fn`` call adds it (``place``), and checks its inputs
    there (``accepts_input``). An operator that lists ``GPU`` or ``MIXED``
    has a GPU implementation registered in ``streamflow.gpu.ops`` (a test
    holds the two lists together).
    """

    name: ClassVar[str] = "operator"
    per_sample_args: ClassVar[frozenset[str]] = frozenset()
    devices: ClassVar[frozenset[Device]] = frozenset({Device.CPU})
    num_outputs: int = 1

    def __init__(self, *, device: Device = Device.CPU, name: str | None = None) -> None:
        self.device = device
        self.instance_name = name

    @property
    def output_device(self) -> Device:
        """Where this operator's outputs live."""
        return Device.CPU if self.device is Device.CPU else Device.GPU

    def place(self, device: str | Device | None, input_devices: Sequence[Device]) -> None:
        """Choose the device this operator runs on (called once, by the graph).

        ``None`` infers it as DALI does: the GPU when an input is GPU data,
        otherwise the CPU.
        """
        if device is None:
            on_gpu = any(d is Device.GPU for d in input_devices)
            chosen = Device.GPU if on_gpu and self._gpu_capable() else min(self.devices, key=_DEVICE_ORDER.index)
        else:
            try:
                chosen = parse_device(device)
            except ValueError as err:
                raise PipelineDefinitionError(f"{self.name}: {err}") from None
        if chosen is Device.GPU and self._gpu_capable():
            # A DALI GPU operator without a GPU implementation here yet: placed on the GPU as in
            # DALI, so the pipeline runs where it falls back to the CPU (device_id="auto");
            # on a GPU the pipeline's build names it (Pipeline._resolve_devices).
            self.device = chosen
            return
        if chosen not in self.devices:
            allowed = " or ".join(repr(d.value) for d in _DEVICE_ORDER if d in self.devices)
            raise PipelineDefinitionError(
                f"{self.name}: device={chosen.value!r} is not supported; it runs on {allowed}"
            )
        self.device = chosen

    def _gpu_capable(self) -> bool:
        """Whether the operator may be placed on the GPU: it has a GPU implementation, or DALI
        runs it there and the CPU implementation stands in when the pipeline falls back."""
        return Device.GPU in self.devices or (Device.CPU in self.devices and Device.MIXED not in self.devices
                                              and not isinstance(self, Source))

    def accepts_input(self, device: Device) -> bool:
        """Whether an input on ``device`` can feed this operator on its device.

        CPU and mixed operators read host data; a GPU operator reads GPU data,
        and host data is copied to the device for it.
        """
        return self.device is Device.GPU or device is Device.CPU

    def run_on(self, device: Device) -> Operator:
        """Move the operator to ``device`` (``device_id='auto'`` without a GPU: the CPU)."""
        self.device = device
        return self

    @abc.abstractmethod
    def run(self, chunk: Chunk) -> list[list[Any]]:
        """Process the rows of ``chunk``; return per output a list of per-sample values."""

    def layout(self, index: int) -> str:
        """The layout name of output ``index`` (``"HWC"``, ``"CHW"``; ``""`` when unknown)."""
        return ""

    #: Whether the operator keeps its first input's channel count (image transforms do).
    keeps_channels: ClassVar[bool] = False

    #: Whether the operator joins the branches of an ``if`` on pipeline data (its
    #: inputs come from inside the branches, its output is used after the ``if``).
    merges_branches: ClassVar[bool] = False

    #: Whether ``run`` must see the whole batch in one chunk (operators that mix
    #: samples, e.g. ``permute_batch``); others get parts of a batch. Rows that
    #: failed earlier in the batch are not in it.
    whole_batch: bool = False

    def output_channels(self, input_channels: Sequence[int | None]) -> int | None:
        """Channels of the outputs' samples when known at definition (None: unknown)."""
        if self.keeps_channels and input_channels:
            return input_channels[0]
        return None


#: Device preference when an operator's device is inferred.
_DEVICE_ORDER = (Device.CPU, Device.MIXED, Device.GPU)


@dataclass
class SourceBatch:
    """Samples produced by a source for one batch."""

    outputs: list[list[Any]]  # per output, per sample
    sample_ids: np.ndarray
    sources: list[str | None]
    failures: dict[int, SampleError] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.sample_ids)


class Source(Operator):
    """An operator that produces data: readers and external sources.

    The engine calls ``start_epoch`` once per epoch, then ``read_batch``
    until it returns ``None`` (the epoch is over). Everything a source yields
    must be a pure function of (seed, epoch, batch index) so that a pipeline
    can be checkpointed and resumed.
    """

    def run(self, chunk: Chunk) -> list[list[Any]]:  # pragma: no cover - sources use read_batch
        raise TypeError(f"{self.name} is a source; the engine calls read_batch")

    def epoch_info(self) -> EpochInfo | None:
        """Sizes of an epoch, when known (readers); ``None`` for open-ended sources."""
        return None

    def prepare(self, batch_size: int, seed: int, io: IOPool) -> None:
        """Called once when the pipeline is built."""

    @abc.abstractmethod
    def start_epoch(self, epoch: int) -> None:
        """Prepare the sample order of ``epoch``."""

    @abc.abstractmethod
    async def read_batch(self, epoch: int, batch_index: int) -> SourceBatch | None:
        """The samples of batch ``batch_index`` of ``epoch``, or ``None`` at its end."""

    async def read_replacement(self, epoch: int, sample_id: int, attempt: int) -> SourceBatch | None:
        """One sample to stand in for the failed ``sample_id`` (``on_error='skip'``).

        ``None`` means the source cannot replace samples: the batch shrinks.
        """
        return None

    def close(self) -> None:
        """Release what the source holds (open iterators, files)."""


def float_seq(value: Any, what: str) -> Sequence[float]:
    """A float or sequence of floats as a tuple (for mean/std-like arguments)."""
    if isinstance(value, (int, float, np.floating, np.integer)):
        return (float(value),)
    try:
        return tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"{what} must be a number or a list of numbers, got {value!r}") from None


class CopyToGpu(Operator):
    """``.gpu()``: copies host samples to the GPU (the identity when a pipeline falls back to the CPU)."""

    name = "copy_to_gpu"
    devices = frozenset({Device.CPU, Device.MIXED})

    def __init__(self) -> None:
        super().__init__(device=Device.MIXED)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        if self.device is not Device.CPU:
            raise PipelineDefinitionError("copy_to_gpu runs in the mixed stage, on the GPU")
        return [list(chunk.inputs[0])]
