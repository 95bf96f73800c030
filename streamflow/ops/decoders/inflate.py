"""``decoders.inflate`` (and DALI's deprecated ``experimental.inflate``): decompress chunks, as DALI 2.4.

Each input sample is a 1-D uint8 array holding one compressed chunk, or
several chunks that decompress to the same ``shape`` and ``dtype``:

* no ``chunk_offsets``/``chunk_sizes``: the sample is one chunk; the output
  has ``shape``.
* ``chunk_offsets`` and/or ``chunk_sizes`` (per sample): the chunks start at
  the offsets (default: packed from 0) and have the sizes (default: up to the
  next offset, the last one to the end); the output is ``(chunks, *shape)``
  and its layout is ``sequence_axis_name + layout`` (when ``layout`` is given).

``algorithm="LZ4"`` (DALI's only one): raw LZ4 blocks, as nvCOMP writes them
(``lz4.block.compress(data, store_size=False)``), decoded with liblz4 (the
``lz4`` package: ``pip install 'streamflow[compression]'``). ``"DEFLATE"``
(beyond DALI 2.4): raw deflate streams (RFC 1951, ``zlib`` with ``wbits=-15``),
what nvCOMP's deflate writes. Every chunk must decompress to exactly
``prod(shape) * itemsize`` bytes, otherwise its sample fails naming the chunk
(DALI checks sizes only with ``check_output_size``).

DALI runs the operator only on the GPU (nvCOMP); here it runs on the CPU, and
GPU inputs go through the host (``gpu/ops/inflate.py``).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ...errors import MissingDependencyError, PipelineDefinitionError, SampleError
from ...graph import DataNode, add_node, split_arguments
from ...operator import Chunk, Operator
from ...types import DataType, Device
from ..arguments import fn_function
from ..cast import parse_output_dtype

__all__ = ["ALGORITHMS", "Inflate", "inflate", "inflate_chunk"]

ALGORITHMS = ("LZ4", "DEFLATE")


def inflate_chunk(data: bytes, algorithm: str, nbytes: int) -> bytes:
    """``data`` decompressed with ``algorithm``; it must give exactly ``nbytes`` bytes."""
    if algorithm == "LZ4":
        try:
            import lz4.block
        except ImportError as exc:
            raise MissingDependencyError("lz4", "compression", "decoders.inflate (LZ4)") from exc
        try:
            out = lz4.block.decompress(data, uncompressed_size=nbytes)
        except lz4.block.LZ4BlockError as err:
            raise SampleError(f"decoders.inflate: not a valid LZ4 block of {nbytes} bytes ({err})") from None
    else:
        inflater = zlib.decompressobj(wbits=-15)
        try:
            out = inflater.decompress(data, nbytes + 1)
        except zlib.error as err:
            raise SampleError(f"decoders.inflate: not a valid deflate stream ({err})") from None
    if len(out) != nbytes:
        raise SampleError(f"decoders.inflate: a chunk decompressed to {len(out)} bytes, the shape and dtype "
                          f"ask for {nbytes}")
    return out


def _ints(value: Any) -> list[int] | None:
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


class Inflate(Operator):
    """Decompresses each sample's chunk(s) to ``shape`` x ``dtype``."""

    name: ClassVar[str] = "decoders.inflate"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"shape", "chunk_offsets", "chunk_sizes"})

    def __init__(self, *, algorithm: str, shape: tuple[int, ...] | None, dtype: np.dtype,
                 chunk_offsets: list[int] | None, chunk_sizes: list[int] | None, sequence: bool, layout: str,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.algorithm = algorithm
        self.shape, self.dtype = shape, dtype
        self.chunk_offsets, self.chunk_sizes = chunk_offsets, chunk_sizes
        self.sequence = sequence
        self._layout = layout

    def chunks(self, chunk: Chunk, row: int, size: int) -> list[tuple[int, int]] | None:
        """(offset, size) of each chunk of ``row`` (``None``: the whole sample is one chunk)."""
        offsets = _ints(chunk.arg("chunk_offsets", row, self.chunk_offsets))
        sizes = _ints(chunk.arg("chunk_sizes", row, self.chunk_sizes))
        if not self.sequence:
            return None
        if offsets is None:
            offsets = [int(v) for v in np.concatenate([[0], np.cumsum(sizes)[:-1]])] if sizes else []
        if sizes is None:
            ends = offsets[1:] + [size]
            sizes = [e - o for o, e in zip(offsets, ends)]
        if len(offsets) != len(sizes):
            raise SampleError(f"decoders.inflate: {len(offsets)} chunk offsets but {len(sizes)} chunk sizes")
        for o, s in zip(offsets, sizes):
            if o < 0 or s < 0 or o + s > size:
                raise SampleError(f"decoders.inflate: the chunk at offset {o} of {s} bytes is outside the "
                                  f"sample of {size} bytes")
        return list(zip(offsets, sizes))

    def decode(self, chunk: Chunk, row: int, data: Any) -> np.ndarray:
        """The decompressed sample of ``row`` (host bytes in, host array out)."""
        raw = np.asarray(data)
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise SampleError(f"decoders.inflate: expected 1-D uint8 compressed bytes, got {raw.dtype} of "
                              f"shape {raw.shape}")
        shape = _ints(chunk.arg("shape", row, self.shape))
        if shape is None or any(s < 0 for s in shape):
            raise SampleError(f"decoders.inflate: shape must be non-negative extents, got {shape}")
        nbytes = int(np.prod(shape)) * self.dtype.itemsize
        buf = raw.tobytes()
        parts = self.chunks(chunk, row, len(buf))
        if parts is None:
            return np.frombuffer(inflate_chunk(buf, self.algorithm, nbytes), self.dtype).reshape(shape).copy()
        out = np.empty((len(parts), *shape), dtype=self.dtype)
        flat = out.reshape(len(parts), -1).view(np.uint8)
        for k, (o, s) in enumerate(parts):
            try:
                flat[k] = np.frombuffer(inflate_chunk(buf[o:o + s], self.algorithm, nbytes), np.uint8)
            except SampleError as err:
                raise SampleError(f"chunk {k} (offset {o}, {s} bytes): {err}") from None
        return out

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, data: self.decode(chunk, row, data))]

    def layout(self, index: int) -> str:
        return self._layout


