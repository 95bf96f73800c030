"""``decoders.inflate``: DALI 2.4 runs it only on the GPU (nvCOMP), so there is no recorded DALI output;
checked by round trips through the reference compressors (``lz4.block.compress(store_size=False)``:
raw LZ4 blocks as nvCOMP writes them; ``zlib`` raw deflate) on a real photo and a real MRI volume,
exact. The DALI semantics of chunks (offsets, sizes, the sequence axis and layout) follow DALI's
documentation."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from dali_reference.geometry_cases import photo, volume
from helpers import assert_same_outputs, make_chunk, run_arrays

from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.decoders.inflate import Inflate

lz4_block = pytest.importorskip("lz4.block")


def _lz4(data: np.ndarray) -> bytes:
    return lz4_block.compress(np.ascontiguousarray(data).tobytes(), store_size=False)


def _deflate(data: np.ndarray) -> bytes:
    co = zlib.compressobj(wbits=-15)
    return co.compress(np.ascontiguousarray(data).tobytes()) + co.flush()


def test_one_chunk_lz4_photo() -> None:
    img = photo("chelsea.png", 2)
    out = run_arrays([np.frombuffer(_lz4(img), np.uint8)],
                     lambda x: fn.decoders.inflate(x, shape=list(img.shape), layout="HWC"))[0][0]
    assert np.array_equal(out, img)


@pytest.mark.parametrize("how", ["sizes", "offsets", "both"])
@pytest.mark.parametrize("algorithm", ["LZ4", "DEFLATE"])
def test_sequence_of_chunks(how, algorithm) -> None:
    vol = volume()[:, :, :, 0]  # 25 slices of 41 x 33 int16
    enc = _lz4 if algorithm == "LZ4" else _deflate
    parts = [enc(s) for s in vol]
    sizes = np.array([len(p) for p in parts], np.int32)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32)
    kw = {"sizes": dict(chunk_sizes=sizes.tolist()), "offsets": dict(chunk_offsets=offsets.tolist()),
          "both": dict(chunk_sizes=sizes.tolist(), chunk_offsets=offsets.tolist())}[how]
    data = np.frombuffer(b"".join(parts), np.uint8)
    out = run_arrays([data], lambda x: (fn.decoders.inflate(x, shape=[41, 33], dtype=types.INT16, layout="HW",
                                                            algorithm=algorithm, **kw),
                                        fn.get_property(fn.decoders.inflate(x, shape=[41, 33], dtype=types.INT16,
                                                                            layout="HW", algorithm=algorithm, **kw),
                                                        key="layout")))
    assert np.array_equal(out[0][0], vol)
    assert bytes(out[1][0]) == b"FHW"


def test_per_sample_shapes_and_sizes() -> None:
    a, b = photo("coffee.png", 5), photo("camera.png", 6)
    data = [np.frombuffer(_lz4(a), np.uint8), np.frombuffer(_lz4(b[:10]) + _lz4(b[10:20]), np.uint8)]
    shapes = [np.array(a.shape, np.int32), np.array([10, b.shape[1]], np.int32)]
    sizes = [np.array([len(_lz4(a))], np.int32), np.array([len(_lz4(b[:10])), len(_lz4(b[10:20]))], np.int32)]
    out = run_arrays(data, lambda x, s, c: fn.decoders.inflate(x, shape=s, chunk_sizes=c), s=shapes, c=sizes)[0]
    assert np.array_equal(out[0][0], a) and np.array_equal(out[1], b[:20].reshape(2, 10, -1))


def test_wrong_size_and_corrupt_data_fail_the_sample() -> None:
    img = photo("chelsea.png", 4)
    good = np.frombuffer(_lz4(img), np.uint8)
    with pytest.raises(Exception, match="decompressed to|ask for|LZ4"):
        run_arrays([good], lambda x: fn.decoders.inflate(x, shape=[3, 3]))
    with pytest.raises(Exception, match="LZ4"):
        run_arrays([np.frombuffer(b"\xff" * 40, np.uint8)], lambda x: fn.decoders.inflate(x, shape=[3, 3]))
    with pytest.raises(Exception, match="outside the sample"):
        run_arrays([good], lambda x: fn.decoders.inflate(x, shape=[3], chunk_offsets=[0, 10 ** 6]))
    with pytest.raises(PipelineDefinitionError, match="algorithm"):
        run_arrays([good], lambda x: fn.decoders.inflate(x, shape=[3], algorithm="zstd"))


def test_gpu_inflate_equals_cpu(kernel_ctx) -> None:
    from streamflow.gpu.ops import find_impl

    vol = volume()[:4, :, :, 0]
    data = [np.frombuffer(b"".join(_lz4(s) for s in vol), np.uint8)]
    op = Inflate(algorithm="LZ4", shape=(41, 33), dtype=np.dtype(np.int16), chunk_offsets=None,
                 chunk_sizes=[len(_lz4(s)) for s in vol], sequence=True, layout="FHW")
    want = op.run(make_chunk(data))[0]
    with kernel_ctx.activate():
        got = find_impl(op)(op, make_chunk(kernel_ctx.to_device(data)), kernel_ctx)[0]
    assert_same_outputs([kernel_ctx.to_host(g) for g in got], want, "inflate")
