"""``fn.reductions``: min, max, sum, mean, mean_square, rms, std_dev, variance (``streamflow/ops/reductions.py``)."""

from ..ops.reductions import max, mean, mean_square, min, rms, std_dev, sum, variance

__all__ = ["max", "mean", "mean_square", "min", "rms", "std_dev", "sum", "variance"]
