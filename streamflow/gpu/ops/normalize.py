"""``normalize`` on the GPU: the CPU operator's own code over cupy (``Normalize.normalize_sample``).

Statistics are cupy reductions in float64, the arithmetic the same float64
element operations as on the CPU, then ``cast_array`` over cupy. On a GPU the
reductions sum in another order than numpy's pairwise sums: a computed mean
or stddev may differ in the last bits of float64, which can move a float32
output by one ulp (given means and deviations: bit-identical).
"""

from __future__ import annotations

from typing import Any

from ...errors import PipelineDefinitionError, SampleError
from ...operator import Chunk
from ...ops.normalize import Normalize
from ..context import GpuContext
from .audio_common import each_sample
from .registry import register

__all__ = ["normalize_gpu"]


@register(Normalize)
def normalize_gpu(op: Normalize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    # batch=True: the batch's statistics on the host, then each sample on the device
    stats = op.batch_statistics(chunk, [ctx.to_host(x) for x in chunk.inputs[0]]) if op.batch else None

    def one(row: int, x: Any) -> Any:
        try:
            return op.normalize_sample(chunk, row, x, ctx.xp, stats=stats)
        except (PipelineDefinitionError, ValueError) as err:
            raise SampleError(str(err)) from None

    return [each_sample(chunk, ctx, one)]
