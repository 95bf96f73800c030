"""``get_property`` on the GPU: the property's bytes (known on the host) copied to the device."""

from __future__ import annotations

from typing import Any

from ...operator import Chunk
from ...ops.get_property import GetProperty
from ..context import GpuContext
from .registry import register

__all__ = ["get_property_gpu"]


@register(GetProperty)
def get_property_gpu(op: GetProperty, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    return [ctx.to_device([op.value(chunk, row) for row in range(len(chunk))])]
