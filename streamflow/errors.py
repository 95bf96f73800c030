"""The exception tree of streamflow.

::

    StreamflowError
    ├── PipelineDefinitionError (+ ValueError)  the graph or an argument is wrong
    ├── DeviceUnavailableError                  a GPU was asked for and there is none
    ├── MissingDependencyError (+ ImportError)  an optional package is not installed
    ├── PipelineClosedError                     used after close() (closed by you)
    ├── SampleError                             one sample failed (names its file)
    │   ├── DecodeError                         the bytes are not a decodable image
    │   └── ReadError                           the file could not be read
    ├── PipelineError                           a stage failed (broken from outside);
    │                                           names stage, operator and sample file
    └── OverloadedError                         a bounded queue refused new work

A ``SampleError`` is what operators raise for one bad sample; under
``on_error="raise"`` the engine wraps it into a ``PipelineError`` that carries
the stage and operator, under ``on_error="skip"`` it is counted and the
sample is replaced.
"""

from __future__ import annotations

import os

__all__ = [
    "DecodeError",
    "DeviceUnavailableError",
    "MissingDependencyError",
    "OverloadedError",
    "PipelineClosedError",
    "PipelineDefinitionError",
    "PipelineError",
    "ReadError",
    "SampleError",
    "StreamflowError",
]


def display_source(source: str) -> str:
    """``source`` made printable: undecodable bytes of a file name (kept by Python as
    lone surrogates) are shown as ``\\xff`` escapes instead of breaking ``print``."""
    try:
        source.encode("utf-8")
        return source
    except UnicodeEncodeError:
        return os.fsencode(source).decode("utf-8", "backslashreplace")


class StreamflowError(Exception):
    """Base class of every error streamflow raises on purpose."""


class PipelineDefinitionError(StreamflowError, ValueError):
    """The pipeline graph or an operator argument is invalid."""


class DeviceUnavailableError(StreamflowError, RuntimeError):
    """A GPU or mixed operator was requested on a machine that cannot run it."""


class MissingDependencyError(StreamflowError, ImportError):
    """An optional dependency is not installed; the message names the extra."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the package {package!r}, which is not installed; "
            f"install it with: pip install 'streamflow[{extra}]'"
        )
        self.package = package
        self.extra = extra


class PipelineClosedError(StreamflowError, RuntimeError):
    """The pipeline was closed by its owner and cannot be used again."""


class SampleError(StreamflowError):
    """One sample could not be processed.

    Attributes:
        source: the sample's source (a file path, or a description such as
            ``"external_source[12]"``), or ``None`` when unknown.
        reason: what went wrong, in words.
    """

    def __init__(self, reason: str, source: str | None = None) -> None:
        self.reason = reason
        self.source = source
        where = f"{display_source(source)}: " if source else ""
        super().__init__(f"{where}{reason}")


class DecodeError(SampleError):
    """The bytes of a sample are not an image the decoder can decode."""


class ReadError(SampleError):
    """The file of a sample could not be read (missing, permissions, I/O)."""


class PipelineError(StreamflowError, RuntimeError):
    """A stage of a running pipeline failed.

    The message names the stage, the operator and, when the failure belongs
    to one sample, the sample's source file. The original exception is the
    ``__cause__``.
    """

    def __init__(
        self,
        message: str,
        *,
        stage: str | None = None,
        operator: str | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__(message)
        self.stage = stage
        self.operator = operator
        self.source = source


class OverloadedError(StreamflowError, RuntimeError):
    """A bounded queue is full and the caller asked not to wait."""