@fn_function()
def inflate(
    input: DataNode,
    *,
    shape: int | Sequence[int] | DataNode,
    dtype: DataType | str = DataType.UINT8,
    algorithm: str = "LZ4",
    chunk_offsets: int | Sequence[int] | DataNode | None = None,
    chunk_sizes: int | Sequence[int] | DataNode | None = None,
    layout: str = "",
    sequence_axis_name: str = "F",
    check_output_size: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Decompress each sample (one chunk, or several chunks stacked on a new outer axis).

    Args:
        input: 1-D uint8 compressed bytes per sample.
        shape: the shape of one decompressed chunk (may be per sample).
        dtype: the type of the decompressed data (default UINT8).
        algorithm: ``"LZ4"`` (raw LZ4 blocks, DALI's) or ``"DEFLATE"`` (raw deflate).
        chunk_offsets: where the chunks start in the sample (may be per sample).
        chunk_sizes: the chunks' compressed sizes (may be per sample).
        layout: the layout of one decompressed chunk.
        sequence_axis_name: the name of the chunks' axis in the layout (default ``"F"``).
        check_output_size: accepted; sizes are always checked.
    """
    algo = str(algorithm).upper()
    if algo not in ALGORITHMS:
        raise PipelineDefinitionError(f"decoders.inflate: algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    constants, per_sample = split_arguments(
        {"shape": shape, "chunk_offsets": chunk_offsets, "chunk_sizes": chunk_sizes})
    sequence = chunk_offsets is not None or chunk_sizes is not None
    if len(sequence_axis_name) != 1:
        raise PipelineDefinitionError(
            f"decoders.inflate: sequence_axis_name must be one letter, got {sequence_axis_name!r}")
    fixed_shape = _ints(constants.get("shape"))
    if fixed_shape is not None and layout and len(layout) != len(fixed_shape):
        raise PipelineDefinitionError(
            f"decoders.inflate: layout {layout!r} does not fit the {len(fixed_shape)}-D shape {fixed_shape}")
    out_layout = (sequence_axis_name + layout) if sequence and layout else layout
    op = Inflate(algorithm=algo, shape=None if fixed_shape is None else tuple(fixed_shape),
                 dtype=parse_output_dtype(dtype, "decoders.inflate: dtype"),
                 chunk_offsets=_ints(constants.get("chunk_offsets")), chunk_sizes=_ints(constants.get("chunk_sizes")),
                 sequence=sequence, layout=out_layout, name=name)
    return add_node(op, [input], per_sample, device=device)[0]
