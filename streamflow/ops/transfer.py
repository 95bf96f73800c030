"""``.gpu()``: move host data to the device (identity when running on the CPU)."""

from __future__ import annotations

from typing import Any

from ..types import Device
from .base import Chunk, Operator

__all__ = ["CopyToGpu"]


class CopyToGpu(Operator):
    """Copies samples to the GPU. Under ``device_id='auto'`` without a GPU it is the identity."""

    name = "copy_to_gpu"

    def __init__(self) -> None:
        super().__init__(device=Device.MIXED)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        if self.device is Device.CPU:
            return [list(chunk.inputs[0])]
        raise NotImplementedError("GPU copies run in the mixed stage, which is not available yet")
