"""What the GPU implementations of the audio operators share: per-sample checks, batched products."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import SampleError
from ...operator import Chunk
from ..context import GpuContext

__all__ = ["each_sample", "matmul_along", "matmul_by_length"]


def each_sample(chunk: Chunk, ctx: GpuContext, compute: Callable[[int, Any], Any]) -> list[Any]:
    """``Chunk.each_sample`` for arrays of the context: any other sample fails its row."""

    def checked(row: int, sample: Any) -> Any:
        if not ctx.is_array(sample):
            raise SampleError(f"expected an array on the {'GPU' if ctx.xp.__name__ == 'cupy' else 'host'}, "
                              f"got {type(sample).__name__}")
        return compute(row, sample)

    return chunk.each_sample(checked)


def matmul_along(xp: Any, matrix: Any, samples: list[Any], axes: list[int]) -> list[Any]:
    """``matrix`` applied along ``axes[i]`` of each sample, as one matrix product for the whole batch.

    The samples' other axes are flattened and laid side by side (a
    ``(K, sum of columns)`` operand), so a batch costs one GEMM (cuBLAS on the
    GPU) whatever the samples' lengths.
    """
    if not samples:
        return []
    columns = []
    shapes = []
    for x, axis in zip(samples, axes):
        moved = xp.moveaxis(x, axis, 0)
        shapes.append((moved.shape, axis))
        columns.append(moved.reshape(moved.shape[0], -1))
    product = xp.matmul(matrix, xp.concatenate(columns, axis=1) if len(columns) > 1 else columns[0])
    out = []
    start = 0
    for (shape, axis), cols in zip(shapes, columns):
        width = cols.shape[1]
        part = product[:, start : start + width].reshape((matrix.shape[0], *shape[1:]))
        out.append(xp.ascontiguousarray(xp.moveaxis(part, 0, axis)))
        start += width
    return out


def matmul_by_length(xp: Any, samples: list[Any], axis_of: Callable[[Any], int],
                     matrix_for: Callable[[Any], Any]) -> list[Any]:
    """Each sample (``None``: a failed row, kept ``None``) times its matrix along ``axis_of(sample)``.

    The samples with the same length along that axis share one matrix
    (``matrix_for`` of the group's first sample) and one product (``matmul_along``).
    """
    out: list[Any] = [None] * len(samples)
    groups: dict[int, list[int]] = {}
    for row, x in enumerate(samples):
        if x is not None:
            groups.setdefault(x.shape[axis_of(x)], []).append(row)
    for rows in groups.values():
        matrix = xp.asarray(matrix_for(samples[rows[0]]))
        axes = [axis_of(samples[r]) for r in rows]
        for row, result in zip(rows, matmul_along(xp, matrix, [samples[r] for r in rows], axes)):
            out[row] = result
    return out
