"""``Tensor`` and ``Batch``: dynamic mode's results, and its constructors (DALI's ``ndd.tensor`` ...).

Arithmetic (``batch * 2 + 1``, ``t > 0``) and per-sample slicing
(``batch.slice[:, 10:20]``, bounds may be batches) run the pipeline's own
operators through ``invoke.call``, with DALI's type promotion; plain
``tensor[1:3]`` slices the array itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import DataNode, expression
from ..tensor import TensorList
from ..types import parse_dtype
from .data import BatchBase, Origin, TensorBase, to_host, to_sample
from .executor import Value
from .invoke import call, given

__all__ = ["Batch", "Tensor", "as_batch", "as_tensor", "batch", "tensor", "wrap_result"]


def _subscript(data: DataNode, key: Any) -> DataNode:
    return data[key]


def _arith(op: str, *operands: Any) -> Any:
    return wrap_result(call(expression, (op, *operands), {}, label=f"arithmetic {op}"))


class _Arithmetic:
    """Element-wise operators on dynamic data: each runs the pipeline's expression operator."""

    __slots__ = ()

    def __add__(self, other: Any) -> Any:
        return _arith("add", self, other)

    def __radd__(self, other: Any) -> Any:
        return _arith("add", other, self)

    def __sub__(self, other: Any) -> Any:
        return _arith("sub", self, other)

    def __rsub__(self, other: Any) -> Any:
        return _arith("sub", other, self)

    def __mul__(self, other: Any) -> Any:
        return _arith("mul", self, other)

    def __rmul__(self, other: Any) -> Any:
        return _arith("mul", other, self)

    def __truediv__(self, other: Any) -> Any:
        return _arith("truediv", self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _arith("truediv", other, self)

    def __floordiv__(self, other: Any) -> Any:
        return _arith("floordiv", self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return _arith("floordiv", other, self)

    def __mod__(self, other: Any) -> Any:
        return _arith("mod", self, other)

    def __rmod__(self, other: Any) -> Any:
        return _arith("mod", other, self)

    def __pow__(self, other: Any) -> Any:
        return _arith("pow", self, other)

    def __rpow__(self, other: Any) -> Any:
        return _arith("pow", other, self)

    def __neg__(self) -> Any:
        return _arith("neg", self)

    def __pos__(self) -> Any:
        return _arith("pos", self)

    def __and__(self, other: Any) -> Any:
        return _arith("and", self, other)

    def __rand__(self, other: Any) -> Any:
        return _arith("and", other, self)

    def __or__(self, other: Any) -> Any:
        return _arith("or", self, other)

    def __ror__(self, other: Any) -> Any:
        return _arith("or", other, self)

    def __xor__(self, other: Any) -> Any:
        return _arith("xor", self, other)

    def __rxor__(self, other: Any) -> Any:
        return _arith("xor", other, self)

    def __lt__(self, other: Any) -> Any:
        return _arith("lt", self, other)

    def __le__(self, other: Any) -> Any:
        return _arith("le", self, other)

    def __gt__(self, other: Any) -> Any:
        return _arith("gt", self, other)

    def __ge__(self, other: Any) -> Any:
        return _arith("ge", self, other)

    def __eq__(self, other: Any) -> Any:
        return _arith("eq", self, other)

    def __ne__(self, other: Any) -> Any:
        return _arith("ne", self, other)

    __hash__ = object.__hash__


class Tensor(_Arithmetic, TensorBase):
    """One sample in dynamic mode (DALI's ``ndd.Tensor``): ``np.asarray(t)``, ``torch.as_tensor(t)``, ``t.gpu()``."""

    __slots__ = ()

    def __getitem__(self, key: Any) -> Tensor:
        """numpy indexing of the sample (a view); the layout is kept only for a full slice."""
        out = self.array[key]
        return Tensor(out, self.layout if out.ndim == self.array.ndim else "")


class _Samples:
    """``batch.tensors``: ``[i]`` is sample i (a ``Tensor``); a slice or list of indices is a ``Batch``."""

    __slots__ = ("_batch",)

    def __init__(self, batch: Batch) -> None:
        self._batch = batch

    def __len__(self) -> int:
        return len(self._batch)

    def __getitem__(self, index: Any) -> Any:
        b = self._batch
        if isinstance(index, (int, np.integer)):
            n = len(b)
            if not -n <= int(index) < n:
                raise IndexError(f"sample {index} of a batch of {n}")
            return Tensor(b.storage.at(int(index) % n), b.layout)
        rows = list(range(len(b)))[index] if isinstance(index, slice) else [int(i) for i in index]
        return Batch(TensorList([b.storage.at(r) for r in rows], b.layout, b.device), b.origin.select(rows))

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))


class _Slicer:
    """``batch.slice[...]``: the same index inside every sample (bounds may be batches)."""

    __slots__ = ("_batch",)

    def __init__(self, batch: Batch) -> None:
        self._batch = batch

    def __getitem__(self, key: Any) -> Batch:
        entries = key if isinstance(key, tuple) else (key,)
        wrapped = tuple(_per_sample_bound(e) for e in entries)
        result = wrap_result(call(_subscript, (self._batch, wrapped), {}, label="slice"))
        assert isinstance(result, Batch)
        return result


