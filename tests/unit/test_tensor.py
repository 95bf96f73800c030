"""TensorList: dense and ragged batches, access, interop."""

from __future__ import annotations

import numpy as np
import pytest

from streamflow import TensorList, types


def test_dense_batch() -> None:
    tl = TensorList.from_samples([np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)], layout="HW")
    assert tl.is_dense_tensor() and len(tl) == 2 and tl.shape() == [(2, 3), (2, 3)]
    assert tl.dtype is types.FLOAT and tl.layout == "HW"
    assert tl.as_tensor().shape == (2, 2, 3) and np.shares_memory(tl.at(0), tl.as_tensor())
    assert np.asarray(tl).shape == (2, 2, 3) and tl.as_array() is tl.as_tensor()
    assert np.from_dlpack(tl).shape == (2, 2, 3)
    assert tl.as_cpu() is tl


def test_ragged_batch() -> None:
    tl = TensorList.from_samples([np.ones((2, 3)), np.ones((4, 3))])
    assert not tl.is_dense_tensor() and tl.shape() == [(2, 3), (4, 3)]
    assert [s.shape for s in tl] == [(2, 3), (4, 3)]
    with pytest.raises(ValueError, match="ragged"):
        tl.as_tensor()
    with pytest.raises(AttributeError):
        _ = tl.__cuda_array_interface__


def test_host_batches_are_64_byte_aligned() -> None:
    for n in (1, 3, 7):
        tl = TensorList.from_samples([np.full((5, 3), i, np.uint8) for i in range(n)])
        assert tl.as_tensor().ctypes.data % 64 == 0
        assert [int(s[0, 0]) for s in tl] == list(range(n))


def test_dali_layout_method_and_printed_values() -> None:
    """DALI: ``tl.layout()`` is a method and ``print(tl)`` shows the samples' values."""
    tl = TensorList(np.arange(6, dtype=np.int32).reshape(2, 3), "A")
    assert tl.layout() == "A" and tl.layout == "A" and type(tl.layout()) is str
    text = str(tl)
    assert "[[0 1 2],\n    [3 4 5]]" in text and "num_samples=2" in text and "shape=[(3,), (3,)]" in text
    assert "TensorList(2 samples" in repr(tl)  # repr stays short
    ragged = str(TensorList([np.zeros((1, 2), np.uint8), np.array([7], np.uint8)]))
    assert "[7]" in ragged and "shape=[(1, 2), (1,)]" in ragged
def test_backend_tensor_list_classes_for_isinstance() -> None:
    """DALI's tutorials test ``isinstance(out, backend.TensorListGPU)`` before ``out.as_cpu()``."""
    import numpy as np

    from streamflow import backend
    from streamflow.tensor import TensorList

    cpu = TensorList(np.zeros((2, 3), np.uint8))
    assert isinstance(cpu, backend.TensorListCPU) and not isinstance(cpu, backend.TensorListGPU)
    assert not isinstance(np.zeros(3), backend.TensorListCPU)


def test_dali_tensors_module_isinstance_checks() -> None:
    """``from nvidia.dali import tensors``: a pipeline output's samples are ``TensorCPU``s, the output a
    ``TensorListCPU`` (DALI code branching on them runs unchanged)."""
    from streamflow import tensors

    out = TensorList([np.zeros((2, 2), np.uint8), np.ones((3, 2), np.uint8)])
    assert isinstance(out, tensors.TensorListCPU) and not isinstance(out, tensors.TensorListGPU)
    assert all(isinstance(s, tensors.TensorCPU) and not isinstance(s, tensors.TensorGPU) for s in out)
    assert isinstance(out[1], tensors.TensorCPU) and not isinstance([1], tensors.TensorCPU)

    class FakeDeviceArray:
        __cuda_array_interface__: dict = {}

    assert isinstance(FakeDeviceArray(), tensors.TensorGPU) and not isinstance(FakeDeviceArray(), tensors.TensorCPU)
