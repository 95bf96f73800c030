"""Dynamic mode: every ``fn`` operator called on real data, at once (DALI's ``nvidia.dali.experimental.dynamic``).

::

    import streamflow.dynamic as ndd        # or: import streamflow.experimental.dynamic as ndd

    images = ndd.decoders.image([jpeg_bytes_1, jpeg_bytes_2])     # a Batch
    small = ndd.resize(images, size=(224, 224))
    flips = ndd.random.coin_flip(batch_size=2, rng=ndd.random.RNG(seed=1))
    out = ndd.flip(small, horizontal=flips)
    torch_batch = torch.as_tensor(out)                              # or out.torch(), np.asarray(out)

    reader = ndd.readers.File(file_root="data/train", random_shuffle=True)
    for jpegs, labels in reader.next_epoch(batch_size=32):
        ...

    resized = await ndd.aio.resize(image, size=256)                 # servers: off the event loop

Each function is the ``fn`` function of the same name run on its arguments:
the same argument checks, operator and implementation as in a pipeline, and
the same random values for the same seed and position (``random.RNG``).
Inputs: numpy, torch, cupy or JAX arrays (DLPack), ``bytes`` (encoded
images), ``Tensor``s (one sample), ``Batch``es, ``TensorList``s or lists of
samples (a batch). See ``docs/dynamic.md``.
"""

from __future__ import annotations

import sys

from .. import fn as _fn
from .. import math as _math
from ..types import DataType, Device, ImageType, InterpType
from . import namespace as _namespace
from . import rng as _rng
from .executor import EvalMode, get_num_threads, set_num_threads
from .files import imread
from .reader import Reader
from .tensors import Batch, Tensor, as_batch, as_tensor, batch, tensor

__all__ = [
    "Batch",
    "DataType",
    "Device",
    "EvalMode",
    "ImageType",
    "InterpType",
    "Reader",
    "Tensor",
    "as_batch",
    "as_tensor",
    "batch",
    "get_num_threads",
    "imread",
    "set_num_threads",
    "tensor",
]

# DALI's dtype names: ndd.uint8, ndd.float32, ...
for _member in DataType:
    setattr(sys.modules[__name__], _member.value, _member)
    __all__.append(_member.value)


def _build() -> None:
    this = sys.modules[__name__]
    _namespace.populate(this, _fn)
    maths = _namespace.populate_namespace(this, "math", _math)
    random = this.random  # type: ignore[attr-defined]
    for name in ("RNG", "get_default_rng", "set_seed"):
        setattr(random, name, getattr(_rng, name))
        random.__all__.append(name)
    aio = _namespace.new_namespace(this, "aio", "Async twins of every dynamic function: ``await aio.resize(...)``.")
    _namespace.populate(aio, _fn, asynchronous=True)
    _namespace.populate(_namespace.new_namespace(aio, "math", maths.__doc__ or ""), _math, asynchronous=True)


_build()


def __getattr__(name: str) -> object:
    # ndd.pytorch (torchdata nodes) imports torch: only on first use, as DALI's does
    if name == "pytorch":
        import importlib

        return importlib.import_module(f"{__name__}.pytorch")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
