"""``get_property``: a property of each sample as a uint8 byte string, as DALI 2.4.

``key="source_info"``: where the sample comes from. For ``readers.file`` with
``file_root`` that is the file's path relative to ``file_root`` (DALI's
"a/rocket.jpg"); other readers give the path they read; samples of
``external_source`` have none (an empty array). The information follows a
sample through the operators that transform it (decoders, resize, ...).

``key="layout"``: the layout name of the input (``b"HWC"``), empty when unknown.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError
from ..graph import DataNode, add_node, input_layout, require_node
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function
from .external_source import ExternalSource
from .readers.sequence import SequenceReader

__all__ = ["KEYS", "GetProperty", "get_property"]

KEYS = ("source_info", "layout")


class GetProperty(Operator):
    """Per sample, the bytes of the property ``key`` (uint8, 1-D)."""

    name: ClassVar[str] = "get_property"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, key: str, *, layout: str = "", root: str | None = None, no_source: bool = False,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.key = key
        self.in_layout = layout
        self.root = root
        self.no_source = no_source

    def value(self, chunk: Chunk, row: int) -> np.ndarray:
        """The property of ``row`` as uint8 bytes (host)."""
        if self.key == "layout":
            text = self.in_layout
        elif self.no_source:
            text = ""
        else:
            text = chunk.sources[row] or ""
            if self.root is not None and text.startswith(self.root.rstrip(os.sep) + os.sep):
                text = os.path.relpath(text, self.root)
        return np.frombuffer(os.fsencode(text), dtype=np.uint8).copy()

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [[self.value(chunk, row) for row in range(len(chunk))]]


def _origin(node: DataNode) -> Operator:
    """The operator at the start of ``node``'s chain of first inputs (its source)."""
    while node.producer.inputs:
        node = node.producer.inputs[0]
    return node.producer.op


@fn_function()
def get_property(input: DataNode, *, key: str, device: str | Device | None = None,
                 name: str | None = None) -> DataNode:
    """A property of each sample as bytes: ``key="source_info"`` (the file it came from) or ``"layout"``."""
    if key not in KEYS:
        raise PipelineDefinitionError(f"get_property: unsupported property key {key!r}; use one of {KEYS}")
    node = require_node(input, "get_property")
    origin = _origin(node)
    root = getattr(origin, "file_root", None)
    op = GetProperty(key, layout=input_layout(node, "get_property"), root=root if isinstance(root, str) else None,
                     no_source=isinstance(origin, (ExternalSource, SequenceReader)), name=name)
    return add_node(op, [node], device=device)[0]
