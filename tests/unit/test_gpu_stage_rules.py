"""Rules of the GPU stage that hold without a GPU: one batch queued at a time per stream.

The stage's worker-thread call (``_run_batch``: the launches of one batch on
the stage's stream) is replaced by a stand-in that records how many batches
are inside it at once; everything around it (the engine's two batches in
progress, the stage's lock, the deferred release) is the real code. Streams,
events and kernels themselves run only on a GPU (tests/gpu).
"""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np

from streamflow import fn
from streamflow.gpu.stage import GpuStage
from streamflow.io.pools import WorkerPool
from streamflow.runtime.plan import StageKind, make_plan
from streamflow.runtime.stages import StageContext
from streamflow.runtime.stats import StatsRecorder
from streamflow.runtime.work import Work
from streamflow.types import ErrorPolicy


class DoneEvent:
    done = True


def _gpu_stage(workers: WorkerPool) -> GpuStage:
    src = fn.external_source([[np.zeros((4, 4, 3), np.uint8)]])
    out = fn.flip(src.gpu(), device="gpu")
    plan = make_plan([out], seed=1)
    ctx = StageContext(plan=plan, workers=workers, stats=StatsRecorder(), on_error=ErrorPolicy.RAISE,
                       replace=None, chunks_per_batch=1)  # type: ignore[arg-type]
    gpu_plan = next(s for s in plan.stages if s.kind is StageKind.GPU)
    return GpuStage(gpu_plan, ctx, set(plan.outputs), device_id=0)


def test_batches_are_queued_one_at_a_time_on_a_stage_stream() -> None:
    workers = WorkerPool(4)
    stage = _gpu_stage(workers)
    inside, peak, order = 0, 0, []
    lock = threading.Lock()

    def run_batch(work, upstream):  # type: ignore[no-untyped-def]
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        time.sleep(0.02)  # long enough for another batch to try to enter
        order.append(work.batch_index)
        with lock:
            inside -= 1
        return {}, {}, DoneEvent()

    stage._run_batch = run_batch  # type: ignore[method-assign]

    async def main() -> None:
        works = [Work(epoch=0, batch_index=i, sample_ids=np.arange(2), sources=[None, None]) for i in range(4)]
        await asyncio.gather(*(stage.process(w) for w in works))

    try:
        asyncio.run(main())
    finally:
        workers.shutdown()
    assert peak == 1, f"{peak} batches were queued on one stream at once"
    assert sorted(order) == [0, 1, 2, 3]
