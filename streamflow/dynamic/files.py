"""``imread``: read and decode image files at once (DALI's ``ndd.imread``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..fn import decoders as _decoders
from .namespace import dynamic_function
from .tensors import Tensor

__all__ = ["imread"]

_decode = dynamic_function(_decoders.image, __name__, "image", "decoders.image")


def _path(value: Any) -> Path:
    if isinstance(value, (str, Path)):
        return Path(value)
    return Path(np.asarray(value, dtype=np.uint8).tobytes().decode())  # a path as encoded bytes


def _read(value: Any) -> bytes:
    file = _path(value)
    try:
        return file.read_bytes()
    except OSError as err:
        raise FileNotFoundError(f"imread: cannot read {file}: {err.strerror or err}") from None


def imread(filepaths: Any, /, *, device: str = "cpu", **kwargs: Any) -> Any:
    """Read and decode image files: a path gives a ``Tensor``, a list of paths a ``Batch``.

    A ``Tensor`` / ``Batch`` of encoded path bytes is read the same way;
    ``kwargs`` are ``decoders.image``'s (``output_type``, ``dtype``, ...).
    """
    if isinstance(filepaths, (str, Path, Tensor)):
        return _decode(_read(filepaths), device=device, **kwargs)
    return _decode([_read(p) for p in filepaths], device=device, **kwargs)
