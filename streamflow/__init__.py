"""streamflow: async streaming data loading and preprocessing, DALI-style.

Define a pipeline with ``@pipeline_def`` and ``fn.*`` operators, then iterate
it with ``async for`` (async code), ``pipe.iter()`` (plain loops) or
``pipe.run()`` (one batch). See ``docs/architecture.md`` for how it runs.
"""

import typing as _typing

from . import errors, fn, io, math, types
from .errors import (
    DecodeError,
    PipelineClosedError,
    PipelineDefinitionError,
    PipelineError,
    ReadError,
    SampleError,
    StreamflowError,
)
from .graph import DataNode
from .ops.external_source import BatchInfo, SampleInfo
from .pipeline import CpuFallbackWarning, Pipeline, PipelineState, pipeline_def
from .stats import PipelineStats
from .subscript import newaxis
from .tensor import Batch, TensorList

if _typing.TYPE_CHECKING:  # loaded on first use (__getattr__ below)
    from . import dynamic as dynamic
    from . import experimental as experimental

__version__ = "0.1.0"

__all__ = [
    "Batch",
    "BatchInfo",
    "CpuFallbackWarning",
    "DataNode",
    "DecodeError",
    "Pipeline",
    "PipelineClosedError",
    "PipelineDefinitionError",
    "PipelineError",
    "PipelineState",
    "PipelineStats",
    "ReadError",
    "SampleError",
    "SampleInfo",
    "StreamflowError",
    "TensorList",
    "__version__",
    "errors",
    "fn",
    "io",
    "math",
    "newaxis",
    "pipeline_def",
    "types",
]


def __getattr__(name: str) -> _typing.Any:
    # Dynamic mode (and DALI's streamflow.experimental.dynamic) loads on first use: `import streamflow` stays light.
    if name in ("dynamic", "experimental"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
