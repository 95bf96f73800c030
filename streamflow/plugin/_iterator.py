"""Framework-free core of the training iterators: epoch arithmetic, last-batch policies,
checkpoints.

The PyTorch and JAX iterators only convert arrays; everything about *which*
rows a batch holds and *how many* batches an epoch has lives here, so it can be
tested without either framework.

Epoch arithmetic (DALI's, made lock-step across ranks)
------------------------------------------------------
With ``reader_name``, the reader's metadata gives the data set size ``N``, the
number of shards ``S`` and this pipeline's shard. Shard sizes differ by at most
one (``floor(N/S)`` or ``ceil(N/S)``), and with shard rotation a rank's shard
changes from epoch to epoch, so the number of batches is computed from the
*whole* job, identically on every rank (a rank with one batch more than the
others would hang a collective)::

    FILL     ceil(ceil(N/S) / B) batches, all full; missing rows repeat the last sample
    PARTIAL  ceil(ceil(N/S) / B) batches; padding rows removed, so the last batch
             holds the rest of this shard (0 rows in the rare case where this shard
             is one sample shorter than the longest and a multiple of B)
    DROP     floor(floor(N/S) / B) batches, all full of real samples

N=64, B=10, one shard: FILL 7 full batches, PARTIAL 7 with a last batch of 4,
DROP 6. With ``size=`` instead of ``reader_name`` the same formulas use
``size`` as the shard size (with N pipelines, as DALI, ``size`` counts them
together: ceil(size / (N*B)) steps, floor for DROP); with neither, the
pipeline's own epoch decides.
"""

from __future__ import annotations

import base64
import json
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from ..errors import PipelineDefinitionError
from ..sharding import shard_range
from ..types import LastBatchPolicy

__all__ = [
    "ITERATOR_CHECKPOINT_FORMAT",
    "BaseIterator",
    "EpochPlan",
    "LastBatchPolicy",
    "ReaderShape",
    "plan_epoch",
]

ITERATOR_CHECKPOINT_FORMAT = "streamflow-iterator-v1"


def _policy(value: LastBatchPolicy | str) -> LastBatchPolicy:
    if isinstance(value, LastBatchPolicy):
        return value
    try:
        return LastBatchPolicy(str(value).lower())
    except ValueError:
        try:
            return LastBatchPolicy[str(value).upper()]
        except KeyError:
            raise ValueError(
                f"last_batch_policy must be LastBatchPolicy.FILL, DROP or PARTIAL, got {value!r}"
            ) from None


