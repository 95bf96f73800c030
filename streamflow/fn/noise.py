"""``fn.noise``: gaussian, shot and salt-and-pepper noise (``streamflow/ops/noise.py``)."""

from ..ops.noise import gaussian, salt_and_pepper, shot

__all__ = ["gaussian", "salt_and_pepper", "shot"]
