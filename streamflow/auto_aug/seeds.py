"""Seeds of the random choices of one automatic augmentation."""

from __future__ import annotations

__all__ = ["sub_seed"]


def sub_seed(seed: int | None, k: int) -> int | None:
    """The seed of the ``k``-th random draw of a scheme given ``seed``.

    DALI passes the same seed to every draw of a scheme, which makes the
    operation and the sign of a sample depend on the same random number; here
    each draw gets its own stream (still a pure function of ``seed``).
    """
    return None if seed is None else (int(seed) * 7919 + 104729 * (k + 1)) & 0x7FFFFFFF
