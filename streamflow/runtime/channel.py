"""A bounded asyncio channel between two stages, with statistics.

``put`` waits while the channel is full (backpressure: a slow consumer stops
its producer, so memory stays bounded); ``get`` waits while it is empty.
``close(error)`` wakes every waiter: getters then drain what is left and
receive ``error`` (or ``EndOfStream``), putters receive ``error`` at once.
"""

from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Channel", "ChannelStats", "EndOfStream"]

T = TypeVar("T")


class EndOfStream(Exception):
    """The channel was closed without an error and holds nothing more."""


@dataclass(frozen=True)
class ChannelStats:
    """A snapshot of a channel's activity.

    Attributes:
        capacity: the most items it holds.
        occupancy: items in it now.
        max_occupancy: the most items it ever held at once.
        puts: items put so far.
        mean_occupancy: occupancy averaged over the time since the first put.
    """

    capacity: int
    occupancy: int
    max_occupancy: int
    puts: int
    mean_occupancy: float


class Channel(Generic[T]):
    """Bounded FIFO between one producer task and one consumer task."""

    def __init__(self, capacity: int, name: str = "") -> None:
        if capacity < 1:
            raise ValueError(f"channel capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.name = name
        self._items: collections.deque[T] = collections.deque()
        self._cond = asyncio.Condition()
        self._closed = False
        self._error: BaseException | None = None
        self._puts = 0
        self._max_occupancy = 0
        self._area = 0.0  # integral of occupancy over time
        self._last_change = 0.0
        self._first_put = 0.0

    def _account(self) -> None:
        now = time.perf_counter()
        if self._last_change:
            self._area += len(self._items) * (now - self._last_change)
        self._last_change = now

    async def put(self, item: T) -> None:
        """Add ``item``, waiting while the channel is full."""
        async with self._cond:
            await self._cond.wait_for(lambda: self._closed or len(self._items) < self.capacity)
            if self._closed:
                raise self._error or EndOfStream(f"channel {self.name!r} is closed")
            self._account()
            if not self._first_put:
                self._first_put = self._last_change
            self._items.append(item)
            self._puts += 1
            self._max_occupancy = max(self._max_occupancy, len(self._items))
            self._cond.notify_all()

    async def get(self) -> T:
        """Take the oldest item, waiting while the channel is empty."""
        async with self._cond:
            await self._cond.wait_for(lambda: self._closed or bool(self._items))
            if self._items:
                self._account()
                item = self._items.popleft()
                self._cond.notify_all()
                return item
            raise self._error or EndOfStream(f"channel {self.name!r} is closed")

    async def close(self, error: BaseException | None = None) -> None:
        """Close the channel; waiting and later calls see ``error``."""
        async with self._cond:
            if not self._closed:
                self._closed = True
                self._error = error
            self._cond.notify_all()

    def discard(self) -> list[Any]:
        """Drop everything buffered (used on reset and shutdown); returns it."""
        items = list(self._items)
        self._items.clear()
        return items

    def __len__(self) -> int:
        return len(self._items)

    def stats(self) -> ChannelStats:
        self._account()
        span = self._last_change - self._first_put if self._first_put else 0.0
        return ChannelStats(
            capacity=self.capacity,
            occupancy=len(self._items),
            max_occupancy=self._max_occupancy,
            puts=self._puts,
            mean_occupancy=self._area / span if span > 0 else 0.0,
        )
