"""The engine that runs a planned graph: stages as asyncio tasks joined by bounded channels.

    plan.py       graph -> ExecutionPlan (stages read, cpu, mixed, gpu), with fusion.py's pass
    fusion.py     resize -> crop_mirror_normalize pairs become one operator
    engine.py     Engine: one task per stage, channels, shutdown, the consumer side
    stages.py     Stage (the interface every stage implements), SourceStage, ComputeStage, run_chain
    work.py       Work: one batch in flight; EndOfEpoch and StageFailure markers
    channel.py    bounded channel with statistics
    arena.py      batch arrays that host operators write into in place
    loop_thread.py  a background event loop for synchronous callers
    stats.py, trace.py, nvtx.py  counters, Chrome trace, NVTX ranges
"""