def _per_sample_bound(entry: Any) -> Any:
    if isinstance(entry, slice):
        return slice(*(_per_sample_bound(v) for v in (entry.start, entry.stop, entry.step)))
    if isinstance(entry, (BatchBase, TensorList)):
        samples = entry.samples() if isinstance(entry, BatchBase) else list(entry)
        return given(Value(samples, "", Origin.fresh(len(samples))), "slice bound")
    if isinstance(entry, TensorBase):
        return to_host(entry.array).item()
    return entry


class Batch(_Arithmetic, BatchBase):
    """A batch in dynamic mode (DALI's ``ndd.Batch``): samples may differ in shape.

    ``batch.tensors[i]`` / ``batch.select(i)`` take samples, ``batch.slice[...]``
    indexes inside every sample; ``np.asarray``, ``torch.as_tensor`` and DLPack
    take dense batches (``batch.torch(pad=True)`` pads ragged ones).
    """

    __slots__ = ()

    @property
    def tensors(self) -> _Samples:
        return _Samples(self)

    def select(self, index: Any) -> Any:
        """Sample ``index`` (a ``Tensor``), or a ``Batch`` of the samples of a slice or list."""
        return self.tensors[index]

    @property
    def slice(self) -> _Slicer:
        return _Slicer(self)

    def __iter__(self) -> Any:
        return iter(self.tensors)

    @staticmethod
    def broadcast(sample: Any, batch_size: int, device: Any = None, dtype: Any = None) -> Batch:
        """``sample`` repeated ``batch_size`` times (one array, shared)."""
        one = tensor(sample, dtype=dtype, device=device)
        return Batch(TensorList([one.array] * batch_size, one.layout, one.device))


# --- constructors ----------------------------------------------------------------------------------


def _convert(array: Any, dtype: Any, device: Any, copy: bool) -> Any:
    if dtype is not None:
        target = parse_dtype(dtype).numpy
        if array.dtype != target:
            array, copy = array.astype(target), False
    if copy:
        array = array.copy()
    if device is not None:
        array = Tensor(array).to_device(device).array
    return array


def tensor(data: Any, dtype: Any = None, device: Any = None, layout: str | None = None) -> Tensor:
    """A new tensor with a copy of ``data`` (array-like, a ``Tensor``, or a dense ``Batch``)."""
    return as_tensor(data, dtype=dtype, device=device, layout=layout, copy=True)


def as_tensor(data: Any, dtype: Any = None, device: Any = None, layout: str | None = None,
              pad: bool = False, copy: bool = False) -> Tensor:
    """``data`` as a tensor, without a copy when possible.

    A ``Batch`` becomes one ``(N, ...)`` tensor (``pad=True`` pads samples of
    different shapes with zeros).
    """
    if isinstance(data, BatchBase):
        array, base_layout = data.dense(pad=pad), data.layout
        base_layout = "N" + base_layout if base_layout else ""
    else:
        array = to_sample(data, "as_tensor")
        base_layout = data.layout if isinstance(data, TensorBase) else ""
    return Tensor(_convert(array, dtype, device, copy), layout if layout is not None else base_layout)


def batch(data: Any, dtype: Any = None, device: Any = None, layout: str | None = None) -> Batch:
    """A new batch with copies of the samples of ``data``."""
    return as_batch(data, dtype=dtype, device=device, layout=layout, copy=True)


def as_batch(data: Any, dtype: Any = None, device: Any = None, layout: str | None = None,
             copy: bool = False) -> Batch:
    """``data`` as a batch, without copies when possible.

    ``data``: a ``Batch``, a ``TensorList``, a list of samples (array-like),
    or one array whose first axis is the batch.
    """
    origin = None
    if isinstance(data, BatchBase):
        samples, base_layout, origin = data.samples(), data.layout, data.origin
    elif isinstance(data, TensorList):
        samples, base_layout = [data.at(i) for i in range(len(data))], data.layout
    elif isinstance(data, (list, tuple)):
        samples = [to_sample(s, "as_batch") for s in data]
        layouts = {s.layout for s in data if isinstance(s, TensorBase)}
        base_layout = layouts.pop() if len(layouts) == 1 else ""
    else:
        whole = to_sample(data, "as_batch")
        samples = list(whole)
        base_layout = data.layout[1:] if isinstance(data, TensorBase) else ""
    samples = [_convert(s, dtype, device, copy) for s in samples]
    return Batch.from_samples(samples, layout if layout is not None else base_layout, origin)


def wrap_result(result: Any) -> Any:
    """An ``invoke.call`` result with every ``Value`` made a ``Tensor`` (one sample) or a ``Batch``."""
    if isinstance(result, Value):
        if result.single:
            return Tensor(result.samples[0], result.layout)
        return Batch.from_samples(result.samples, result.layout, result.origin)
    if isinstance(result, (tuple, list)):
        return type(result)(wrap_result(r) for r in result)
    return result

