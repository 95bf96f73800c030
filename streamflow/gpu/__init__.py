"""GPU execution: the ``mixed`` and ``gpu`` stages, their kernels and streams.

    stage.py      GpuStage: the engine's Stage interface for mixed/gpu, one stream per stage
    streams.py    streams, events, awaiting an event without blocking the loop, pinned staging
    context.py    GpuContext: what a stage's GPU implementations share (stream, staging, launches)
    resample.py   resize geometry shared by the resize and fused implementations
    kernels.py    the CUDA C sources and their loader
    ops/          the GPU implementation of each operator, registered by class

cupy is imported only when a GPU stage runs, never by importing this package.
"""
