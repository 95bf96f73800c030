"""``decoders.numpy`` against DALI 2.4's CPU operator on encoded real arrays (exact), plus what it
reads beyond DALI (Fortran order, big-endian, format 2.0) and its per-sample errors."""

from __future__ import annotations

import io

import numpy as np
import pytest
from dali_reference.breadth_cases import DECODERS_NUMPY, check
from helpers import run_arrays, run_batch

from streamflow import fn, types


@pytest.mark.parametrize("case", DECODERS_NUMPY, ids=lambda c: c.name)
def test_decoders_numpy_matches_dali(case) -> None:
    check("decoders_numpy", case, error_names=("decoders.numpy",))


def _npy(array: np.ndarray, version: tuple[int, int] | None = None) -> np.ndarray:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=version)
    return np.frombuffer(buf.getvalue(), np.uint8)


def test_beyond_dali_fortran_big_endian_version_2() -> None:
    a = np.arange(30, dtype=np.float32).reshape(5, 6) / 3
    encoded = [_npy(np.asfortranarray(a)), _npy(a.astype(">i4")), _npy(a, (2, 0)), _npy(a, (3, 0))]
    out = run_arrays(encoded, lambda x: fn.decoders.numpy(x))[0]
    assert np.array_equal(out[0], a) and out[0].flags.c_contiguous
    assert out[1].dtype == np.dtype("int32") and np.array_equal(out[1], a.astype(np.int32))
    assert np.array_equal(out[2], a) and np.array_equal(out[3], a)


def test_dtype_conversion_saturates() -> None:
    out = run_arrays([_npy(np.array([-3.5, 2.5, 300.0], np.float64))],
                     lambda x: fn.decoders.numpy(x, dtype=types.UINT8))[0][0]
    assert out.tolist() == [0, 3, 255]


def test_bad_sample_is_skipped_with_its_reason() -> None:
    good = _npy(np.ones((2, 2), np.int16))
    truncated = good[:-3]
    pickled = np.frombuffer(b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
                            + b" " * 54 + b"\n" + b"\x00" * 8, np.uint8)
    batch = run_batch([good, truncated, pickled, good], lambda x: fn.decoders.numpy(x), on_error="skip")
    assert len(batch[0]) == 2  # external_source cannot re-read: the two bad rows leave the batch
    with pytest.raises(Exception, match="truncated|lying header"):
        run_batch([truncated], lambda x: fn.decoders.numpy(x))
    with pytest.raises(Exception, match="descr|numeric dtype"):
        run_batch([pickled], lambda x: fn.decoders.numpy(x))
