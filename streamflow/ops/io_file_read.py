"""``io.file.read``: read whole files whose paths are pipeline data (UTF-8 bytes, as in DALI).

::

    names = fn.external_source(lambda: [np.frombuffer(p.encode(), np.uint8) for p in batch_paths])
    data = fn.io.file.read(names)          # 1-D uint8 arrays: the files' bytes

Paths may be local or URLs (``s3://``, ``gs://``, ``http(s)://``, read with the
remote module's retries). A file that cannot be read fails its sample with a
``ReadError`` naming it (``on_error="skip"`` works).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, ReadError
from ..graph import DataNode, add_node
from ..io import storage
from ..operator import Chunk, Operator
from .arguments import fn_function

__all__ = ["FileRead", "read"]

IO_TUNING = {
    "dont_use_mmap": "ignored: files are read with read()",
    "use_o_direct": "ignored: reads go through the page cache",
}


def _path(sample: Any) -> str:
    if isinstance(sample, str):
        return sample
    if isinstance(sample, (bytes, bytearray)):
        return bytes(sample).decode("utf-8", "surrogateescape")
    array = np.asarray(sample)
    if array.dtype in (np.uint8, np.int8) and array.ndim == 1:  # DALI takes INT8 bytes too
        return array.tobytes().decode("utf-8", "surrogateescape")
    if array.dtype.kind in "US" and array.ndim == 0:
        return str(array.item() if array.dtype.kind == "U" else array.item().decode())
    raise ReadError(f"io.file.read expects a file path as a 1-D uint8 or int8 array (UTF-8 bytes), got {array.dtype} "
                    f"of shape {array.shape}; encode with np.frombuffer(path.encode(), np.uint8)")


class FileRead(Operator):
    """Reads the file each sample names; outputs its bytes as a 1-D uint8 array."""

    name = "io.file.read"

    def run(self, chunk: Chunk) -> list[list[Any]]:
        out: list[Any] = []
        for row, sample in enumerate(chunk.inputs[0]):
            try:
                path = _path(sample)
                if not path or "\0" in path:
                    raise ReadError(f"not a file path: {path!r}")
                out.append(np.frombuffer(storage.read_whole(path), dtype=np.uint8))
            except ReadError as e:
                chunk.fail(row, e if e.source else ReadError(e.reason, chunk.sources[row]))
                out.append(None)
        return [out]


def _read(filepaths: DataNode, *, device: str | None = None, name: str | None = None) -> DataNode:
    """Read the files named by ``filepaths`` (per sample, a path as 1-D uint8 UTF-8 bytes).

    Args:
        filepaths: per-sample file paths or URLs.
        device: ``"cpu"`` (the only one).
        name: the operator's name.

    Returns:
        Per sample, the file's bytes (1-D uint8).
    """
    if not isinstance(filepaths, DataNode):
        raise PipelineDefinitionError("io.file.read: filepaths must be pipeline data (a DataNode)")
    return add_node(FileRead(name=name), [filepaths], device=device)[0]


read = fn_function(IO_TUNING, label="io.file.read")(_read)  # errors name DALI's operator
read.__name__ = read.__qualname__ = "read"
