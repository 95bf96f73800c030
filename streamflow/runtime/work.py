"""``Work``: the rows of one batch as they travel from stage to stage."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph import DataNode
from .arena import BatchArena

__all__ = ["EndOfEpoch", "StageFailure", "Work"]


@dataclass(frozen=True)
class EndOfEpoch:
    """Marker that follows the last batch of ``epoch`` through the stages."""

    epoch: int
    batches: int


@dataclass(frozen=True)
class StageFailure:
    """Marker a failed stage sends downstream, in order, in place of its next batch.

    Batches finished before the failure still reach the consumer; then the
    consumer raises ``error``.
    """

    error: BaseException


@dataclass
class Work:
    """One batch in flight: per data node, the list of per-sample values.

    Every list in ``values`` has one entry per row, aligned with
    ``sample_ids`` and ``sources``.
    """

    epoch: int
    batch_index: int
    sample_ids: np.ndarray
    sources: list[str | None]
    values: dict[DataNode, list[Any]] = field(default_factory=dict)
    outputs: tuple[Any, ...] | None = None  # TensorLists, set by the last stage
    # Rows dropped without a replacement (sources that cannot re-read, such as
    # external_source, under on_error="skip"): (sample id, error).
    dropped: list[tuple[int, Any]] = field(default_factory=list)
    # Host pipeline outputs written in place by their operators (see arena.py).
    arenas: dict[DataNode, BatchArena] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.sample_ids)

    def select(self, rows: Sequence[int]) -> Work:
        """A new Work holding only ``rows`` (in that order)."""
        rows = list(rows)
        return Work(
            epoch=self.epoch,
            batch_index=self.batch_index,
            sample_ids=self.sample_ids[rows],
            sources=[self.sources[r] for r in rows],
            values={k: [v[r] for r in rows] for k, v in self.values.items()},
            dropped=list(self.dropped),
        )

    def put_rows(self, positions: Sequence[int], other: Work) -> None:
        """Insert ``other``'s rows so that they end up at ``positions`` (sorted)."""
        ids = list(self.sample_ids)
        for pos, row in sorted(zip(positions, range(len(other)))):
            ids.insert(pos, other.sample_ids[row])
            self.sources.insert(pos, other.sources[row])
            for key, column in self.values.items():
                column.insert(pos, other.values[key][row])
        self.sample_ids = np.asarray(ids, dtype=np.int64)
