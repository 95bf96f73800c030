"""PyTorch helpers of dynamic mode (DALI's ``ndd.pytorch``): ``nodes``, torchdata nodes.

Imported on first use (``ndd.pytorch.nodes.Reader``); needs ``torch`` and ``torchdata``.
"""

from . import nodes

__all__ = ["nodes"]
