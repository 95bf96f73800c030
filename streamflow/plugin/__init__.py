"""Framework plugins: ``streamflow.plugin.pytorch`` and ``streamflow.plugin.jax``.

Import the one you need (each imports its framework). ``LastBatchPolicy`` is
available here without importing either.
"""

from ..types import LastBatchPolicy

__all__ = ["LastBatchPolicy"]
