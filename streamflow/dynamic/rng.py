"""Random state of dynamic mode: ``RNG`` (DALI's ``ndd.random.RNG``) and the default one per thread.

Dynamic mode draws random values by the pipeline's rule (``streamflow.rng``):
a value is a pure function of (seed, operator position, epoch, sample id).
In a pipeline the operator position is the operator's place in the graph's
stable order; in dynamic mode it is the position of the call on its RNG:
every operator call takes the RNG's current position and moves it on by
one. So::

    rng = RNG(seed=7)
    a = dynamic.random.uniform(batch_size=4, rng=rng)   # position 0
    b = dynamic.flip(images, horizontal=a > 0, rng=rng)  # position 1

gives ``a`` the values that operator number 0 of a pipeline with ``seed=7``
gives the same samples (``RNG(seed, position=k)`` reproduces operator
``k``). Calls without ``rng=`` use the calling thread's default RNG
(``set_seed``), which every operator call moves on.
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

import numpy as np

from .. import rng as _rng
from ..rng import RandomKey

__all__ = ["RNG", "get_default_rng", "set_seed"]

_MASK64 = (1 << 64) - 1


class RNG:
    """A seed and a position: the random stream of dynamic operator calls.

    Args:
        seed: any int (taken modulo 2**64); ``None`` draws one.
        position: the position the next call takes (see the module docstring).
        state: a state from ``get_state()`` / ``str(rng.state)`` instead of seed and position.
    """

    __slots__ = ("_lock", "position", "seed")

    def __init__(self, seed: int | None = None, position: int = 0, *, state: Any = None) -> None:
        self._lock = threading.Lock()
        if state is not None:
            if seed is not None:
                raise ValueError("RNG: give seed or state, not both")
            self.seed, self.position = self._parse_state(state)
            return
        if seed is None:
            seed = secrets.randbits(63)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"RNG: seed must be an int, got {type(seed).__name__}")
        if not isinstance(position, (int, np.integer)) or position < 0:
            raise ValueError(f"RNG: position must be a non-negative int, got {position!r}")
        self.seed = int(seed) & _MASK64
        self.position = int(position)

    def next_key(self) -> RandomKey:
        """The key of the next operator call (and move on by one)."""
        with self._lock:
            key = RandomKey(self.seed, self.position)
            self.position += 1
        return key

    def advance(self, n: int) -> None:
        """Skip ``n`` positions (as ``n`` operator calls would)."""
        if n < 0:
            raise ValueError("RNG.advance: n must not be negative")
        with self._lock:
            self.position += int(n)

    def __call__(self) -> int:
        """A random uint32 (DALI's ``rng()``); takes one position."""
        key = self.next_key()
        return int(_rng.mix(key, 0, np.zeros(1, dtype=np.int64))[0] >> np.uint64(32))

    def clone(self) -> RNG:
        """A new RNG that continues the same sequence independently."""
        return RNG(self.seed, self.position)

    # --- checkpointing (DALI's get_state / set_state contract) --------------
    @property
    def state(self) -> str:
        return self.get_state()

    @state.setter
    def state(self, value: Any) -> None:
        self.set_state(value)

    def get_state(self) -> str:
        """The state as a string (``"seed:position"``), for ``RNG(state=...)`` or ``set_state``."""
        return f"{self.seed}:{self.position}"

    def set_state(self, value: Any) -> None:
        seed, position = self._parse_state(value)
        with self._lock:
            self.seed, self.position = seed, position

    @staticmethod
    def _parse_state(value: Any) -> tuple[int, int]:
        try:
            seed, position = str(value).split(":")
            return int(seed) & _MASK64, int(position)
        except ValueError:
            raise ValueError(f"RNG: not a state from RNG.get_state(): {value!r}") from None

    def __repr__(self) -> str:
        return f"RNG(seed={self.seed}, position={self.position})"


_default = threading.local()


def get_default_rng() -> RNG:
    """The calling thread's default RNG (seeded at random until ``set_seed``)."""
    rng: RNG | None = getattr(_default, "rng", None)
    if rng is None:
        rng = _default.rng = RNG()
    return rng


def set_seed(seed: int) -> None:
    """Restart the calling thread's default RNG at ``seed`` (position 0)."""
    _default.rng = RNG(seed)
