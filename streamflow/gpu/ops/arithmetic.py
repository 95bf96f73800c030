"""Element-wise expressions on the GPU: one generated kernel per expression and operand types."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...expression_kernels import kernel_source, slots
from ...expressions import ArithmeticOp, result_type
from ...operator import Chunk
from ..context import BLOCK, GpuContext
from .registry import register

__all__ = ["arithmetic_gpu"]


@register(ArithmeticOp)
def arithmetic_gpu(op: ArithmeticOp, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    out: list[Any] = [None] * len(chunk)
    groups: dict[tuple[np.dtype, ...], list[tuple[int, list[Any], tuple[int, ...]]]] = {}
    for row in range(len(chunk)):
        operands = [xp.ascontiguousarray(xp.asarray(col[row])) for col in chunk.inputs]
        try:
            shape = np.broadcast_shapes(*(o.shape for o in operands))
        except ValueError as err:
            chunk.fail(row, SampleError(f"arithmetic: operands of shapes {[o.shape for o in operands]}: {err}"))
            continue
        size = int(np.prod(shape, dtype=np.int64))
        if any(o.size not in (1, size) for o in operands):
            chunk.fail(row, SampleError(
                f"arithmetic on the GPU: operands of shapes {[o.shape for o in operands]} must have the "
                "result's shape or be scalars"))
            continue
        groups.setdefault(tuple(np.dtype(o.dtype) for o in operands), []).append((row, operands, shape))
    for dtypes, members in groups.items():
        try:
            name, source = kernel_source(op.expr, dtypes)
        except NotImplementedError as err:
            for row, _, _ in members:
                chunk.fail(row, SampleError(f"arithmetic on the GPU: {err}"))
            continue
        out_dtype = result_type(op.expr, dtypes)
        results = ctx.alloc([shape for _, _, shape in members], out_dtype)
        P = np.zeros((len(members), slots(len(dtypes))), dtype=np.int64)
        longest = 0
        for j, ((row, operands, _), result) in enumerate(zip(members, results)):
            P[j, 0], P[j, 1] = result.size, ctx.address(result)
            for k, o in enumerate(operands):
                P[j, 2 + 2 * k], P[j, 3 + 2 * k] = ctx.address(o), int(o.size != 1)
            longest = max(longest, result.size)
            out[row] = result
        ctx.launch_generated(source, name, P, -(-longest // BLOCK))
    return [out]