@dataclass(frozen=True)
class ReaderShape:
    """What the epoch arithmetic needs from ``pipe.reader_meta(name)``."""

    epoch_size: int
    number_of_shards: int = 1
    shard_id: int = 0
    pad_last_batch: bool = False
    stick_to_shard: bool = False

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> ReaderShape:
        return cls(
            epoch_size=int(meta["epoch_size"]),
            number_of_shards=int(meta.get("number_of_shards", 1)),
            shard_id=int(meta.get("shard_id", 0)),
            pad_last_batch=bool(meta.get("pad_last_batch", False)),
            stick_to_shard=bool(meta.get("stick_to_shard", False)),
        )

    def shard_of_epoch(self, epoch: int) -> int:
        if self.stick_to_shard:
            return self.shard_id
        return (self.shard_id + epoch) % self.number_of_shards

    def shard_size(self, epoch: int) -> int:
        """Real (unpadded) samples of this pipeline's shard in ``epoch``."""
        begin, end = shard_range(self.epoch_size, self.shard_of_epoch(epoch), self.number_of_shards)
        return end - begin

    @property
    def longest(self) -> int:
        return -(-self.epoch_size // self.number_of_shards)

    @property
    def shortest(self) -> int:
        return self.epoch_size // self.number_of_shards


@dataclass(frozen=True)
class EpochPlan:
    """How one epoch of one pipeline is cut into batches.

    Attributes:
        batches: batches in the epoch (``None``: until the pipeline's epoch ends).
        real: real samples available to this pipeline in the epoch (``None``: unknown).
        batch_size: the pipeline's batch size.
        policy: the last-batch policy.
        synthesize: the pipeline may end one batch early and the iterator must
            make the missing batch up (lock-step across uneven shards).
    """

    batches: int | None
    real: int | None
    batch_size: int
    policy: LastBatchPolicy
    synthesize: bool = False

    def rows(self, k: int) -> int | None:
        """Rows that batch ``k`` must have (``None``: whatever the pipeline gives)."""
        if self.policy is LastBatchPolicy.PARTIAL:
            if self.real is None:
                return None
            return max(0, min(self.batch_size, self.real - k * self.batch_size))
        return self.batch_size


def plan_epoch(
    policy: LastBatchPolicy | str,
    batch_size: int,
    epoch: int = 0,
    reader: ReaderShape | dict[str, Any] | None = None,
    size: int = -1,
) -> EpochPlan:
    """The batches of ``epoch`` for one pipeline (see the module docstring).

    Args:
        policy: FILL, DROP or PARTIAL.
        batch_size: samples per batch.
        epoch: which epoch (the shard rotates with it).
        reader: the reader's metadata (``ReaderShape`` or ``pipe.reader_meta(name)``).
        size: samples per epoch of this pipeline when there is no reader (-1: unknown).
    """
    policy = _policy(policy)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if reader is not None:
        shape = reader if isinstance(reader, ReaderShape) else ReaderShape.from_meta(reader)
        real = shape.shard_size(epoch)
        if policy is LastBatchPolicy.DROP:
            return EpochPlan(shape.shortest // batch_size, real, batch_size, policy)
        batches = math.ceil(shape.longest / batch_size)
        # The pipeline itself yields ceil(shard / B) batches (the padded shard,
        # with pad_last_batch, always has exactly `batches`).
        own = batches if shape.pad_last_batch else math.ceil(real / batch_size)
        return EpochPlan(batches, real, batch_size, policy, synthesize=own < batches)
    if size is not None and size >= 0:
        if policy is LastBatchPolicy.DROP:
            return EpochPlan(size // batch_size, size, batch_size, policy)
        return EpochPlan(math.ceil(size / batch_size), size, batch_size, policy)
    return EpochPlan(None, None, batch_size, policy)


# --- batches as arrays ------------------------------------------------------
def _dense(tl: Any) -> Any | None:
    """The batch as one array (numpy or cupy), or None when ragged."""
    if hasattr(tl, "is_dense_tensor"):
        if not tl.is_dense_tensor():
            return None
        return tl.as_tensor()
    return tl


def _xp(arr: Any) -> Any:
    if type(arr).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def fit_rows(tl: Any, rows: int | None, filler: Any | None = None) -> Any:
    """``tl`` (a TensorList or array) cut or padded to ``rows`` rows.

    Returns an array (a view when only cut, so no copy) for dense batches, or a
    list of per-sample arrays for ragged ones. Missing rows repeat the last row
    (of ``tl``, or of ``filler`` when ``tl`` is None).
    """
    source = tl if tl is not None else filler
    assert source is not None, "pad_rows needs a batch or a filler"
    dense = _dense(source)
    have = len(source) if tl is not None else 0
    if rows is None:
        rows = have
    if dense is not None:
        if tl is None:
            return _xp(dense).repeat(dense[-1:], rows, axis=0) if rows else dense[:0]
        if rows <= have:
            return dense if rows == have else dense[:rows]
        xp = _xp(dense)
        return xp.concatenate([dense, xp.repeat(dense[-1:], rows - have, axis=0)])
    samples = list(source)
    if tl is None:
        return [samples[-1]] * rows
    return samples[:rows] if rows <= have else samples + [samples[-1]] * (rows - have)


# --- pipeline positions -----------------------------------------------------
def pipeline_position(pipe: Any) -> tuple[int, int]:
    """(epoch, next batch) the pipeline hands out next, from its checkpoint."""
    state = json.loads(bytes(pipe.checkpoint()).decode())
    return int(state["epoch"]), int(state["batch"])


def _pipe_started(pipe: Any) -> bool:
    state = getattr(pipe, "state", None)
    return getattr(state, "value", "new") not in ("new", "built")


def _restore_pipeline(pipe: Any, checkpoint: bytes) -> None:
    """Make a not-yet-started pipeline resume at ``checkpoint``."""
    if _pipe_started(pipe):
        now = json.loads(bytes(pipe.checkpoint()).decode())
        want = json.loads(bytes(checkpoint).decode())
        if all(now.get(k) == want.get(k) for k in ("seed", "epoch", "batch")):
            return  # already there (e.g. built with this checkpoint)
        raise PipelineDefinitionError(
            "the pipeline has already run; to resume, give the checkpoint to a new pipeline "
            "(mypipe(..., checkpoint=...)) or pass pipelines that have not run yet"
        )
    restore = getattr(pipe, "restore", None) or pipe._restore
    restore(bytes(checkpoint))


def _split_checkpoint(checkpoint: bytes | Sequence[bytes], count: int) -> tuple[list[bytes], dict[str, Any] | None]:
    """(pipeline checkpoints, iterator state) from an iterator or pipeline checkpoint(s)."""
    if isinstance(checkpoint, (bytes, bytearray, memoryview)):
        try:
            state = json.loads(bytes(checkpoint).decode())
        except (ValueError, UnicodeDecodeError):
            raise PipelineDefinitionError("not a streamflow iterator checkpoint") from None
        if state.get("format") == ITERATOR_CHECKPOINT_FORMAT:
            pipes = [base64.b64decode(p) for p in state["pipelines"]]
            if len(pipes) != count:
                raise PipelineDefinitionError(
                    f"the checkpoint holds {len(pipes)} pipeline(s); the iterator got {count}"
                )
            return pipes, state
        checkpoint = [bytes(checkpoint)]
    pipes = [bytes(c) for c in checkpoint]
    if len(pipes) != count:
        raise PipelineDefinitionError(f"{len(pipes)} pipeline checkpoint(s) for {count} pipeline(s)")
    return pipes, None


# --- the iterator -------------------------------------------------------------
class BaseIterator:
    """Iterates several pipelines in lock-step and applies the last-batch policy.

    Subclasses set ``_convert(array_or_list, tensorlist) -> framework value``.
    See ``streamflow.plugin.pytorch.GenericIterator`` for the arguments.
    """

    def __init__(
        self,
        pipelines: Any,
        output_map: Sequence[str],
        size: int = -1,
        reader_name: str | None = None,
        auto_reset: bool | str = False,
        fill_last_batch: bool | None = None,
        dynamic_shape: bool = False,
        last_batch_padded: bool = False,
        last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
        checkpoint: bytes | Sequence[bytes] | None = None,
    ) -> None:
        # DALI's positional order. dynamic_shape: kept by DALI for old code only (the tensors
        # always have the batch's shape). fill_last_batch: DALI's deprecated form of the policy.
        del dynamic_shape
        if fill_last_batch is not None:
            warnings.warn("fill_last_batch is deprecated (as in DALI): use last_batch_policy", Warning, stacklevel=2)
            last_batch_policy = LastBatchPolicy.FILL if fill_last_batch else LastBatchPolicy.PARTIAL
        self._pipes = list(pipelines) if isinstance(pipelines, (list, tuple)) else [pipelines]
        if not self._pipes:
            raise ValueError("give at least one pipeline")
        self.output_map = list(output_map)
        if len(set(self.output_map)) != len(self.output_map):
            raise ValueError(f"output_map has duplicate names: {self.output_map}")
        if reader_name is not None and size is not None and size > 0:
            raise ValueError("give either size or reader_name, not both (reader_name is preferred)")
        self._size = -1 if size is None else int(size)
        self._reader_name = reader_name
        self._auto_reset = auto_reset in (True, "yes") if not isinstance(auto_reset, bool) else auto_reset
        self._policy = _policy(last_batch_policy)
        self._last_batch_padded = bool(last_batch_padded)
        self.batch_size = self._pipes[0].batch_size
        for p in self._pipes:
            stream = self._consumer_stream()
            if stream is not None and hasattr(p, "consumer_stream"):
                p.consumer_stream = stream
            if p.batch_size != self.batch_size:
                raise ValueError(
                    f"all pipelines must have the same batch_size; got {[q.batch_size for q in self._pipes]}"
                )
        self._readers: list[ReaderShape | None] = [
            ReaderShape.from_meta(p.reader_meta(reader_name)) if reader_name is not None else None
            for p in self._pipes
        ]
        state = None
        if checkpoint is not None:
            ckpts, state = _split_checkpoint(checkpoint, len(self._pipes))
            for p, c in zip(self._pipes, ckpts):
                _restore_pipeline(p, c)
        positions = [pipeline_position(p) for p in self._pipes]
        if state is not None:
            self._epoch, self._count = int(state["epoch"]), int(state["count"])
            self._done = bool(state.get("done", False))
        else:
            # A pipeline that ended its epoch one batch early sits at (epoch + 1, 0).
            self._epoch = min(e for e, _ in positions)
            self._count = max((b for e, b in positions if e == self._epoch), default=0)
            self._done = False
        for e, b in positions:
            if (e, b) != (self._epoch, self._count) and (e, b) != (self._epoch + 1, 0):
                raise PipelineDefinitionError(
                    f"the pipelines are at different positions (epoch, batch): {positions}; "
                    "give them checkpoints taken together"
                )
        ended = [e > self._epoch for e, _ in positions]
        self._plans = self._make_plans(self._epoch)
        self._pending: list[Any] = [None] * len(self._pipes)
        self._pipe_ended = ended
        self._last: list[Any] = [None] * len(self._pipes)  # last batch of each pipeline
        self._checkpoints = [bytes(p.checkpoint()) for p in self._pipes]
        if prepare_first_batch and not self._done and not self._epoch_complete():
            for i in range(len(self._pipes)):
                if not self._pipe_ended[i]:
                    self._pending[i] = self._fetch(i)

    # --- arithmetic -------------------------------------------------------
    def _make_plans(self, epoch: int) -> list[EpochPlan]:
        sizes = self._pipeline_sizes()
        return [plan_epoch(self._policy, self.batch_size, epoch, r, n) for r, n in zip(self._readers, sizes)]

    def _pipeline_sizes(self) -> list[int]:
        """Each pipeline's share of ``size``. As in DALI, ``size`` (without ``reader_name``) counts
        the samples of all the pipelines together: step k takes samples [(k*N + i)*B, (k*N + i + 1)*B)
        from pipeline i, so with PARTIAL the last step may leave the last pipelines out."""
        n, b, size = len(self._pipes), self.batch_size, self._size
        if size < 0 or n == 1:
            return [size] * n
        if self._policy is LastBatchPolicy.DROP:
            return [size // (n * b) * b] * n
        steps = math.ceil(size / (n * b))
        if self._policy is LastBatchPolicy.FILL:
            return [steps * b] * n
        return [(steps - 1) * b + min(b, max(0, size - ((steps - 1) * n + i) * b)) for i in range(n)]

    def _epoch_complete(self) -> bool:
        n = self._plans[0].batches
        return n is not None and self._count >= n

    def __len__(self) -> int:
        n = self._plans[0].batches
        if n is None:
            raise TypeError("the iterator's length is unknown; give reader_name= or size=")
        return n

    @property
    def size(self) -> int:
        """Samples per epoch: the reader's data set, or ``size`` (-1 when unknown)."""
        if self._readers[0] is not None:
            return self._readers[0].epoch_size
        return self._size

    @property
    def last_batches(self) -> list[Any]:
        """The streamflow ``Batch`` (with ``.sources``, ``.sample_ids``, ``.epoch``)
        that each pipeline's part of the last step came from."""
        return list(self._last)

    @property
    def epoch(self) -> int:
        """The epoch being iterated."""
        return self._epoch

    # --- fetching ------------------------------------------------------------
    def _fetch(self, i: int) -> tuple[Any, bytes]:
        """(next pipeline batch or None at the end of its epoch, checkpoint after it)."""
        pipe = self._pipes[i]
        return pipe.next_batch(), bytes(pipe.checkpoint())

    def _take(self, i: int) -> tuple[Any, bytes]:
        if self._pending[i] is not None:
            got, self._pending[i] = self._pending[i], None
            return got
        if self._pipe_ended[i]:
            return None, bytes(self._pipes[i].checkpoint())
        return self._fetch(i)

    def _finish_pipelines(self) -> None:
        """Skip whatever is left of the current epoch in every pipeline."""
        self._pending = [None] * len(self._pipes)
        for pipe in self._pipes:
            pipe.reset()
            while pipeline_position(pipe)[0] <= self._epoch:
                if pipe.next_batch() is None:
                    break
        self._checkpoints = [bytes(p.checkpoint()) for p in self._pipes]

    def _end_epoch(self) -> None:
        self._finish_pipelines()
        self._done = True
        if self._auto_reset:
            self.reset()

    # --- iteration -------------------------------------------------------------
    def __iter__(self) -> BaseIterator:
        # As DALI: iter() on an iterator whose epoch was consumed starts the next epoch, so a
        # loop such as Lightning's (iter() once per epoch, no reset()) sees every epoch.
        if self._done or (self._count > 0 and self._epoch_complete()):
            self.reset()
        return self

    def __next__(self) -> list[dict[str, Any]]:
        if self._done:
            raise StopIteration
        if self._epoch_complete():
            self._end_epoch()
            raise StopIteration
        k = self._count
        fetched = [self._take(i) for i in range(len(self._pipes))]
        outputs: list[tuple[Any, ...]] = []
        for i, (batch, ckpt) in enumerate(fetched):
            plan = self._plans[i]
            if batch is None:
                self._pipe_ended[i] = True
            elif batch.epoch != self._epoch:  # cannot happen unless the pipeline was used elsewhere
                raise RuntimeError(
                    f"pipeline {i} returned a batch of epoch {batch.epoch} while the iterator is in "
                    f"epoch {self._epoch}; do not run the pipelines outside the iterator"
                )
            if batch is None or (plan.policy is LastBatchPolicy.DROP and plan.batches is None
                                 and len(batch) > 0 and len(batch[0]) < self.batch_size):
                if plan.batches is None or not plan.synthesize or k >= (plan.batches or 0):
                    # The pipeline's epoch is over: so is the iterator's.
                    self._end_epoch()
                    raise StopIteration
                if self._last[i] is None:
                    raise RuntimeError(
                        "cannot resume here: the next batch repeats the last sample of a shard that "
                        "ended one batch early, which this checkpoint does not hold. Use "
                        "pad_last_batch=True in the reader (recommended for several shards)"
                    )
                outputs.append(tuple(fit_rows(None, plan.rows(k), filler=tl) for tl in self._last[i]))
            else:
                rows = plan.rows(k)
                if rows is None and plan.policy is LastBatchPolicy.FILL:
                    rows = self.batch_size
                outputs.append(tuple(fit_rows(tl, rows) for tl in batch))
                self._last[i] = batch
            self._checkpoints[i] = ckpt
        self._count = k + 1
        if self._size >= 0 and len(self._pipes) > 1 and self._readers[0] is None:
            # DALI's size: the pipelines with nothing left in the last PARTIAL step are left out
            keep = [i for i, plan in enumerate(self._plans) if plan.rows(k) != 0]
            return [self._wrap(outputs[i], i) for i in keep]
        return [self._wrap(out, i) for i, out in enumerate(outputs)]

    next = __next__

    def _wrap(self, outputs: tuple[Any, ...], pipe_index: int) -> dict[str, Any]:
        if len(outputs) != len(self.output_map):
            raise ValueError(
                f"the pipeline has {len(outputs)} outputs but output_map names {len(self.output_map)}: "
                f"{self.output_map}"
            )
        return {name: self._convert(value) for name, value in zip(self.output_map, outputs)}

    def _convert(self, value: Any) -> Any:  # overridden by the framework plugins
        return value

    def _consumer_stream(self) -> Any:  # overridden by the framework plugins
        """What returns the framework's current CUDA stream (GPU batches are released after it), or None."""
        return None

    def reset(self) -> None:
        """Start the next epoch (skipping what is left of the current one, if any)."""
        if not self._done:
            if self._count == 0 and not any(self._pipe_ended):
                return  # nothing consumed yet: already at the start of an epoch
            self._finish_pipelines()
        self._epoch += 1
        self._count = 0
        self._done = False
        self._pipe_ended = [False] * len(self._pipes)
        self._last = [None] * len(self._pipes)
        self._plans = self._make_plans(self._epoch)

    # --- checkpoints -------------------------------------------------------------
    def checkpoints(self) -> list[bytes]:
        """One checkpoint per pipeline, right after the last batch handed out.

        Give ``checkpoints()[i]`` to pipeline ``i`` (``mypipe(..., checkpoint=c)``)
        and wrap the new pipelines in a new iterator. ``checkpoint()`` also keeps
        the iterator's own state (use it when you can).
        """
        return list(self._checkpoints)

    def checkpoint(self) -> bytes:
        """The iterator's state and its pipelines', as bytes for ``checkpoint=``."""
        state = {
            "format": ITERATOR_CHECKPOINT_FORMAT,
            "epoch": self._epoch,
            "count": self._count,
            "done": self._done,
            "policy": self._policy.value,
            "pipelines": [base64.b64encode(c).decode() for c in self._checkpoints],
        }
        return json.dumps(state, sort_keys=True).encode()

    # --- life cycle ----------------------------------------------------------------
    def close(self) -> None:
        """Close every pipeline."""
        self._pending = [None] * len(self._pipes)
        for pipe in self._pipes:
            pipe.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_converter(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Apply ``fn`` to an array, or to every sample of a ragged batch (a list)."""

    def convert(value: Any) -> Any:
        if isinstance(value, list):
            return [fn(v) for v in value]
        return fn(value)

    return convert
