"""Dynamic mode's inputs and results: arrays of every kind in, Tensors and Batches out, array protocols."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import DECODER_FILES, rand_image

import streamflow as sf
import streamflow.dynamic as ndd
from streamflow import fn
from streamflow.codecs import ImageDecoder

IMG = rand_image(12, 17, seed=4)


def test_one_array_in_one_tensor_out() -> None:
    out = ndd.flip(IMG, horizontal=1)
    assert isinstance(out, ndd.Tensor)
    assert out.shape == IMG.shape and out.dtype == ndd.uint8 and out.layout == "HWC"
    np.testing.assert_array_equal(np.asarray(out), IMG[:, ::-1])


def test_list_in_batch_out_with_ragged_samples() -> None:
    small = IMG[:5, :7]
    out = ndd.flip([IMG, small], vertical=1, horizontal=0)
    assert isinstance(out, ndd.Batch) and out.batch_size == 2 and len(out) == 2
    assert out.shape == [IMG.shape, small.shape]
    np.testing.assert_array_equal(np.asarray(out.tensors[1]), small[::-1])
    np.testing.assert_array_equal(np.asarray(out.select(0)), IMG[::-1])
    with pytest.raises(ValueError, match="ragged"):
        np.asarray(out)  # samples of different shapes are not one array
    padded = out.torch(pad=True)
    assert tuple(padded.shape) == (2, *IMG.shape)
    np.testing.assert_array_equal(padded[1, :5, :7].numpy(), small[::-1])
    assert int(padded[1, 5:].abs().sum()) == 0


def test_batch_cannot_be_indexed_but_says_how() -> None:
    out = ndd.as_batch([IMG, IMG])
    with pytest.raises(TypeError, match=r"batch.tensors\[i\]"):
        out[0]
    assert isinstance(out.tensors[0:1], ndd.Batch) and len(out.tensors[[1, 0]]) == 2


def test_bytes_for_decoders_and_decoded_like_the_codec() -> None:
    data = DECODER_FILES[0].read_bytes()
    one = ndd.decoders.image(data)
    assert isinstance(one, ndd.Tensor) and one.layout == "HWC"
    np.testing.assert_array_equal(np.asarray(one), ImageDecoder().decode(np.frombuffer(data, np.uint8)))
    two = ndd.decoders.image([data, DECODER_FILES[1].read_bytes()])
    assert isinstance(two, ndd.Batch) and two.batch_size == 2


def test_torch_in_and_out_without_copies() -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    t = ndd.cast(x, dtype="float32")  # a torch CPU tensor comes in through DLPack
    assert np.shares_memory(np.asarray(ndd.as_tensor(x)), x.numpy())
    y = torch.as_tensor(t)  # and goes out through DLPack
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert np.shares_memory(t.torch().numpy(), np.asarray(t))
    b = ndd.as_batch(x)  # the first axis is the batch
    assert b.batch_size == 2 and b.shape == [(3, 4), (3, 4)]
    assert torch.equal(torch.as_tensor(b), x) and torch.equal(torch.from_dlpack(b), x)
    grad = torch.ones(3, requires_grad=True)
    np.testing.assert_array_equal(np.asarray(ndd.cast(grad, dtype="int32")), [1, 1, 1])


def test_jax_arrays_in() -> None:
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(ndd.cast(x, dtype="int16")), np.arange(6).reshape(2, 3))


def test_tensor_list_from_a_pipeline_in() -> None:
    @sf.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        return fn.external_source([[IMG, IMG[:4]]], layout="HWC")

    with pipe() as p:
        (column,) = p.run()
    out = ndd.flip(column, horizontal=1)
    assert isinstance(out, ndd.Batch) and out.layout == "HWC"
    np.testing.assert_array_equal(np.asarray(out.tensors[1]), IMG[:4, ::-1])
    assert isinstance(out.as_tensor_list(), sf.TensorList)


def test_constructors_copy_or_wrap() -> None:
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    wrapped, copied = ndd.as_tensor(a), ndd.tensor(a)
    assert np.shares_memory(np.asarray(wrapped), a) and not np.shares_memory(np.asarray(copied), a)
    assert ndd.tensor(a, dtype=ndd.float32).dtype == ndd.float32
    b = ndd.batch([a, a[:1]], layout="HW")
    assert b.layout == "HW" and not np.shares_memory(np.asarray(b.tensors[0]), a)
    dense = ndd.as_tensor(ndd.as_batch([a, a]))
    assert dense.shape == (2, 2, 3)
    padded = ndd.as_tensor(ndd.as_batch([a, a[:1]]), pad=True)
    assert padded.shape == (2, 2, 3) and int(np.asarray(padded)[1, 1].sum()) == 0
    t = ndd.tensor(np.arange(10))
    assert np.asarray(t[2:5]).tolist() == [2, 3, 4] and t[3].item() == 3
    assert ndd.Batch.broadcast(a, 3).batch_size == 3


def test_arithmetic_and_per_sample_slicing_use_the_pipeline_rules() -> None:
    b = ndd.as_batch([np.full((2, 3), 250, np.uint8), np.full((4, 3), 10, np.uint8)])
    s = b + b  # uint8 + uint8 wraps, as in pipelines (DALI's type rules)
    assert s.dtype == ndd.uint8 and np.asarray(s.tensors[0])[0, 0] == 244
    f = b / 2
    assert f.dtype == ndd.float32 and np.asarray(f.tensors[1])[0, 0] == 5.0
    assert np.asarray(ndd.math.max(b, 100).tensors[1]).max() == 100
    assert (b > 100).dtype == ndd.bool
    cols = b.slice[:, 1]
    assert cols.shape == [(2,), (4,)]
    starts = ndd.as_batch([np.int64(0), np.int64(2)])
    tails = b.slice[starts:]
    assert tails.shape == [(2, 3), (2, 3)]


def test_results_carry_array_protocols() -> None:
    out = ndd.resize([IMG, IMG], size=(6, 8))
    arr = np.asarray(out)
    assert arr.shape == (2, 6, 8, 3)
    assert out.__dlpack_device__()[0] == 1  # the host
    with pytest.raises(AttributeError, match="gpu"):
        out.__cuda_array_interface__  # noqa: B018
    assert "Batch(2 samples" in repr(out) and "Tensor(" in repr(out.tensors[0])
    assert out.cpu() is out and out.evaluate() is out


def test_bad_input_is_named() -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="flip: input 0: a sample must be an array"):
        ndd.flip(object())
    with pytest.raises(sf.PipelineDefinitionError, match="different batch sizes"):
        ndd.cat([IMG, IMG], [IMG], axis=0)


@pytest.mark.gpu
def test_gpu_results_move_and_export() -> None:
    cupy = pytest.importorskip("cupy")
    g = ndd.flip([IMG, IMG], horizontal=1, device="gpu")
    assert g.device is sf.types.Device.GPU
    assert isinstance(g.dense(), cupy.ndarray)
    np.testing.assert_array_equal(np.asarray(g.cpu()), np.stack([IMG[:, ::-1]] * 2))
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        assert torch.as_tensor(g, device="cuda").is_cuda
    back = ndd.as_tensor(IMG).gpu().cpu()
    np.testing.assert_array_equal(np.asarray(back), IMG)
